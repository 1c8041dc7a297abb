package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// The tamper tests edit a closed ledger file with plain bbolt, the way an
// attacker or a broken disk would, then reopen it and check that Verify names
// the first bad sequence number and what is wrong there. The bucket and key
// names are spelled out rather than taken from store.go: they are the on-disk
// format, and a change to them should fail here.
//
//	events                 key seq (8 bytes BE)  value: stored event
//	merkle / {level byte}  key index (8 bytes BE) value: 32-byte node hash
//	meta                   key "head"            value: seq (8 BE) ‖ hash (32)

const tamperSize = 21 // levels 0..4, a ragged right border

// tamperLedger writes n events to a new ledger, closes it, and returns the
// file's path and the records as appended.
func tamperLedger(t *testing.T, n int) (string, []ledger.Record) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs := make([]ledger.Record, 0, n)
	for i := range n {
		err := l.Update(func(tx *Tx) error {
			r, err := tx.Append(ledger.Event{
				Type: "test.appended", Version: 1, Actor: "A-0001",
				Subjects: []string{fmt.Sprintf("T-%04d", i)},
				Payload:  []byte{0xa5, 'h', 'e', 'l', 'l', 'o'},
			})
			r.Raw = append([]byte(nil), r.Raw...) // Raw is valid only in the transaction
			recs = append(recs, r)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return path, recs
}

// editFile opens the closed ledger with plain bbolt and runs fn in one write
// transaction.
func editFile(t *testing.T, path string, fn func(btx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatalf("tamper: %v", err)
	}
}

func key(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func eventsOf(btx *bolt.Tx) *bolt.Bucket { return btx.Bucket([]byte("events")) }

func levelOf(btx *bolt.Tx, level byte) *bolt.Bucket {
	return btx.Bucket([]byte("merkle")).Bucket([]byte{level})
}

// flipByte flips the low bit of byte i of the stored event at seq.
func flipByte(seq uint64, i int) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error {
		v := append([]byte(nil), eventsOf(btx).Get(key(seq))...)
		if i < 0 {
			i += len(v)
		}
		v[i] ^= 1
		return eventsOf(btx).Put(key(seq), v)
	}
}

func swapEvents(a, b uint64) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error {
		ev := eventsOf(btx)
		va := append([]byte(nil), ev.Get(key(a))...)
		vb := append([]byte(nil), ev.Get(key(b))...)
		return errors.Join(ev.Put(key(a), vb), ev.Put(key(b), va))
	}
}

func deleteEvent(seq uint64) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error { return eventsOf(btx).Delete(key(seq)) }
}

func flipNode(level byte, index uint64) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error {
		b := levelOf(btx, level)
		v := append([]byte(nil), b.Get(key(index))...)
		if len(v) != 32 {
			return fmt.Errorf("no node %d/%d", level, index)
		}
		v[7] ^= 0x80
		return b.Put(key(index), v)
	}
}

func deleteNode(level byte, index uint64) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error { return levelOf(btx, level).Delete(key(index)) }
}

func both(a, b func(*bolt.Tx) error) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error { return errors.Join(a(btx), b(btx)) }
}

func putHead(seq uint64, h ledger.Hash) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error {
		return btx.Bucket([]byte("meta")).Put([]byte("head"), append(key(seq), h[:]...))
	}
}

// verifyFile reopens the ledger and verifies it, in chunks small enough that
// the checks cross chunk boundaries.
func verifyFile(t *testing.T, path string) (VerifyReport, error) {
	t.Helper()
	l, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Verify(context.Background(), VerifyOptions{Chunk: 4})
}

// wantIntegrity checks that err is an *ledger.IntegrityError at seq with problem.
func wantIntegrity(t *testing.T, err error, seq uint64, problem ledger.Problem) *ledger.IntegrityError {
	t.Helper()
	var ie *ledger.IntegrityError
	if !errors.As(err, &ie) {
		t.Fatalf("Verify: %v, want *ledger.IntegrityError at seq %d (%s)", err, seq, problem)
	}
	if ie.Seq != seq || ie.Problem != problem {
		t.Fatalf("Verify: %v; want seq %d: %s", ie, seq, problem)
	}
	return ie
}

func TestTamperVerifyReportsFirstBadSeq(t *testing.T) {
	const n = tamperSize
	tests := []struct {
		name    string
		tamper  func(*bolt.Tx) error
		seq     uint64
		problem ledger.Problem
	}{
		// One byte of a stored event. The payload's last byte, then the
		// seq it claims, then its prev hash, then the envelope's header.
		{"payload byte of event 7", flipByte(7, -35), 7, ledger.ProblemContent},
		{"payload byte of first event", flipByte(1, -35), 1, ledger.ProblemContent},
		{"payload byte of last event", flipByte(n, -35), n, ledger.ProblemContent},
		{"claimed seq of event 7", flipByte(7, 2), 7, ledger.ProblemSeq},
		{"prev hash of event 7", flipByte(7, -1), 7, ledger.ProblemLink},
		{"envelope header of event 7", flipByte(7, 0), 7, ledger.ProblemMalformed},
		{"event 7 replaced by a well-formed impostor", func(btx *bolt.Tx) error {
			e, err := ledger.DecodeEvent(eventsOf(btx).Get(key(7)))
			if err != nil {
				return err
			}
			e.Actor = "A-mallory"
			raw, err := e.Encode()
			if err != nil {
				return err
			}
			return eventsOf(btx).Put(key(7), raw)
		}, 7, ledger.ProblemContent},

		{"swap events 5 and 12", swapEvents(5, 12), 5, ledger.ProblemSeq},
		{"swap the last two events", swapEvents(n-1, n), n - 1, ledger.ProblemSeq},

		{"delete the last event", deleteEvent(n), n, ledger.ProblemGap},
		{"delete event 9", deleteEvent(9), 9, ledger.ProblemGap},

		// A changed event is only told apart from a changed stored leaf by
		// the next event's link; when that event is gone or unreadable the
		// change must still be reported, at its own seq.
		{"payload of event 7, event 8 deleted", both(flipByte(7, -35), deleteEvent(8)), 7, ledger.ProblemContent},
		{"payload of event 20, last event deleted", both(flipByte(n-1, -35), deleteEvent(n)), n - 1, ledger.ProblemContent},
		{"payload of event 7, event 8 malformed", both(flipByte(7, -35), flipByte(8, 0)), 7, ledger.ProblemContent},

		// Node (level L, index i) is reported at the seq that completed it,
		// (i+1)<<L.
		{"flip stored leaf of event 7", flipNode(0, 6), 7, ledger.ProblemNode},
		{"flip node 1/3", flipNode(1, 3), 8, ledger.ProblemNode},
		{"flip node 2/1", flipNode(2, 1), 8, ledger.ProblemNode},
		{"flip node 3/1", flipNode(3, 1), 16, ledger.ProblemNode},
		{"flip root node 4/0", flipNode(4, 0), 16, ledger.ProblemNode},
		{"flip node 2/4 on the right border", flipNode(2, 4), 20, ledger.ProblemNode},
		{"delete node 1/5", deleteNode(1, 5), 12, ledger.ProblemNode},
		{"delete stored leaf of last event", deleteNode(0, n-1), n, ledger.ProblemNode},

		{"head hash rewritten", func(btx *bolt.Tx) error { return putHead(n, ledger.Hash{1})(btx) }, n, ledger.ProblemHead},
		{"head claims one more event", func(btx *bolt.Tx) error {
			v := btx.Bucket([]byte("meta")).Get([]byte("head"))
			var h ledger.Hash
			copy(h[:], v[8:])
			return putHead(n+1, h)(btx)
		}, n + 1, ledger.ProblemGap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := tamperLedger(t, n)
			if _, err := verifyFile(t, path); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			editFile(t, path, tt.tamper)
			_, err := verifyFile(t, path)
			wantIntegrity(t, err, tt.seq, tt.problem)
		})
	}
}

// TestTamperEveryByte flips each byte of one stored event in turn: whichever
// byte it is, Verify reports that event's seq.
func TestTamperEveryByte(t *testing.T) {
	const seq = 7
	path, recs := tamperLedger(t, tamperSize)
	size := len(recs[seq-1].Raw)
	step := 1
	if testing.Short() {
		step = 7
	}
	for i := 0; i < size; i += step {
		editFile(t, path, flipByte(seq, i))
		_, err := verifyFile(t, path)
		var ie *ledger.IntegrityError
		if !errors.As(err, &ie) || ie.Seq != seq {
			t.Errorf("byte %d of %d flipped: Verify: %v, want an ledger.IntegrityError at seq %d", i, size, err, seq)
		}
		editFile(t, path, flipByte(seq, i)) // flip it back
	}
	if _, err := verifyFile(t, path); err != nil {
		t.Fatalf("after restoring every byte: %v", err)
	}
}

// TestTamperVerifyEventsReportsEveryProblem: Tx.VerifyEvents goes on past
// the first problem, and over any sub-range [begin, end) it reports exactly
// the problems the whole-log check reports with seq in that range — in
// particular the events just inside either end are judged as in the whole
// log.
func TestTamperVerifyEventsReportsEveryProblem(t *testing.T) {
	path, _ := tamperLedger(t, tamperSize)
	editFile(t, path, func(btx *bolt.Tx) error {
		return errors.Join(
			flipByte(3, -35)(btx),  // bytes of 3 changed
			flipNode(0, 5)(btx),    // stored leaf of 6 changed
			swapEvents(9, 10)(btx), // 9 and 10 swapped
			flipByte(13, -1)(btx),  // prev of 13 changed
			flipByte(16, -35)(btx), // bytes of 16 changed, and then
			flipByte(17, 0)(btx),   // 17 is not an envelope
		)
	})
	l, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type found struct {
		Seq     uint64
		Problem ledger.Problem
	}
	check := func(begin, end uint64) (got []found) {
		t.Helper()
		var checked uint64
		err := l.View(func(tx *Tx) error {
			var err error
			checked, err = tx.VerifyEvents(begin, end, func(ie *ledger.IntegrityError) error {
				got = append(got, found{ie.Seq, ie.Problem})
				return nil
			})
			return err
		})
		if err != nil {
			t.Fatalf("VerifyEvents(%d, %d): %v", begin, end, err)
		}
		if checked != end-begin {
			t.Errorf("VerifyEvents(%d, %d) checked %d events, want %d", begin, end, checked, end-begin)
		}
		return got
	}
	const (
		C = ledger.ProblemContent
		L = ledger.ProblemLink
		N = ledger.ProblemNode
		S = ledger.ProblemSeq
		M = ledger.ProblemMalformed
	)
	all := check(1, tamperSize+1)
	want := []found{
		{3, C}, {4, L},
		{6, N},
		{9, S}, {9, C}, {10, S}, {10, C}, {11, L},
		{13, L}, {13, C}, {14, L},
		{16, C}, {17, M}, {17, C}, {18, L},
	}
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("VerifyEvents over the whole log found\n%v, want\n%v", all, want)
	}
	for begin := uint64(1); begin <= tamperSize+1; begin++ {
		for end := begin; end <= tamperSize+1; end++ {
			var want []found
			for _, f := range all {
				if begin <= f.Seq && f.Seq < end {
					want = append(want, f)
				}
			}
			if got := check(begin, end); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("VerifyEvents(%d, %d) found %v, want %v", begin, end, got, want)
			}
		}
	}
}

// truncate removes the last event the way a careful attacker would: the
// event, the Merkle nodes its append completed, and the head, rewritten to
// the event before. Nothing inside the file is then inconsistent.
func truncate(t *testing.T, path string, recs []ledger.Record) {
	t.Helper()
	last := recs[len(recs)-1]
	editFile(t, path, func(btx *bolt.Tx) error {
		get := func(level uint, index uint64) (ledger.Hash, error) {
			var h ledger.Hash
			v := levelOf(btx, byte(level)).Get(key(index))
			if len(v) != len(h) {
				return h, ErrNotFound
			}
			copy(h[:], v)
			return h, nil
		}
		nodes, err := ledger.AppendNodes(last.Seq-1, last.Hash, get)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if err := levelOf(btx, byte(n.Level)).Delete(key(n.Index)); err != nil {
				return err
			}
		}
		if err := eventsOf(btx).Delete(key(last.Seq)); err != nil {
			return err
		}
		return putHead(last.Seq-1, recs[len(recs)-2].Hash)(btx)
	})
}

// TestTamperTruncationWithFixedUpHead: a truncation that also rewrites the
// head and removes the Merkle nodes passes Verify — the file alone cannot
// tell — but anyone holding a (size, root) from before catches it: the log
// can no longer produce that size, and a log grown back to that size has
// another root, which no consistency proof can bridge.
func TestTamperTruncationWithFixedUpHead(t *testing.T) {
	const n = tamperSize
	path, recs := tamperLedger(t, n)
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// What an auditor kept: the tree head at n, and one at an earlier size.
	var rootN, root13 ledger.Hash
	err = l.View(func(tx *Tx) error {
		var err error
		rootN, err = tx.Root(n)
		if err == nil {
			root13, err = tx.Root(13)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	truncate(t, path, recs)

	rep, err := l.Verify(context.Background(), VerifyOptions{Chunk: 4})
	if err != nil {
		t.Fatalf("Verify after a consistent truncation: %v (it cannot see it, and should pass)", err)
	}
	if rep.Size != n-1 {
		t.Fatalf("size after truncation %d, want %d", rep.Size, n-1)
	}
	err = l.View(func(tx *Tx) error {
		if _, err := tx.Root(n); !errors.Is(err, ErrNotFound) {
			t.Errorf("ledger.Root(%d) of a truncated log: %v, want ErrNotFound", n, err)
		}
		if _, err := tx.ConsistencyProof(n, tx.Head().Seq); err == nil {
			t.Errorf("ledger.ConsistencyProof(%d, %d) of a truncated log succeeded", n, tx.Head().Seq)
		}
		// The earlier tree head is still consistent: the log was cut, not
		// rewritten, below it.
		proof, err := tx.ConsistencyProof(13, n-1)
		if err != nil {
			return err
		}
		return ledger.VerifyConsistency(13, n-1, root13, rep.Root, proof)
	})
	if err != nil {
		t.Fatal(err)
	}

	// A writer that saw seq n refuses to append to the cut log: it would
	// issue seq n again.
	if err := l.Update(func(tx *Tx) error { return nil }); !errors.Is(err, ErrReplaced) {
		t.Fatalf("a writer that saw seq %d committed to a log cut to %d: %v, want ErrReplaced", n, n-1, err)
	}
	// The attacker, with a store of their own, grows the log back to size n
	// with another event.
	attacker, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()
	var forged ledger.Record
	err = attacker.Update(func(tx *Tx) error {
		var err error
		forged, err = tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "A-mallory", Payload: []byte{0xc0}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err = l.Verify(context.Background(), VerifyOptions{})
	if err != nil || rep.Size != n {
		t.Fatalf("Verify of the regrown log: size %d, %v; want size %d and no error", rep.Size, err, n)
	}
	if rep.Root == rootN {
		t.Fatal("the forged log has the old root")
	}
	err = l.View(func(tx *Tx) error {
		proof, err := tx.ConsistencyProof(n, n)
		if err != nil {
			return err
		}
		if err := ledger.VerifyConsistency(n, n, rootN, rep.Root, proof); !errors.Is(err, ledger.ErrProofInvalid) {
			t.Errorf("VerifyConsistency(old root, forged root): %v, want ledger.ErrProofInvalid", err)
		}
		// The original last event is not in the forged log; its
		// replacement is not in the original one.
		orig := recs[n-1]
		path, err := tx.InclusionProof(n, n)
		if err != nil {
			return err
		}
		if err := ledger.VerifyInclusion(orig.Hash, n-1, n, path, rep.Root); !errors.Is(err, ledger.ErrProofInvalid) {
			t.Errorf("original event %d proved in the forged log: %v", n, err)
		}
		if err := ledger.VerifyInclusion(forged.Hash, n-1, n, path, rootN); !errors.Is(err, ledger.ErrProofInvalid) {
			t.Errorf("forged event %d proved in the original log: %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

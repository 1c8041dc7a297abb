package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
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
//	                       (format 1: levels 0 and up; format 2: 4 and up)
//	merkle                 key (index+1)<<level (8 bytes BE) ‖ level (1 byte)
//	                       value: 32-byte node hash (format 3: levels 4 and up)
//	meta                   key "head"            value: seq (8 BE) ‖ hash (32)

const tamperSize = 21 // levels 0..4, a ragged right border

// formats are the file formats every tamper test runs on.
var formats = []uint64{1, 2, 3}

// eachFormat runs fn as a subtest per file format.
func eachFormat(t *testing.T, fn func(t *testing.T, format uint64)) {
	for _, f := range formats {
		t.Run(fmt.Sprintf("format=%d", f), func(t *testing.T) { fn(t, f) })
	}
}

// tamperLedger writes n events to a new ledger of the given format, closes
// it, and returns the file's path and the records as appended.
func tamperLedger(t *testing.T, n int, format uint64) (string, []ledger.Record) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true, Format: format})
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

// nodeIn returns the bucket and key of node (level, index): in format 3
// the merkle bucket, keyed by the seq completing the node and its level;
// before, the level's sub-bucket, keyed by index.
func nodeIn(btx *bolt.Tx, level byte, index uint64) (*bolt.Bucket, []byte) {
	merkle := btx.Bucket([]byte("merkle"))
	if binary.BigEndian.Uint64(btx.Bucket([]byte("meta")).Get([]byte("format"))) >= 3 {
		return merkle, append(key((index+1)<<level), level)
	}
	return merkle.Bucket([]byte{level}), key(index)
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
		b, k := nodeIn(btx, level, index)
		v := append([]byte(nil), b.Get(k)...)
		if len(v) != 32 {
			return fmt.Errorf("no node %d/%d", level, index)
		}
		v[7] ^= 0x80
		return b.Put(k, v)
	}
}

func deleteNode(level byte, index uint64) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error {
		b, k := nodeIn(btx, level, index)
		if b.Get(k) == nil {
			return fmt.Errorf("no node %d/%d", level, index)
		}
		return b.Delete(k)
	}
}

// swapNodes exchanges the hashes of two stored nodes.
func swapNodes(l1 byte, i1 uint64, l2 byte, i2 uint64) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error {
		b1, k1 := nodeIn(btx, l1, i1)
		b2, k2 := nodeIn(btx, l2, i2)
		v1, v2 := append([]byte(nil), b1.Get(k1)...), append([]byte(nil), b2.Get(k2)...)
		if len(v1) != 32 || len(v2) != 32 {
			return fmt.Errorf("no node %d/%d or %d/%d", l1, i1, l2, i2)
		}
		return errors.Join(b1.Put(k1, v2), b2.Put(k2, v1))
	}
}

func both(a, b func(*bolt.Tx) error) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error { return errors.Join(a(btx), b(btx)) }
}

func putHead(seq uint64, h ledger.Hash) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error {
		return btx.Bucket([]byte("meta")).Put([]byte("head"), append(key(seq), h[:]...))
	}
}

// openPath opens the ledger at path, closed when the test ends.
func openPath(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	l, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// verifyFile reopens the ledger and verifies it, in chunks small enough that
// the checks cross chunk boundaries.
func verifyFile(t *testing.T, path string) (VerifyReport, error) {
	t.Helper()
	l := openPath(t, path, Options{ReadOnly: true})
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

// v2 is what Verify reports on a format-2 or 3 file, where it differs from
// format 1's: no leaves are stored, so an event's bytes are committed to by
// the next event's link (the head, for the last one) and the level-4 node
// over its 16-event group. A changed event whose successor is gone or
// unreadable is then found as the gap or the unreadable event (and, past
// it, the node of its group); a change to the last event's bytes is told
// from a rewritten head by nothing in the file.
type v2 struct {
	seq     uint64
	problem ledger.Problem
}

func TestTamperVerifyReportsFirstBadSeq(t *testing.T) {
	const n = tamperSize
	tests := []struct {
		name    string
		tamper  func(*bolt.Tx) error
		seq     uint64
		problem ledger.Problem
		v2      *v2 // the answer of formats 2 and 3, if another
		v1Only  bool
		v2Only  bool // formats 2 and 3 only
	}{
		// One byte of a stored event. The payload's last byte, then the
		// seq it claims, then its prev hash, then the envelope's header.
		{name: "payload byte of event 7", tamper: flipByte(7, -35), seq: 7, problem: ledger.ProblemContent},
		{name: "payload byte of first event", tamper: flipByte(1, -35), seq: 1, problem: ledger.ProblemContent},
		{name: "payload byte of last event", tamper: flipByte(n, -35), seq: n, problem: ledger.ProblemContent, v2: &v2{n, ledger.ProblemHead}},
		{name: "claimed seq of event 7", tamper: flipByte(7, 2), seq: 7, problem: ledger.ProblemSeq},
		{name: "prev hash of event 7", tamper: flipByte(7, -1), seq: 7, problem: ledger.ProblemLink},
		{name: "envelope header of event 7", tamper: flipByte(7, 0), seq: 7, problem: ledger.ProblemMalformed},
		{name: "event 7 replaced by a well-formed impostor", tamper: func(btx *bolt.Tx) error {
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
		}, seq: 7, problem: ledger.ProblemContent},

		{name: "swap events 5 and 12", tamper: swapEvents(5, 12), seq: 5, problem: ledger.ProblemSeq},
		{name: "swap the last two events", tamper: swapEvents(n-1, n), seq: n - 1, problem: ledger.ProblemSeq},

		{name: "delete the last event", tamper: deleteEvent(n), seq: n, problem: ledger.ProblemGap},
		{name: "delete event 9", tamper: deleteEvent(9), seq: 9, problem: ledger.ProblemGap},

		// A changed event is only told apart from a changed stored leaf by
		// the next event's link; when that event is gone or unreadable the
		// change must still be reported, at its own seq.
		{name: "payload of event 7, event 8 deleted", tamper: both(flipByte(7, -35), deleteEvent(8)), seq: 7, problem: ledger.ProblemContent, v2: &v2{8, ledger.ProblemGap}},
		{name: "payload of event 20, last event deleted", tamper: both(flipByte(n-1, -35), deleteEvent(n)), seq: n - 1, problem: ledger.ProblemContent, v2: &v2{n, ledger.ProblemGap}},
		{name: "payload of event 7, event 8 malformed", tamper: both(flipByte(7, -35), flipByte(8, 0)), seq: 7, problem: ledger.ProblemContent, v2: &v2{8, ledger.ProblemMalformed}},
		// Node (level L, index i) is reported at the seq that completed it,
		// (i+1)<<L.
		{name: "flip stored leaf of event 7", tamper: flipNode(0, 6), seq: 7, problem: ledger.ProblemNode, v1Only: true},
		{name: "flip node 1/3", tamper: flipNode(1, 3), seq: 8, problem: ledger.ProblemNode, v1Only: true},
		{name: "flip node 2/1", tamper: flipNode(2, 1), seq: 8, problem: ledger.ProblemNode, v1Only: true},
		{name: "flip node 3/1", tamper: flipNode(3, 1), seq: 16, problem: ledger.ProblemNode, v1Only: true},
		{name: "flip root node 4/0", tamper: flipNode(4, 0), seq: 16, problem: ledger.ProblemNode},
		{name: "delete node 4/0", tamper: deleteNode(4, 0), seq: 16, problem: ledger.ProblemNode},
		{name: "flip node 2/4 on the right border", tamper: flipNode(2, 4), seq: 20, problem: ledger.ProblemNode, v1Only: true},
		{name: "delete node 1/5", tamper: deleteNode(1, 5), seq: 12, problem: ledger.ProblemNode, v1Only: true},
		{name: "delete stored leaf of last event", tamper: deleteNode(0, n-1), seq: n, problem: ledger.ProblemNode, v1Only: true},
		// A node over events whose bytes changed too: the event is
		// reported, not the node.
		{name: "payload of event 16 and node 4/0", tamper: both(flipByte(16, -35), flipNode(4, 0)), seq: 16, problem: ledger.ProblemContent},

		{name: "head hash rewritten", tamper: func(btx *bolt.Tx) error { return putHead(n, ledger.Hash{1})(btx) }, seq: n, problem: ledger.ProblemHead},
		{name: "head claims one more event", tamper: func(btx *bolt.Tx) error {
			v := btx.Bucket([]byte("meta")).Get([]byte("head"))
			var h ledger.Hash
			copy(h[:], v[8:])
			return putHead(n+1, h)(btx)
		}, seq: n + 1, problem: ledger.ProblemGap},
	}
	eachFormat(t, func(t *testing.T, format uint64) {
		for _, tt := range tests {
			if (tt.v1Only && format != 1) || (tt.v2Only && format < 2) {
				continue
			}
			t.Run(tt.name, func(t *testing.T) {
				path, _ := tamperLedger(t, n, format)
				if _, err := verifyFile(t, path); err != nil {
					t.Fatalf("before tampering: %v", err)
				}
				editFile(t, path, tt.tamper)
				_, err := verifyFile(t, path)
				seq, problem := tt.seq, tt.problem
				if format >= 2 && tt.v2 != nil {
					seq, problem = tt.v2.seq, tt.v2.problem
				}
				wantIntegrity(t, err, seq, problem)
			})
		}
	})
}

// TestTamperVerifyFormat2Nodes tampers with the stored levels of a
// format-2 or 3 file large enough to have three: the lowest (4) is checked
// against the events, the others against the level below. Nodes 4/3, 5/1
// and 6/0 are all completed by event 64 (format 3: adjacent keys).
func TestTamperVerifyFormat2Nodes(t *testing.T) {
	const n = 70 // level 4: 0..3, level 5: 0..1, level 6: 0
	tests := []struct {
		name    string
		tamper  func(*bolt.Tx) error
		seq     uint64
		problem ledger.Problem
	}{
		{"flip node 4/2", flipNode(4, 2), 48, ledger.ProblemNode},
		{"flip node 5/1", flipNode(5, 1), 64, ledger.ProblemNode},
		{"delete node 6/0", deleteNode(6, 0), 64, ledger.ProblemNode},
		{"delete node 4/3", deleteNode(4, 3), 64, ledger.ProblemNode},
		{"payload of event 40, event 41 deleted", both(flipByte(40, -35), deleteEvent(41)), 41, ledger.ProblemGap},
		{"payload of event 47", flipByte(47, -35), 47, ledger.ProblemContent},
		{"nodes 4/3 and 5/1 swapped", swapNodes(4, 3, 5, 1), 64, ledger.ProblemNode},
		{"nodes 5/0 and 5/1 swapped", swapNodes(5, 0, 5, 1), 32, ledger.ProblemNode},
		{"node 4/0 given 4/1's hash", func(btx *bolt.Tx) error {
			b, k := nodeIn(btx, 4, 1)
			b0, k0 := nodeIn(btx, 4, 0)
			return b0.Put(k0, append([]byte(nil), b.Get(k)...))
		}, 16, ledger.ProblemNode},
	}
	for _, f := range []uint64{2, 3} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("format=%d/%s", f, tt.name), func(t *testing.T) {
				path, _ := tamperLedger(t, n, f)
				if _, err := verifyFile(t, path); err != nil {
					t.Fatalf("before tampering: %v", err)
				}
				editFile(t, path, tt.tamper)
				_, err := verifyFile(t, path)
				wantIntegrity(t, err, tt.seq, tt.problem)
			})
		}
	}
}

// TestTamperVerifyFormat3Keys: in a format-3 file Verify walks the merkle
// bucket's keys in order, each the next node the events complete: a key
// added or moved is reported at the seq it names, as a node missing is;
// past the head only nodes may follow (those a writer appends while Verify
// runs), anything else is reported at head+1.
func TestTamperVerifyFormat3Keys(t *testing.T) {
	const n = 70
	node := func(seq uint64, level byte) []byte { return append(key(seq), level) }
	put := func(k []byte) func(*bolt.Tx) error {
		return func(btx *bolt.Tx) error { return btx.Bucket([]byte("merkle")).Put(k, make([]byte, 32)) }
	}
	move := func(from, to []byte) func(*bolt.Tx) error {
		return func(btx *bolt.Tx) error {
			b := btx.Bucket([]byte("merkle"))
			v := append([]byte(nil), b.Get(from)...)
			return errors.Join(b.Delete(from), b.Put(to, v))
		}
	}
	tests := []struct {
		name   string
		tamper func(*bolt.Tx) error
		seq    uint64
	}{
		{"a level-3 node added", put(node(40, 3)), 40},
		{"a node added at a seq that completes none", put(node(50, 4)), 50},
		{"node 6/0 moved to level 7", move(node(64, 6), node(64, 7)), 64},
		{"node 4/1 moved to seq 33", move(node(32, 4), node(33, 4)), 32},
		{"a level-3 node past the head", put(node(80, 3)), n + 1},
		{"a key of 8 bytes", put(key(20)), 20},
		{"a key of 1 byte, first", put([]byte{0}), 16},
		// A key whose first 8 bytes say seq 0 is named at seq 1; the walk
		// stopped only at a key at or past the seq named, and walked the
		// key again for ever (a flipped byte of a merkle leaf page's
		// element, which read its key from zeroed memory: verify spun).
		{"a key of seq 0", put(node(0, 0)), 1},
		{"a key of 8 zero bytes", put(key(0)), 1},
		{"a key of seq 0, level 4", put(node(0, 4)), 1},
		{"a key of 1 byte, last", put([]byte{4}), n + 1},
		{"a key of 10 bytes", put(append(node(16, 4), 0)), 16},
		{"the last node deleted", deleteNode(6, 0), 64},
		{"a stray key at a seq of the log, after its last node", put(node(64, 7)), 64},
		{"a level-0 key after a node past the head", both(put(node(80, 4)), put(node(81, 0))), n + 1},
		{"a key of 1 byte after a node past the head", both(put(node(80, 4)), put([]byte{5})), n + 1},
		{"a node past the head of 31 bytes", func(btx *bolt.Tx) error {
			return btx.Bucket([]byte("merkle")).Put(node(80, 4), make([]byte, 31))
		}, n + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := tamperLedger(t, n, 3)
			if _, err := verifyFile(t, path); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			editFile(t, path, tt.tamper)
			_, err := verifyFile(t, path)
			wantIntegrity(t, err, tt.seq, ledger.ProblemNode)
		})
	}
	// The lowest seq whatever the chunk: a stray key at 20 and a wrong
	// node 4/1 (seq 32), which the pass over the events finds first.
	for _, chunk := range []uint64{1, 4, 4096} {
		t.Run(fmt.Sprintf("stray key and wrong node, chunk %d", chunk), func(t *testing.T) {
			path, _ := tamperLedger(t, n, 3)
			editFile(t, path, both(put(node(20, 0)), put(node(32, 4))))
			l := openPath(t, path, Options{ReadOnly: true})
			_, err := l.Verify(context.Background(), VerifyOptions{Chunk: chunk})
			wantIntegrity(t, err, 20, ledger.ProblemNode)
		})
	}
	// A node past the head is what an append stores while Verify runs.
	path, _ := tamperLedger(t, n, 3)
	editFile(t, path, put(node(80, 4)))
	if _, err := verifyFile(t, path); err != nil {
		t.Fatalf("a node past the head: %v", err)
	}
}

// TestTamperEveryByte flips each byte of one stored event in turn: whichever
// byte it is, Verify reports that event's seq.
func TestTamperEveryByte(t *testing.T) {
	eachFormat(t, testTamperEveryByte)
}

func testTamperEveryByte(t *testing.T, format uint64) {
	const seq = 7
	path, recs := tamperLedger(t, tamperSize, format)
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
//
// Format 2 stores no leaf, and a change to an event is told by the next
// link: event 16's bytes, followed by an unreadable event, are not seen by
// the chain (Verify catches them in the node over events 1..16), and an
// event whose claimed seq is wrong says nothing of the one before.
func TestTamperVerifyEventsReportsEveryProblem(t *testing.T) {
	eachFormat(t, testTamperVerifyEventsReportsEveryProblem)
}

func testTamperVerifyEventsReportsEveryProblem(t *testing.T, format uint64) {
	path, _ := tamperLedger(t, tamperSize, format)
	editFile(t, path, func(btx *bolt.Tx) error {
		var leaf error
		if format == 1 {
			leaf = flipNode(0, 5)(btx) // stored leaf of 6 changed
		}
		return errors.Join(
			flipByte(3, -35)(btx), // bytes of 3 changed
			leaf,
			swapEvents(9, 10)(btx), // 9 and 10 swapped
			flipByte(13, -1)(btx),  // prev of 13 changed
			flipByte(16, -35)(btx), // bytes of 16 changed, and then
			flipByte(17, 0)(btx),   // 17 is not an envelope
		)
	})
	l := openPath(t, path, Options{ReadOnly: true})
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
	if format >= 2 {
		want = []found{
			{3, C}, {4, L},
			{9, S}, {10, S}, {10, C}, {11, L},
			{13, L}, {13, C}, {14, L},
			{17, M}, {17, C}, {18, L},
		}
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
		// The nodes its append completed: those whose last leaf it is, at
		// every level the file stores (format 3: from 4).
		var err error
		for level := byte(0); level < 64 && last.Seq%(1<<level) == 0; level++ {
			if b, k := nodeIn(btx, level, last.Seq>>level-1); b != nil && b.Get(k) != nil {
				err = errors.Join(err, b.Delete(k))
			}
		}
		if err != nil {
			return err
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
	eachFormat(t, func(t *testing.T, format uint64) {
		// 21 completes no stored node of format 2, 16 completes 4/0.
		for _, n := range []int{tamperSize, 16} {
			t.Run(fmt.Sprint("size=", n), func(t *testing.T) { testTruncation(t, uint64(n), format) })
		}
	})
}

func testTruncation(t *testing.T, n uint64, format uint64) {
	path, recs := tamperLedger(t, int(n), format)
	l := openPath(t, path, Options{})
	// What an auditor kept: the tree head at n, and one at an earlier size.
	var rootN, root13 ledger.Hash
	err := l.View(func(tx *Tx) error {
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

// TestVerifyGivesGroups: VerifyOptions.Group is given the root of every
// whole group of 16 events, hashed from the events (the stored node
// edited or not), in order, each just before Each with its last event.
func TestVerifyGivesGroups(t *testing.T) {
	for _, format := range formats {
		if format >= 2 {
			t.Run(fmt.Sprintf("format=%d", format), func(t *testing.T) { testVerifyGivesGroups(t, format) })
		}
	}
}

func testVerifyGivesGroups(t *testing.T, format uint64) {
	const n = 70
	path, recs := tamperLedger(t, n, format)
	editFile(t, path, flipNode(4, 3)) // reported, but not given
	l := openPath(t, path, Options{ReadOnly: true})
	var given []ledger.Hash
	var seqs []uint64
	var last uint64
	_, err := l.Verify(context.Background(), VerifyOptions{Chunk: 5,
		Group: func(level uint, index uint64, root ledger.Hash) {
			if level != 4 || index != uint64(len(given)) || last != (index+1)<<4-1 {
				t.Errorf("group %d/%d given after event %d", level, index, last)
			}
			given = append(given, root)
		},
		Each: func(seq uint64, raw []byte, hash ledger.Hash) error {
			last = seq
			seqs = append(seqs, seq)
			return nil
		},
	})
	wantIntegrity(t, err, 64, ledger.ProblemNode)
	if len(given) != n/16 {
		t.Fatalf("%d groups given, want %d", len(given), n/16)
	}
	for i, got := range given {
		leaves := make([]ledger.Hash, 16)
		for j := range leaves {
			leaves[j] = recs[i*16+j].Hash
		}
		if want := ledger.PerfectRoot(leaves); got != want {
			t.Errorf("group %d: given %x, the events' root %x", i, got, want)
		}
	}
}

// TestTamperHeadForm: a head that is missing while the log holds events,
// of the wrong length, or naming a seq no log reaches is damage that every
// reader reports (ErrDamaged) — not an empty log (a missing head read as
// seq 0 verified "ok: 0 events"), not a verify that never ends (a seq of
// 2^64-1 wrapped its chunk ends to 0) nor a panic in Root (a leaf range
// that wrapped). A head one past the last event stays verify's to report,
// at that seq.
func TestTamperHeadForm(t *testing.T) {
	eachFormat(t, func(t *testing.T, format uint64) {
		for _, c := range []struct {
			name   string
			tamper func(*bolt.Tx) error
		}{
			{"missing", func(btx *bolt.Tx) error { return btx.Bucket([]byte("meta")).Delete([]byte("head")) }},
			{"short", func(btx *bolt.Tx) error { return btx.Bucket([]byte("meta")).Put([]byte("head"), key(40)[:7]) }},
			{"seq 2^64-1", putHead(math.MaxUint64, ledger.Hash{1})},
			{"seq 2^64-2", putHead(math.MaxUint64-1, ledger.Hash{1})},
			{"seq past maxSeq", putHead(maxSeq+1, ledger.Hash{1})},
		} {
			t.Run(c.name, func(t *testing.T) {
				path, _ := tamperLedger(t, 40, format)
				editFile(t, path, c.tamper)
				// Open checks the file's form too: it refuses it, or
				// what reads it does.
				l, err := Open(path, Options{ReadOnly: true})
				if err != nil {
					if !errors.Is(err, ErrDamaged) {
						t.Fatalf("open: %v, want ErrDamaged", err)
					}
					return
				}
				defer l.Close()
				if _, err := l.Verify(context.Background(), VerifyOptions{Chunk: 4}); !errors.Is(err, ErrDamaged) {
					t.Errorf("verify: %v, want ErrDamaged", err)
				}
				err = l.View(func(tx *Tx) error {
					_, err := tx.Root(tx.Head().Seq)
					return err
				})
				if !errors.Is(err, ErrDamaged) {
					t.Errorf("root: %v, want ErrDamaged", err)
				}
			})
		}
		t.Run("one past the last event", func(t *testing.T) {
			path, recs := tamperLedger(t, 40, format)
			editFile(t, path, putHead(41, recs[39].Hash))
			_, err := verifyFile(t, path)
			wantIntegrity(t, err, 41, ledger.ProblemGap)
		})
	})
}

// TestTamperFormatNumber: a format number no logbook writes (0, or a byte
// above the lowest changed), or a known one the merkle bucket's layout
// contradicts, is damage (verify exits 1), naming meta/format and the
// layout; only a number a newer logbook may write is ErrFormat (exit 2),
// which says the layout too. Before, every one but the known formats read
// as ErrFormat, and a known one misread the file.
func TestTamperFormatNumber(t *testing.T) {
	eachFormat(t, func(t *testing.T, format uint64) {
		cases := []struct {
			name   string
			number uint64
			want   error
		}{
			{"zero", 0, ErrDamaged},
			{"high byte changed", format | 1<<56, ErrDamaged},
			{"low byte changed", format ^ 0x5a, ErrFormat},
			{"newer", FormatVersion + 1, ErrFormat},
		}
		for _, other := range formats {
			if other != format {
				cases = append(cases, struct {
					name   string
					number uint64
					want   error
				}{fmt.Sprintf("format %d", other), other, ErrDamaged})
			}
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				path, _ := tamperLedger(t, 40, format)
				editFile(t, path, func(btx *bolt.Tx) error {
					return btx.Bucket([]byte("meta")).Put([]byte("format"), key(c.number))
				})
				_, err := Open(path, Options{ReadOnly: true})
				if !errors.Is(err, c.want) || (c.want == ErrFormat && errors.Is(err, ErrDamaged)) {
					t.Fatalf("open: %v, want %v", err, c.want)
				}
				if want := fmt.Sprintf("merkle bucket is laid out as format %d", format); !strings.Contains(err.Error(), want) {
					t.Errorf("open: %v, does not say %q", err, want)
				}
				if c.want == ErrDamaged && !strings.Contains(err.Error(), "meta/format") {
					t.Errorf("open: %v, does not name meta/format", err)
				}
			})
		}
	})
}

// TestMissingNodeIsDamage: a stored node the log completed that is gone is
// damage to Root and the proofs (ErrDamaged: `logbook root` exits 1), as a
// missing event is; a node past the head is only not found.
func TestMissingNodeIsDamage(t *testing.T) {
	eachFormat(t, func(t *testing.T, format uint64) {
		path, _ := tamperLedger(t, 70, format)
		editFile(t, path, deleteNode(6, 0))
		l := openPath(t, path, Options{ReadOnly: true})
		err := l.View(func(tx *Tx) error {
			if _, err := tx.Root(70); !errors.Is(err, ErrDamaged) {
				t.Errorf("root over a deleted node: %v, want ErrDamaged", err)
			}
			if _, err := tx.InclusionProof(70, 70); !errors.Is(err, ErrDamaged) {
				t.Errorf("proof over a deleted node: %v, want ErrDamaged", err)
			}
			if _, err := tx.Node(6, 1); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrDamaged) {
				t.Errorf("a node past the head: %v, want ErrNotFound only", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestTamperVerifyEventKeys: every key of the events bucket is an event's,
// 1 to the head, and nothing else, whatever the chunk. A key that is not 8
// bytes or seq 0 is a stray key (sequence mismatch) named at the seq its
// first 8 bytes say; an event past the recorded head (one added, or the
// head moved back over it) is a head mismatch after the head. Before,
// Verify sought each chunk's first seq and never looked past the head: such
// keys passed with some chunks, or were reported as the next event missing
// (attack review).
func TestTamperVerifyEventKeys(t *testing.T) {
	const n = 40
	put := func(k []byte) func(*bolt.Tx) error {
		return func(btx *bolt.Tx) error { return eventsOf(btx).Put(k, eventsOf(btx).Get(key(5))) }
	}
	eachFormat(t, func(t *testing.T, format uint64) {
		path, recs := tamperLedger(t, n, format)
		tests := []struct {
			name    string
			tamper  func(*bolt.Tx) error
			seq     uint64
			problem ledger.Problem
		}{
			{"a key of 9 bytes after event 20", put(append(key(20), 0)), 20, ledger.ProblemSeq},
			{"a key of 9 bytes after event 4", put(append(key(4), 0)), 4, ledger.ProblemSeq},
			{"a key of 7 bytes", put(key(5)[1:]), n + 1, ledger.ProblemSeq},
			{"seq 0", put(key(0)), 1, ledger.ProblemSeq},
			{"a key of 1 byte, first", put([]byte{0}), 1, ledger.ProblemSeq},
			{"a key of 9 bytes after the last event", put(append(key(n), 0)), n, ledger.ProblemSeq},
			{"a nested bucket past the events", func(btx *bolt.Tx) error {
				_, err := eventsOf(btx).CreateBucket([]byte("zz"))
				return err
			}, n + 1, ledger.ProblemSeq},
			{"an event past the head", put(key(n + 1)), n + 1, ledger.ProblemHead},
			{"an event far past the head", put(key(1 << 40)), n + 1, ledger.ProblemHead},
			{"the head moved back one event", putHead(n-1, recs[n-2].Hash), n, ledger.ProblemHead},
		}
		for _, tt := range tests {
			for _, chunk := range []uint64{1, 3, 4096} {
				t.Run(fmt.Sprintf("%s, chunk %d", tt.name, chunk), func(t *testing.T) {
					p := filepath.Join(t.TempDir(), "ledger.db")
					raw, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, raw, 0o600); err != nil {
						t.Fatal(err)
					}
					editFile(t, p, tt.tamper)
					l := openPath(t, p, Options{ReadOnly: true})
					_, err = l.Verify(context.Background(), VerifyOptions{Chunk: chunk})
					wantIntegrity(t, err, tt.seq, tt.problem)
					// The chain check of a range that reaches the head
					// (audit_verify_chain) finds it too.
					var got []*ledger.IntegrityError
					err = l.View(func(tx *Tx) error {
						_, err := tx.VerifyEvents(1, tx.Head().Seq+1, func(p *ledger.IntegrityError) error {
							got = append(got, p)
							return nil
						})
						return err
					})
					if err != nil || len(got) == 0 || got[0].Problem != tt.problem {
						t.Errorf("VerifyEvents: %v, %v; want %s", got, err, tt.problem)
					}
				})
			}
		}
	})
}

// TestTamperVerifyLevelKeys: in formats 1 and 2 every key of the merkle
// bucket is the bucket of a level the format stores, and every key of a
// level the index of a node of the log, whatever the chunk; a stray key is
// merkle node wrong at the seq that completes the node it names (the one
// expected where it sorts, if it is not 8 bytes), at most the head + 1.
// Before, the checks sought each node by its index: a key past the head,
// of 7 bytes, in a level format 2 does not store or in a level above the
// tree passed, and a 9-byte key was a missing child at the next node, or
// passed with --chunk 1 (attack review; format 3: TestTamperVerifyFormat3Keys).
func TestTamperVerifyLevelKeys(t *testing.T) {
	const n = 70
	put := func(level byte, k []byte, v []byte) func(*bolt.Tx) error {
		return func(btx *bolt.Tx) error {
			b, err := btx.Bucket([]byte("merkle")).CreateBucketIfNotExists([]byte{level})
			if err != nil {
				return err
			}
			return b.Put(k, v)
		}
	}
	node := make([]byte, 32)
	for _, format := range []uint64{1, 2} {
		tests := []struct {
			name   string
			tamper func(*bolt.Tx) error
			seq    uint64
		}{
			{"a level-4 key of 9 bytes after node 4/0", put(4, append(key(0), 0), node), 16},
			{"a level-4 node past the head", put(4, key(4), node), n + 1},
			{"a level-4 node far past the head", put(4, key(50), node), n + 1},
			{"a level-5 key of 7 bytes", put(5, key(1)[1:], node), n + 1},
			{"a level above the tree", put(9, key(0), node), n + 1},
			{"a value, not a level's bucket", func(btx *bolt.Tx) error { return btx.Bucket([]byte("merkle")).Put([]byte("x"), node) }, n + 1},
			{"a bucket in a level", func(btx *bolt.Tx) error {
				b := btx.Bucket([]byte("merkle")).Bucket([]byte{4})
				_, err := b.CreateBucket(key(9))
				return err
			}, n + 1},
			{"a level-4 node past the head of 31 bytes", put(4, key(4), node[:31]), n + 1},
		}
		if format == 1 {
			tests = append(tests,
				struct {
					name   string
					tamper func(*bolt.Tx) error
					seq    uint64
				}{"a leaf key of 9 bytes", put(0, append(key(5), 0), node), 6},
				struct {
					name   string
					tamper func(*bolt.Tx) error
					seq    uint64
				}{"a leaf past the head", put(0, key(n), node), n + 1})
		} else {
			tests = append(tests, struct {
				name   string
				tamper func(*bolt.Tx) error
				seq    uint64
			}{"a level-2 node, which format 2 does not store", put(2, key(3), node), 16})
		}
		for _, tt := range tests {
			for _, chunk := range []uint64{1, 3, 4096} {
				t.Run(fmt.Sprintf("format=%d/%s, chunk %d", format, tt.name, chunk), func(t *testing.T) {
					path, _ := tamperLedger(t, n, format)
					editFile(t, path, tt.tamper)
					l := openPath(t, path, Options{ReadOnly: true})
					_, err := l.Verify(context.Background(), VerifyOptions{Chunk: chunk})
					wantIntegrity(t, err, tt.seq, ledger.ProblemNode)
				})
			}
		}
	}
}

// A meta page failing its checksum while the other holds: bbolt reads the
// file as of the other one's transaction, a commit earlier, and said
// nothing — one flipped byte of the newer meta page cut the last commit
// off, and Verify said ok on the shorter log. A reader now refuses the
// file as damaged, whichever slot fails (the older slot too: the file is
// not what a writer leaves). So is a meta page whose page id (outside the
// checksum) was changed, and the two swapped: they verified, and the next
// commit would have written over the newer one.
func TestTamperMetaPageChecksum(t *testing.T) {
	path, recs := tamperLedger(t, 5, FormatVersion)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := int(binary.LittleEndian.Uint32(raw[metaPageSize:]))
	newer := 0
	if binary.LittleEndian.Uint64(raw[ps+metaTxidField:]) > binary.LittleEndian.Uint64(raw[metaTxidField:]) {
		newer = 1
	}
	// Offset 0 is the page's id, which the checksum does not cover; -1
	// swaps the two pages (each then in the other's slot).
	for _, slot := range []int{newer, 1 - newer} {
		for _, off := range []int{metaTxidField, metaPgidField, metaSumField, 0, -1} {
			t.Run(fmt.Sprintf("slot=%d,offset=%d", slot, off), func(t *testing.T) {
				b := append([]byte(nil), raw...)
				if off < 0 {
					copy(b[:ps], raw[ps:2*ps])
					copy(b[ps:2*ps], raw[:ps])
				} else {
					b[slot*ps+off] ^= 1
				}
				p := filepath.Join(t.TempDir(), "ledger.db")
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
				l, err := Open(p, Options{ReadOnly: true})
				if err == nil {
					var head ledger.Head
					err = l.View(func(tx *Tx) error { head = tx.Head(); return nil })
					l.Close()
					if err == nil {
						t.Fatalf("read-only open and read of a file whose meta page %d fails its checksum: no error (head %d; the log holds %d)", slot, head.Seq, len(recs))
					}
				}
				if !errors.Is(err, ErrDamaged) {
					t.Fatalf("open: %v, want ErrDamaged", err)
				}
				after, _ := os.ReadFile(p)
				if string(after) != string(b) {
					t.Fatal("the read-only open wrote the file")
				}
			})
		}
	}
}

// TestWriteToCopyOpens: a copy made by bolt's own Tx.WriteTo (its way to
// back a file up) writes the meta page of transaction T in slot 0 and the
// same page with T-1 in slot 1; both name the same tree, so the copy is a
// valid file whatever T is. At an odd T it was refused as meta pages
// swapped (ErrDamaged) by every command.
func TestWriteToCopyOpens(t *testing.T) {
	path, recs := tamperLedger(t, 5, FormatVersion)
	parities := map[int]bool{}
	for range 2 {
		// A transaction that changes nothing (bolt still writes it): the
		// next copy is at the other parity.
		editFile(t, path, func(*bolt.Tx) error { return nil })
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "copy.db")
		var txid int
		err = db.View(func(btx *bolt.Tx) error {
			txid = btx.ID()
			return btx.CopyFile(p, 0o600)
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		l, err := Open(p, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("a WriteTo copy at transaction %d: %v", txid, err)
		}
		var head ledger.Head
		err = l.View(func(tx *Tx) error { head = tx.Head(); return nil })
		l.Close()
		if err != nil || head.Seq != uint64(len(recs)) {
			t.Fatalf("a WriteTo copy at transaction %d: head %d, %v; want %d", txid, head.Seq, err, len(recs))
		}
		parities[txid%2] = true
	}
	if len(parities) != 2 {
		t.Fatalf("copies at transactions of one parity only: %v", parities)
	}
}

// TestStrayBucketIsDamage: verify refuses a top-level bucket logbook never
// writes — the spaces bucket's name with a flipped byte, or another
// program's — as damage. Such a file verified: its projections were only
// "not compared", and the next open folded them anew beside the stray.
func TestStrayBucketIsDamage(t *testing.T) {
	eachFormat(t, func(t *testing.T, format uint64) {
		path, _ := tamperLedger(t, 40, format)
		editFile(t, path, func(btx *bolt.Tx) error {
			b, err := btx.CreateBucket([]byte("s*aces"))
			if err != nil {
				return err
			}
			return b.Put([]byte("k"), []byte("v"))
		})
		_, err := verifyFile(t, path)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), `"s*aces"`) {
			t.Errorf("verify: %v, want ErrDamaged naming the bucket", err)
		}
	})
}

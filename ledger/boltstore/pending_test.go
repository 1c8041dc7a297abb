//go:build linux

package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// keepPending keeps commits pending until something settles them (no
// settling after a quiet spell) for the rest of the test.
func keepPending(t *testing.T) {
	old := settleIdle
	settleIdle = time.Hour
	t.Cleanup(func() { settleIdle = old })
}

// pendingLedger is a journaled ledger (journaled) that keeps commits
// pending (keepPending) and, shared, keeps its session: a slow machine
// ends none, nor its generation, between two calls.
func pendingLedger(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	keepPending(t)
	l, path, _ := journaled(t, opts)
	l.quiet = time.Hour
	return l, path
}

// openStopped opens a copy of img and its journal, what a stopped process
// left, as opts say, in boot (this one if ""): every event it then holds,
// once it has verified, and the copy's path.
func openStopped(t *testing.T, img, boot string, opts Options) (events [][]byte, at string) {
	t.Helper()
	at = filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, img, at)
	copyFile(t, journalPath(img), journalPath(at))
	if boot != "" {
		setBoot(t, boot)
	}
	r, err := Open(at, opts)
	setBoot(t, mustBoot(t))
	if err != nil {
		t.Fatalf("boot %q: open: %v", boot, err)
	}
	defer r.Close()
	events = storedEvents(t, at, r)
	if _, err := r.Verify(context.Background(), VerifyOptions{}); err != nil {
		t.Fatalf("boot %q: verify: %v", boot, err)
	}
	return events, at
}

// fileHolds is how many events the ledger file at path holds by itself:
// read from a copy made without its journal.
func fileHolds(t *testing.T, path string) int {
	t.Helper()
	img := filepath.Join(t.TempDir(), "alone.db")
	copyFile(t, path, img)
	return len(storedEvents(t, img, nil))
}

func pendingModes(t *testing.T, fn func(t *testing.T, hold bool)) {
	for _, hold := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "held"}[hold], func(t *testing.T) { fn(t, hold) })
	}
}

// Commits answered are left pending, bbolt's commit of them to come; a
// read transaction of the Store sees every one of them (it settles them
// first), and so does the file after it.
func TestPendingReadSeesAnswered(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		l, path := pendingLedger(t, Options{Hold: hold})
		appendOne(t, l, 0) // the generation begins
		for i := 1; i <= 5; i++ {
			appendOne(t, l, i)
		}
		if !l.unsettled.Load() {
			t.Fatal("no commit was left pending")
		}
		if got := fileHolds(t, path); got >= 6 {
			t.Fatalf("the file alone holds %d events while commits are pending", got)
		}
		if got := len(storedEvents(t, path, l)); got != 6 {
			t.Fatalf("a read saw %d events, want the 6 answered", got)
		}
		if l.unsettled.Load() {
			t.Error("still pending after a read")
		}
		if got := fileHolds(t, path); got != 6 {
			t.Fatalf("the file alone holds %d events after a read, want 6", got)
		}
	})
}

// Without a new commit for settleIdle, the committer settles what is
// pending by itself: a process killed then leaves its file whole.
func TestPendingSettledWhenQuiet(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		l, path, _ := journaled(t, Options{Hold: hold})
		for i := range 4 {
			appendOne(t, l, i)
		}
		deadline := time.Now().Add(10 * time.Second)
		for l.unsettled.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if l.unsettled.Load() {
			t.Fatal("commits still pending 10 s after the last")
		}
		if got := fileHolds(t, path); got != 4 {
			t.Fatalf("the file alone holds %d events, want 4", got)
		}
	})
}

// A call that fails after commits were left pending rolls back their
// transaction; they are ingested again, and the calls after it commit on
// them: every answered event is kept once, the failed one's not at all.
func TestPendingFailedCallKeepsAnswered(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		l, path := pendingLedger(t, Options{Hold: hold})
		for i := range 3 {
			appendOne(t, l, i)
		}
		failed := errors.New("refused")
		err := l.Update(func(tx *Tx) error {
			if _, err := tx.Append(ledger.Event{Type: "test.failed", Version: 1, Actor: "tester"}); err != nil {
				return err
			}
			return failed
		})
		if !errors.Is(err, failed) {
			t.Fatalf("the failing call: %v", err)
		}
		appendOne(t, l, 3)
		events := storedEvents(t, path, l)
		if len(events) != 4 {
			t.Fatalf("%d events, want 4", len(events))
		}
		for _, raw := range events {
			e, err := ledger.DecodeRecord(raw)
			if err != nil {
				t.Fatal(err)
			}
			if e.Type != "test.appended" {
				t.Errorf("event %d is %s", e.Seq, e.Type)
			}
		}
		if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// A process that stops with commits pending leaves records past its file's
// head: the next writer's open, in this boot as in another, writes the file
// back to the checkpoint and ingests every record's events; a reader's open
// recovers them as a writer (it may write the file). Each holds every
// answered event and verifies.
func TestPendingStopped(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		l, path := pendingLedger(t, Options{Hold: hold})
		for i := range 9 {
			appendOne(t, l, i)
		}
		// What a process killed now leaves: the file as the page cache
		// has it, and its journal.
		img := recoverImageCopy(t, path)
		want := storedEvents(t, path, l)
		if len(want) != 9 {
			t.Fatalf("%d events, want 9", len(want))
		}
		if got := fileHolds(t, img); got >= 9 {
			t.Fatalf("the file alone holds %d events: none was pending", got)
		}
		for _, c := range []struct {
			name, boot string
			opts       Options
		}{{"writer", "", Options{}}, {"reader", "", Options{ReadOnly: true}}, {"another boot", "another-boot", Options{}}} {
			t.Run(c.name, func(t *testing.T) {
				got, at := openStopped(t, img, c.boot, c.opts)
				if len(got) != len(want) {
					t.Fatalf("%d events, want %d", len(got), len(want))
				}
				isPrefix(t, got, want)
				if readHeader(t, at) {
					t.Error("the header still holds")
				}
				if got := fileHolds(t, at); got != len(want) {
					t.Errorf("the file alone holds %d events, want %d", got, len(want))
				}
			})
		}
	})
}

// bbolt's commit of pending commits fails: a read is answered the error,
// not a state without them; the journal's header keeps holding them; once
// commits succeed again, reads see every answered event — the held file's
// Store commits them itself, the shared file's next open recovers them
// from the journal.
func TestPendingSettleFails(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		l, path := pendingLedger(t, Options{Hold: hold})
		for i := range 6 {
			appendOne(t, l, i)
		}
		broken := errors.New("injected commit failure")
		pendingCommit = func(btx *bolt.Tx) error {
			btx.Rollback()
			return broken
		}
		t.Cleanup(func() { pendingCommit = (*bolt.Tx).Commit })
		if err := l.View(func(*Tx) error { return nil }); !errors.Is(err, broken) {
			t.Fatalf("a read while they cannot be committed: %v", err)
		}
		if !readHeader(t, path) {
			t.Fatal("the header no longer holds the commits the file lacks")
		}
		pendingCommit = (*bolt.Tx).Commit
		appendOne(t, l, 6)
		appendOne(t, l, 7)
		if !l.unsettled.Load() {
			t.Error("no commit is left pending once bbolt's commits succeed again")
		}
		got := storedEvents(t, path, l)
		if len(got) != 8 {
			t.Fatalf("%d events, want 8", len(got))
		}
		if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// bbolt's commit of the pending commits fails at the generation's end
// (its 64th record), after reads had settled earlier ones — so pages were
// freed under the pin — and fails again, then succeeds: at every point a
// stop (this boot or another) and the Store's own close leave a ledger
// that opens, verifies and holds every answered event. (Review: the
// generation was let go and the pending commits committed without the
// pin, the header still holding; the next open wrote the checkpoint back
// over reused pages: ErrDamaged.)
func TestPendingSettleFailsAtGenerationEnd(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		l, path := pendingLedger(t, Options{Hold: hold})
		for i := range genCommits - 1 {
			appendOne(t, l, i)
			if i%8 == 7 {
				if err := l.View(func(*Tx) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
		}
		broken := errors.New("injected commit failure")
		// Every commit of them fails until the read has been answered:
		// the generation's end (twice: the next, then its end), the
		// committer's settles on the read's behalf, the read's own.
		// (Counting three failures, a settle the committer made for the
		// waiting read took the third and the read's own succeeded.)
		var failing atomic.Bool
		failing.Store(true)
		type stop struct {
			img      string
			answered int // events answered before it, at least
		}
		var stops []stop
		answered := genCommits - 1
		pendingCommit = func(btx *bolt.Tx) error {
			stops = append(stops, stop{recoverImageCopy(t, path), answered}) // what a stop now leaves
			if failing.Load() {
				btx.Rollback()
				return broken
			}
			err := btx.Commit()
			stops = append(stops, stop{recoverImageCopy(t, path), answered})
			return err
		}
		t.Cleanup(func() { pendingCommit = (*bolt.Tx).Commit })
		appendOne(t, l, genCommits-1) // its generation's end fails to settle
		answered++
		if err := l.View(func(*Tx) error { return nil }); !errors.Is(err, broken) {
			t.Fatalf("a read while they cannot be committed: %v", err)
		}
		failing.Store(false)
		appendOne(t, l, genCommits)
		answered++
		got := storedEvents(t, path, l)
		if len(got) != genCommits+1 {
			t.Fatalf("%d events, want %d", len(got), genCommits+1)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop{recoverImageCopy(t, path), answered})
		pendingCommit = (*bolt.Tx).Commit
		for i, st := range stops {
			t.Run(fmt.Sprint("stop ", i), func(t *testing.T) {
				for _, boot := range []string{"", "another-boot"} {
					if got, _ := openStopped(t, st.img, boot, Options{}); len(got) < st.answered {
						t.Fatalf("boot %q: %d events, want at least the %d answered before it", boot, len(got), st.answered)
					}
				}
			})
		}
	})
}

// bbolt's commit of pending commits reports a failure after it wrote them
// (its meta page written, a sync then failing): the file holds them, and
// the commits after skip them, byte for byte, rather than ingest them
// again at seqs the file holds — which failed every later call.
func TestPendingCommittedDespiteError(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		l, path := pendingLedger(t, Options{Hold: hold})
		for i := range 5 {
			appendOne(t, l, i)
		}
		late := errors.New("injected failure after the commit")
		pendingCommit = func(btx *bolt.Tx) error {
			if err := btx.Commit(); err != nil {
				return err
			}
			return late
		}
		t.Cleanup(func() { pendingCommit = (*bolt.Tx).Commit })
		if err := l.View(func(*Tx) error { return nil }); !errors.Is(err, late) {
			t.Fatalf("read: %v", err)
		}
		pendingCommit = (*bolt.Tx).Commit
		appendOne(t, l, 5)
		if got := len(storedEvents(t, path, l)); got != 6 {
			t.Fatalf("%d events, want 6", got)
		}
		if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// The journal removed (or replaced) while commits are pending: its records
// would be found by no open. The next commit is not left pending, and
// bbolt commits it with those before it.
func TestPendingJournalRemoved(t *testing.T) {
	l, path := pendingLedger(t, Options{Hold: true})
	for i := range 4 {
		appendOne(t, l, i)
	}
	if fileHolds(t, path) >= 4 {
		t.Fatal("none pending")
	}
	if err := os.Remove(journalPath(path)); err != nil {
		t.Fatal(err)
	}
	appendOne(t, l, 4)
	if got := fileHolds(t, path); got != 5 {
		t.Fatalf("the file alone holds %d events, want 5", got)
	}
}

// Headers are written with the magic of journals whose records may hold
// commits the file lacks; an older logbook's, which it never wrote so,
// still decode.
func TestJournalMagic(t *testing.T) {
	h := header{salt: 7, boot: []byte("b"), pageSize: 4096}
	b := h.encode()
	if !bytes.HasPrefix(b, journalMagic[:]) || string(journalMagic[:]) != "lbjourn2" {
		t.Fatalf("header begins %q", b[:8])
	}
	old := append([]byte(nil), b[:headerLen-8]...)
	copy(old, journalMagic1[:])
	old = binary.LittleEndian.AppendUint64(old, xxhash.Sum64(old))
	if got, ok := decodeHeader(old); !ok || got.salt != 7 {
		t.Fatal("an older logbook's header does not decode")
	}
}

// A reader's open that recovers pending commits folds them (Refold) in the
// commit that ingests them: it reads the projections next, which no call
// has caught up (the soak's smoke test: tasks --json, the first open after
// a kill, listed fewer tasks than the log created).
func TestPendingRecoveryRefolds(t *testing.T) {
	l, path := pendingLedger(t, Options{Hold: true})
	for i := range 6 {
		appendOne(t, l, i)
	}
	img := recoverImageCopy(t, path)
	from := uint64(fileHolds(t, img))
	var folded []uint64
	old := Refold
	Refold = func(tx *Tx, at uint64) error {
		folded = append(folded, at)
		sp, err := tx.Space("refolded")
		if err != nil {
			return err
		}
		return sp.Put([]byte("head"), u64(tx.Head().Seq))
	}
	t.Cleanup(func() { Refold = old })
	r, err := Open(img, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.View(func(tx *Tx) error {
		sp, err := tx.Space("refolded")
		if err != nil {
			return err
		}
		if got := sp.Get([]byte("head")); !bytes.Equal(got, u64(6)) {
			t.Errorf("refolded up to %x, want the head, 6", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(folded) != 1 || folded[0] > from {
		t.Errorf("refolds from %v, want one from at most %d (the file's head)", folded, from)
	}
}

// Reads while calls keep coming: the committer, holding the file commit
// after commit, settles on the reads' behalf (settleWanted). (Review: held,
// with 8 callers, 5 of 5 reads waited out a 2 s lock timeout.)
func TestPendingReadsUnderWriteLoad(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		l, path, _ := journaled(t, Options{Hold: hold})
		appendOne(t, l, 0)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var answered atomic.Int64
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					err := l.Update(func(tx *Tx) error {
						_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{"T-1"}, Payload: []byte{0x81, 0xa1, 'i', byte(w)}})
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
					answered.Add(1)
				}
			}()
		}
		for range 20 {
			time.Sleep(5 * time.Millisecond)
			before := answered.Load()
			var head uint64
			if err := l.ViewWithin(2*time.Second, func(tx *Tx) error { head = tx.Head().Seq; return nil }); err != nil {
				t.Fatalf("read under write load: %v", err)
			}
			if head < uint64(before)+1 {
				t.Fatalf("a read saw head %d, after %d calls were answered", head, before+1)
			}
		}
		close(stop)
		wg.Wait()
		if got := len(storedEvents(t, path, l)); got != int(answered.Load())+1 {
			t.Fatalf("%d events, %d answered", got, answered.Load()+1)
		}
	})
}

// Another ledger copied over the file in place while commits are pending:
// bbolt's commit of them, by a read, does not write them into it
// (samePending): the read is refused, and the file left as copied.
func TestPendingFileCopiedOver(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		keepPending(t)
		dir := t.TempDir()
		other := filepath.Join(dir, "other.db")
		o, err := Open(other, Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, o, 3)
		o.Close()
		l, path, _ := journaled(t, Options{Hold: hold})
		for i := range 5 {
			appendOne(t, l, i)
		}
		copyFile(t, other, path)
		before, _ := os.ReadFile(path)
		if err := l.View(func(*Tx) error { return nil }); !errors.Is(err, ErrReplaced) {
			t.Fatalf("a read that settles on a file copied over: %v, want ErrReplaced", err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
			t.Error("the pending commits were written into the file copied over")
		}
	})
}

// The sentinel of a generation's first record is no event: an older
// logbook, checking that the file holds the events of records under a
// header it cannot read, refuses the ledger.
func TestJournalSentinel(t *testing.T) {
	if _, err := ledger.DecodeRecord(journalSentinel); err == nil {
		t.Fatal("the sentinel decodes as an event")
	}
	l, path, _ := journaled(t, Options{Hold: true})
	appendOne(t, l, 0)
	appendOne(t, l, 1)
	j, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := decodeHeader(j)
	if !ok {
		t.Fatal("no header")
	}
	first := encodeRecord(nil, h.salt, [][]byte{journalSentinel})
	if !bytes.Equal(j[journalRecords:journalRecords+len(first)], first) {
		t.Fatal("the generation's first record is not the sentinel")
	}
	if evs, err := readRecords(j[journalRecords:], h.salt); err != nil || len(evs) == 0 {
		t.Fatalf("records: %d events, %v", len(evs), err)
	} else {
		for _, ev := range evs {
			if bytes.Equal(ev, journalSentinel) {
				t.Fatal("readRecords returned the sentinel")
			}
		}
	}
}

// A process that recovers commits left pending and is stopped before it
// retires the journal's header leaves a file the next writer opens: the
// checkpoint's pages, which that open writes the file back to, were not
// reused by recovery's commits, fold included, and every event is there.
// (Attack review: recovery folded in a second commit, which reused them;
// stopped there, the ledger verified but every writer refused it,
// "its checkpoint's pages differ".) A file left so by an older logbook —
// moved on past the checkpoint, in this boot — is opened too, since it
// holds every record's event.
func TestPendingRecoveryStoppedBeforeRetire(t *testing.T) {
	for _, open := range []struct {
		name  string
		opts  Options
		moved bool
	}{{"writer", Options{}, false}, {"reader", Options{ReadOnly: true}, false}, {"moved on since", Options{}, true}} {
		moved := open.moved
		t.Run(open.name, func(t *testing.T) {
			l, path := pendingLedger(t, Options{Hold: true})
			for i := range 40 {
				appendOne(t, l, i)
			}
			img := recoverImageCopy(t, path)
			want := storedEvents(t, path, l)
			if got := fileHolds(t, img); got >= len(want) {
				t.Fatalf("the file alone holds %d events of %d: none was pending", got, len(want))
			}
			// A fold that writes pages enough to take any freed page.
			old := Refold
			Refold = func(tx *Tx, _ uint64) error {
				sp, err := tx.Space("refolded")
				if err != nil {
					return err
				}
				for i := range 256 {
					if err := sp.Put(u64(uint64(i)), bytes.Repeat([]byte{byte(i)}, 1500)); err != nil {
						return err
					}
				}
				return nil
			}
			t.Cleanup(func() { Refold = old })
			stopped := errors.New("stopped before the retirement")
			stopBeforeRetire = func() error { return stopped }
			_, err := Open(img, open.opts)
			stopBeforeRetire = nil
			if err == nil || !strings.Contains(err.Error(), stopped.Error()) {
				t.Fatalf("the recovering open: %v, want it stopped before the retirement", err)
			}
			if !readHeader(t, img) {
				t.Fatal("the header no longer holds: nothing to test")
			}
			if moved {
				// As an older logbook's recovery left it: commits past
				// the recovery's reused the checkpoint's pages.
				db, err := bolt.Open(img, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
				if err != nil {
					t.Fatal(err)
				}
				for _, fn := range []func(*bolt.Tx) error{
					func(btx *bolt.Tx) error {
						b, err := btx.CreateBucket([]byte("later"))
						for i := 0; err == nil && i < 256; i++ {
							err = b.Put(u64(uint64(i)), bytes.Repeat([]byte{1}, 1500))
						}
						return err
					},
					func(btx *bolt.Tx) error { return btx.DeleteBucket([]byte("later")) },
				} {
					if err := db.Update(fn); err != nil {
						t.Fatal(err)
					}
				}
				db.Close()
			}
			// The next writer, in this boot and (the checkpoint written
			// back: its pages must be intact) after the machine stopped;
			// a file moved on past it is opened in this boot only.
			boots := []string{"", "another-boot"}
			if moved {
				boots = boots[:1]
			}
			for _, boot := range boots {
				got, at := openStopped(t, img, boot, Options{})
				if len(got) != len(want) {
					t.Fatalf("boot %q: %d events, want %d", boot, len(got), len(want))
				}
				isPrefix(t, got, want)
				if readHeader(t, at) {
					t.Errorf("boot %q: the header still holds", boot)
				}
			}
		})
	}
}

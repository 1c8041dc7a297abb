package boltstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

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
		keepPending(t)
		l, path, _ := journaled(t, Options{Hold: hold})
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
		keepPending(t)
		l, path, _ := journaled(t, Options{Hold: hold})
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
// head: the next writer's open, in this boot, ingests them; a reader's open
// recovers them as a writer (it may write the file); in another boot the
// file is written back to the checkpoint and every record ingested. Each
// holds every answered event and verifies.
func TestPendingStopped(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		keepPending(t)
		l, path, _ := journaled(t, Options{Hold: hold})
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
			name string
			open func(img string) (*Store, error)
		}{
			{"writer", func(img string) (*Store, error) { return Open(img, Options{}) }},
			{"reader", func(img string) (*Store, error) { return Open(img, Options{ReadOnly: true}) }},
			{"another boot", func(img string) (*Store, error) {
				setBoot(t, "another-boot")
				defer setBoot(t, mustBoot(t))
				return Open(img, Options{})
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				at := filepath.Join(t.TempDir(), "ledger.db")
				copyFile(t, img, at)
				copyFile(t, journalPath(img), journalPath(at))
				r, err := c.open(at)
				if err != nil {
					t.Fatal(err)
				}
				got := storedEvents(t, at, r)
				if _, err := r.Verify(context.Background(), VerifyOptions{}); err != nil {
					t.Fatal(err)
				}
				r.Close()
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

// A reader that may not write the file cannot recover commits pending
// (the file read-only): it is refused, ErrUnrecovered, saying so, and
// the file is left as it was.
func TestPendingStoppedReaderCannotWrite(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes a read-only file")
	}
	keepPending(t)
	l, path, _ := journaled(t, Options{Hold: true})
	for i := range 5 {
		appendOne(t, l, i)
	}
	img := recoverImageCopy(t, path)
	if err := os.Chmod(img, 0o444); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(img)
	_, err := Open(img, Options{ReadOnly: true})
	if !errors.Is(err, ErrUnrecovered) {
		t.Fatalf("open: %v, want ErrUnrecovered", err)
	}
	if after, _ := os.ReadFile(img); string(after) != string(before) {
		t.Error("the refused open changed the file")
	}
}

// bbolt's commit of pending commits fails: a read is answered the error,
// not a state without them; the journal's header keeps holding them; once
// commits succeed again, reads see every answered event — the held file's
// Store commits them itself, the shared file's next open recovers them
// from the journal.
func TestPendingSettleFails(t *testing.T) {
	pendingModes(t, func(t *testing.T, hold bool) {
		keepPending(t)
		l, path, _ := journaled(t, Options{Hold: hold})
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
		got := storedEvents(t, path, l)
		if len(got) != 7 {
			t.Fatalf("%d events, want 7", len(got))
		}
		if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

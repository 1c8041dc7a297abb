package boltstore

import (
	"testing"
	"time"
)

// A Reading keeps the file open from one read transaction to the next
// while nobody waits for it, and lets it go, when polled, to a process
// that waits: two Stores on one file, as two processes (a rebuild reading
// its chunks, and an agent committing).
func TestReadingKeepsFileUntilOthersWait(t *testing.T) {
	if !wantSignals {
		t.Skip("waiters cannot signal on this platform: a Reading keeps the file only briefly")
	}
	a := openTest(t)
	appendN(t, a, 3)
	b, err := Open(a.Path(), Options{LockTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.quiet = time.Hour
	r := b.Reading()
	defer r.Close()
	head := func() uint64 {
		t.Helper()
		var seq uint64
		if err := r.View(func(tx *Tx) error { seq = tx.Head().Seq; return nil }); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	before := b.Opens()
	for range 5 {
		if got := head(); got != 3 {
			t.Fatalf("head %d, want 3", got)
		}
	}
	if got := b.Opens() - before; got != 1 {
		t.Errorf("5 read transactions of a Reading opened the file %d times, want 1", got)
	}
	// a waits for the file (an hour of quiet would not end the hold):
	// polled, the Reading lets it go.
	done := make(chan struct{})
	go func() { defer close(done); appendN(t, a, 1) }()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-r.Wait():
			r.Poll()
		case <-time.After(time.Minute): // a hang bound
			t.Fatal("the committer still waits for the file a Reading holds")
		}
	}
	if got := head(); got != 4 {
		t.Errorf("head %d after the other Store's commit, want 4", got)
	}
	if got := b.Opens() - before; got != 2 {
		t.Errorf("the Reading opened the file %d times, want 2 (once more after letting it go)", got)
	}
}

package boltstore

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// TestUpdateEachCommitsEveryStep: each step is its own durable commit,
// committed is called after each, and a failing step is rolled back alone
// and returned as it is.
func TestUpdateEachCommitsEveryStep(t *testing.T) {
	l := openTest(t)
	steps, commits := 0, 0
	err := l.UpdateEach(func(tx *Tx) (bool, error) {
		steps++
		if tx.Head().Seq != uint64(steps-1) {
			t.Errorf("step %d sees head %d: the step before it did not commit", steps, tx.Head().Seq)
		}
		_, err := tx.Append(ledger.Event{Type: "test.step", Version: 1, Actor: "tester", Payload: []byte{0x80}})
		return steps == 5, err
	}, func() { commits++ })
	if err != nil || steps != 5 || commits != 5 {
		t.Fatalf("UpdateEach: %v after %d steps and %d commits, want 5 of each", err, steps, commits)
	}
	boom := errors.New("boom")
	err = l.UpdateEach(func(tx *Tx) (bool, error) {
		tx.Append(ledger.Event{Type: "test.step", Version: 1, Actor: "tester", Payload: []byte{0x80}})
		return false, boom
	}, nil)
	if err != boom {
		t.Fatalf("a failing step: %v, want its error", err)
	}
	l.View(func(tx *Tx) error {
		if tx.Head().Seq != 5 {
			t.Errorf("head %d after a failed step, want 5", tx.Head().Seq)
		}
		return nil
	})
}

// TestUpdateEachLetsAWaiterIn: while UpdateEach runs its steps, another
// Store on the file (another process, as the file lock sees it) that asks
// for the file gets it before the steps are over, not after them.
func TestUpdateEachLetsAWaiterIn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("othersWaiting tells only on Linux; elsewhere every step lets the file go")
	}
	l := openTest(t)
	other, err := Open(l.Path(), Options{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const steps = 200
	var done atomic.Int64
	started := make(chan struct{})
	otherDone := make(chan int64, 1)
	otherErr := make(chan error, 1)
	go func() {
		<-started
		otherErr <- other.Update(func(tx *Tx) error {
			_, err := tx.Append(ledger.Event{Type: "test.other", Version: 1, Actor: "other", Payload: []byte{0x80}})
			return err
		})
		otherDone <- done.Load()
	}()
	err = l.UpdateEach(func(tx *Tx) (bool, error) {
		if done.Add(1) == 2 {
			close(started) // the other asks while the steps hold the file
		}
		time.Sleep(2 * time.Millisecond) // a step's work
		return done.Load() == steps, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-otherErr; err != nil {
		t.Fatal(err)
	}
	if at := <-otherDone; at >= steps {
		t.Fatalf("the other Store got the file only after all %d steps", steps)
	}
}

// TestWaitingFor reads /proc/locks's lines: a lock held is not a waiter,
// one marked "->" on the same device and inode is, on another file not.
func TestWaitingFor(t *testing.T) {
	const locks = "1: FLOCK  ADVISORY  WRITE 5294 fe:00:9985756 0 EOF\n" +
		"2: FLOCK  ADVISORY  WRITE 5534 fe:01:9979061 0 EOF\n" +
		"2: -> FLOCK  ADVISORY  WRITE 5558 fe:01:9979061 0 EOF\n"
	dev := func(major, minor uint64) uint64 { return major<<8 | minor }
	for _, c := range []struct {
		dev, ino uint64
		want     bool
	}{
		{dev(0xfe, 0), 9985756, false},
		{dev(0xfe, 1), 9979061, true},
		{dev(0xfe, 0), 9979061, false},
		{dev(0xfe, 1), 997906, false},
	} {
		if got := waitingFor([]byte(locks), c.dev, c.ino); got != c.want {
			t.Errorf("waitingFor(dev %x, inode %d) = %v, want %v", c.dev, c.ino, got, c.want)
		}
	}
}

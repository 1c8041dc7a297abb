package boltstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A process alone on its file keeps it open across commits and lends it to
// its own read transactions: however many calls, one open (quiet is set
// far beyond the test's length, so only a waiter could end the hold).
func TestHoldsFileWhileAlone(t *testing.T) {
	if !wantSignals {
		t.Skip("waiters cannot signal on this platform: the file is held only briefly")
	}
	l := openTest(t)
	l.quiet = time.Hour
	before := l.opens.Load()
	appendN(t, l, 50)
	for range 5 {
		if err := l.View(func(tx *Tx) error { _, err := tx.Event(1); return err }); err != nil {
			t.Fatal(err)
		}
	}
	appendN(t, l, 10)
	if got := l.opens.Load() - before; got != 1 {
		t.Errorf("60 commits and 5 reads opened the file %d times, want 1", got)
	}
}

// A process waiting for the file says so, and the holder lets it go after
// its commit, however long it could otherwise keep it: two Stores on one
// file (each its own open file, as two processes) take turns. Were the
// signal lost, the second would wait an hour (and fail at LockTimeout).
func TestWaiterTakesFileFromHolder(t *testing.T) {
	if !wantSignals {
		t.Skip("waiters cannot signal on this platform")
	}
	a := openTest(t)
	a.quiet = time.Hour
	b, err := Open(a.Path(), Options{LockTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.quiet = time.Hour
	for i := range 10 {
		appendN(t, a, 1)
		appendN(t, b, 1)
		if err := a.View(func(tx *Tx) error {
			if got := tx.Head().Seq; got != uint64(2*i+2) {
				t.Errorf("round %d: head %d", i, got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// The signal itself: an open file's read lock far past the end of the file,
// seen by the holder of the flock, gone when cleared or when the waiter
// closes its file.
func TestWantSignal(t *testing.T) {
	if !wantSignals {
		t.Skip("waiters cannot signal on this platform")
	}
	path := filepath.Join(t.TempDir(), "f")
	holder, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	waiter, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if othersWant(holder) {
		t.Fatal("a waiter seen before any signalled")
	}
	signalWant(waiter)
	if !othersWant(holder) {
		t.Fatal("signalled waiter not seen")
	}
	clearWant(waiter)
	if othersWant(holder) {
		t.Fatal("cleared signal still seen")
	}
	signalWant(waiter)
	waiter.Close()
	if othersWant(holder) {
		t.Fatal("a closed waiter's signal still seen")
	}
}

// drain takes up to MaxBatch waiting calls whatever room the batch it is
// given has left: a session that keeps the file for many commits hands it
// what is left of its last batch, with less room each time (once, that
// made every commit of a long session take one call).
func TestDrainTakesUpToMaxBatch(t *testing.T) {
	l := &Store{opts: Options{MaxBatch: 8}, queue: make(chan *request, 16)}
	for range 10 {
		l.queue <- &request{}
	}
	full := make([]*request, 4)
	if got := l.drain(full[4:]); len(got) != 8 {
		t.Errorf("drain into a batch with no room left took %d calls, want 8 (MaxBatch)", len(got))
	}
	if got := l.drain(nil); len(got) != 2 {
		t.Errorf("drain took %d calls, want the 2 left", len(got))
	}
}

// After a commit that answered several calls, refill lets the callers it
// made runnable queue their next calls before it drains (one CPU: they
// cannot have run yet): 64 concurrent appenders otherwise alternated
// between two half-full commits (32 events a commit, against 54 with it).
// After a lone call it drains only what already waits. (The scheduler now
// and then runs the yielding goroutine first: one round of five must
// collect every call.)
func TestRefillLetsAnsweredCallersQueue(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := &Store{opts: Options{MaxBatch: 64}, queue: make(chan *request, 64)}
	callers := func() {
		for range 8 {
			go func() { l.queue <- &request{} }()
		}
	}
	callers()
	if got := l.refill(nil, 1, time.Second); len(got) != 0 {
		t.Errorf("after one call answered, refill waited for %d calls", len(got))
	}
	for got := 0; got < 8; got += len(l.drain(nil)) {
		runtime.Gosched()
	}
	best := 0
	for range 5 {
		callers()
		got := len(l.refill(nil, 8, time.Millisecond))
		best = max(best, got)
		for got < 8 {
			runtime.Gosched()
			got += len(l.drain(nil))
		}
	}
	if best != 8 {
		t.Errorf("after 8 calls answered, refill collected at most %d of their next 8", best)
	}
}

// With a second CPU the yielding committer may run again before any caller
// it answered has queued: refill goes on waiting (up to its bound of no
// progress) rather than give up at the first yield that brings none —
// 64 appenders otherwise left the committer idle, and the first caller back
// committed alone on its own goroutine (197 of 461 commits held one event).
// It returns once they have all queued, and with what it has once none
// comes.
func TestRefillWaitsForAnsweredCallers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	l := &Store{opts: Options{MaxBatch: 64}, queue: make(chan *request, 64)}
	for range 20 {
		var ready sync.WaitGroup
		ready.Add(1)
		for range 8 {
			go func() {
				ready.Wait()
				runtime.Gosched()
				l.queue <- &request{}
			}()
		}
		ready.Done()
		// A bound only a stalled machine reaches: the callers always come.
		if got := len(l.refill(nil, 8, 10*time.Second)); got != 8 {
			t.Fatalf("refill collected %d of the 8 callers' next calls", got)
		}
	}
	if got := len(l.refill(nil, 8, time.Millisecond)); got != 0 {
		t.Fatalf("refill with no caller coming back: %d calls", got)
	}
}

// goroutineID is the running goroutine's number, from its stack header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

// A call one at a time commits on the caller's own goroutine once the file
// is open — held, or kept while nobody else waits — with no hand-off to
// the committer and back; the committer still runs the first call of a
// hold (it opens the file) and any call that finds others queued. Every
// call is durable and chained as before. (One CPU: a caller the committer
// answered runs only once the committer idles, as it nearly always does.)
func TestLoneCallCommitsOnItsGoroutine(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, hold := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "held"}[hold], func(t *testing.T) {
			l, err := Open(filepath.Join(t.TempDir(), "ledger.db"), Options{Create: true, Hold: hold})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			l.quiet = time.Hour
			me := goroutineID()
			var on []bool
			for range 5 {
				err := l.Update(func(tx *Tx) error {
					on = append(on, goroutineID() == me)
					return appendBench(tx)
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			want := []bool{hold, true, true, true, true}
			if !slices.Equal(on, want) {
				t.Errorf("ran on the caller's goroutine: %v, want %v", on, want)
			}
			if err := l.View(func(tx *Tx) error {
				if tx.Head().Seq != 5 {
					t.Errorf("head %d, want 5", tx.Head().Seq)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
}

// A call that queues while a commit runs its calls joins that commit,
// rather than wait for the next one (and its fsync).
func TestCallQueuedDuringCommitJoinsIt(t *testing.T) {
	l := openTest(t)
	started := make(chan struct{})
	var ids [2]int
	var wg sync.WaitGroup
	wg.Go(func() {
		err := l.Update(func(tx *Tx) error {
			close(started)
			for len(l.queue) == 0 {
				runtime.Gosched()
			}
			ids[0] = tx.btx.ID()
			return appendBench(tx)
		})
		if err != nil {
			t.Error(err)
		}
	})
	<-started
	err := l.Update(func(tx *Tx) error {
		ids[1] = tx.btx.ID()
		return appendBench(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if ids[0] != ids[1] {
		t.Errorf("the call queued during a commit ran in transaction %d, the commit was %d", ids[1], ids[0])
	}
}

// commit reports as answered every call it ran, those it took from the
// queue while running included: it reported the calls it was given only,
// so after a commit that started with one call and took 63 more, refill
// saw one caller answered and did not wait for the 63 to call again — the
// first back committed alone on its own goroutine, every other commit.
func TestCommitCountsTheCallsItTook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	created, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	created.Close()
	l := &Store{path: path, opts: Options{MaxBatch: 64, LockTimeout: time.Second, Now: time.Now}, queue: make(chan *request, 64)}
	db, file, err := l.openDB(false, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	call := func() *request { return &request{fn: appendBench, done: make(chan error, 1)} }
	first := call()
	var queued []*request
	for range 5 {
		r := call()
		queued = append(queued, r)
		l.queue <- r
	}
	rest, answered, err := l.commit(&openFile{db: db, file: file}, []*request{first}, true)
	if err != nil || len(rest) != 0 || answered != 6 {
		t.Fatalf("commit: %d left, %d answered, %v; want 0 left, 6 answered", len(rest), answered, err)
	}
	for _, r := range append(queued, first) {
		if err := <-r.done; err != nil {
			t.Fatal(err)
		}
	}
}

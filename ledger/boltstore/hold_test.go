package boltstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
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

// After a commit that answered several calls, refill returns what is
// queued and how many calls the next commit may expect (those queued and
// those answered); with none queued it waits, blocked, for the first (one
// CPU: the callers cannot have run yet). After a lone call it drains only
// what already waits, and expects nothing.
func TestRefillExpectsAnsweredCallers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := &Store{opts: Options{MaxBatch: 64}, queue: make(chan *request, 64)}
	callers := func() {
		for range 8 {
			go func() { l.queue <- &request{} }()
		}
	}
	// On one CPU the callers just started queue before refill returns
	// only if it waited or yielded for them — or if this goroutine was
	// preempted first (a loaded machine: then refill rightly drained
	// them, and the test, counting only what the first refill got, once
	// spun forever waiting for the rest). So the scenario runs until
	// refill returns before the callers, at most 20 times.
	lone := false
	for try := 0; try < 20 && !lone; try++ {
		callers()
		got, expect := l.refill(nil, 1, time.Second)
		if expect != 0 {
			t.Errorf("after one call answered, refill expects %d calls", expect)
		}
		lone = len(got) == 0
		for n := len(got); n < 8; n += len(l.drain(nil)) {
			runtime.Gosched()
		}
	}
	if !lone {
		t.Error("in 20 tries, after one call answered, refill always waited for the callers")
	}
	callers()
	got, expect := l.refill(nil, 8, 10*time.Second)
	if len(got) == 0 || expect != 8 {
		t.Errorf("after 8 calls answered: refill returned %d calls, expects %d", len(got), expect)
	}
	for n := len(got); n < 8; n += len(l.drain(nil)) {
		runtime.Gosched()
	}
	if got, expect := l.refill(nil, 8, time.Millisecond); len(got) != 0 || expect != 8 {
		t.Errorf("with no caller coming back: %d calls, expects %d", len(got), expect)
	}
}

// bareStore is a Store with no committer, its file open for commit.
func bareStore(t *testing.T) (*Store, *openFile) {
	t.Helper()
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
	o := &openFile{db: db, file: file}
	t.Cleanup(func() {
		// As a hold ends: bbolt closes no file while the journal's pin is open.
		if err := l.endGeneration(o); err != nil {
			t.Error(err)
		}
		db.Close()
	})
	return l, o
}

func appendCall() *request { return &request{fn: appendBench, done: make(chan error, 1)} }

// A commit expecting the callers the last one answered takes them as they
// come, blocked between them (with a second CPU the committer may run
// before any has queued: it yielded and gave up, went idle, and the first
// caller back committed alone on its own goroutine), and stops waiting once
// none comes.
func TestCommitWaitsForExpectedCallers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	l, o := bareStore(t)
	whole := 0
	for range 20 {
		var ready sync.WaitGroup
		ready.Add(1)
		calls := make([]*request, 8)
		for i := range calls {
			calls[i] = appendCall()
			go func() {
				ready.Wait()
				runtime.Gosched()
				l.queue <- calls[i]
			}()
		}
		ready.Done()
		// A bound only a stalled machine reaches: the callers always come.
		// (A commit still waits and runs calls for about maxHold at most,
		// leaving the rest to the next: under the race detector, now and
		// then.)
		rest, answered, err := l.commit(o, []*request{appendCall()}, 9, 10*time.Second)
		if err != nil || answered < 1 {
			t.Fatalf("commit: %d left, %d answered, %v", len(rest), answered, err)
		}
		if answered == 9 {
			whole++
		}
		// Those it left, or did not wait for, in commits of their own.
		for left := 9 - answered; left > 0; {
			if len(rest) == 0 {
				rest = l.drain(append(rest, <-l.queue))
			}
			r, n, err := l.commit(o, rest, -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			rest, left = r, left-n
		}
		for _, r := range calls {
			if err := <-r.done; err != nil {
				t.Fatal(err)
			}
		}
	}
	if whole == 0 {
		t.Fatal("no commit took the 8 callers expected")
	}
	if _, answered, err := l.commit(o, []*request{appendCall()}, 9, time.Millisecond); err != nil || answered != 1 {
		t.Fatalf("commit with no caller coming: %d answered, %v", answered, err)
	}
}

func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

// A call one at a time commits on the caller's own goroutine once the file
// is open — held, or kept while nobody else waits — with no hand-off to
// the committer and back; the committer still runs the first call of a
// hold (it opens the file) and any call that finds others queued. Every
// call is durable and chained as before. Each call after the first is made
// once the committer idles with the file open: a caller the committer
// answered may run before the committer has let go of commitMu (one CPU,
// yet preempted, or stopped for the GC, on a loaded machine: 1 of 30 runs
// under the race detector), and its call then rightly goes to the
// committer, which is not what this test is about.
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
			for i := range 5 {
				if i > 0 {
					awaitIdleOpen(t, l)
				}
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

// awaitIdleOpen returns once nobody commits on l and its file is open for
// commits: the committer idles, holding it (or l holds its file).
func awaitIdleOpen(t *testing.T, l *Store) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; { // a hang guard, not a timing check
		if time.Now().After(deadline) {
			t.Fatal("the committer never idled with the file open")
		}
		if l.commitMu.TryLock() {
			open := l.open != nil
			l.commitMu.Unlock()
			if open {
				return
			}
		}
		runtime.Gosched()
	}
}

// A call that queues while a commit runs its calls joins that commit,
// rather than wait for the next one (and its fsync).
func TestCallQueuedDuringCommitJoinsIt(t *testing.T) {
	// A commit stops taking calls once it has held the file for maxHold,
	// which the first call's wait for the second can pass on a loaded
	// machine (the race detector: 8 of 60 runs): the second then rightly
	// goes in the next commit. So the scenario runs until the second
	// joins; with joining broken it never does. Each try on a new Store:
	// its first call goes to the committer (no file open yet), where calls
	// join, never to a lone call's direct commit, where none do.
	var last [2]int
	for range 20 {
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
		if ids[0] == ids[1] {
			return
		}
		last = ids
	}
	t.Errorf("in 20 tries, the call queued during a commit never joined it (last: transaction %d, the commit was %d)", last[1], last[0])
}

// commit reports as answered every call it ran, those it took from the
// queue while running included: it reported the calls it was given only,
// so after a commit that started with one call and took 63 more, refill
// saw one caller answered and did not wait for the 63 to call again — the
// first back committed alone on its own goroutine, every other commit.
func TestCommitCountsTheCallsItTook(t *testing.T) {
	l, o := bareStore(t)
	// A commit that held the file past maxHold (a slow machine, under the
	// race detector) leaves the rest to the next: then it answered fewer. Whatever it took, it counts every call it
	// answered, and at least once in 20 tries it takes the queued five.
	for range 20 {
		calls := []*request{appendCall()}
		for range 5 {
			r := appendCall()
			calls = append(calls, r)
			l.queue <- r
		}
		rest, answered, err := l.commit(o, slices.Clone(calls[:1]), 0, 0) // (commit clears what it answered)
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, r := range calls {
			select {
			case err := <-r.done:
				if err != nil {
					t.Fatal(err)
				}
				done++
			default:
			}
		}
		if answered != done {
			t.Fatalf("commit reported %d answered; %d calls got their answer", answered, done)
		}
		if left := l.drain(rest); len(left) != 6-done {
			t.Fatalf("%d calls answered, %d left in the queue; want %d", done, len(left), 6-done)
		} else if len(left) > 0 {
			if _, _, err := l.commit(o, left, -1, 0); err != nil {
				t.Fatal(err)
			}
		}
		if done == 6 {
			return
		}
	}
	t.Error("in 20 tries, a commit never took the five queued calls")
}

// TestAnsweredCallsAreNotKept: once answered, a call's fn (and all it
// holds: a tool call's arguments, their tree) is the collector's, though
// the process keeps the file and its committer idles. Concurrent callers
// fill batches that slide over one array, fail one call and leave the
// rest to run again; the committer's arrays held up to MaxBatch calls
// answered long before (attack review: 150 MB live after 40 large calls).
func TestAnsweredCallsAreNotKept(t *testing.T) {
	l := openTest(t)
	l.quiet = time.Hour
	const callers, calls = 32, 8
	var freed sync.WaitGroup
	freed.Add(callers * calls)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				held := new([1 << 10]byte)
				runtime.AddCleanup(held, func(*sync.WaitGroup) { freed.Done() }, &freed)
				fail := (c+i)%7 == 0 // a failing call is taken out of its batch
				err := l.Update(func(tx *Tx) error {
					if held[0] != 0 || fail {
						return os.ErrInvalid
					}
					_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Payload: []byte{0x80}})
					return err
				})
				if (err != nil) != fail {
					t.Errorf("call %d.%d: %v", c, i, err)
				}
			}
		})
	}
	wg.Wait()
	done := make(chan struct{})
	go func() { freed.Wait(); close(done) }()
	for range 100 {
		runtime.GC()
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("calls answered and collected 100 times over are still held")
}

// TestFailedLastCallIsNotKept: a failing call taken out of its batch is
// forgotten too when it was the batch's last (the slice left after it
// ran the others kept its slot past its end).
func TestFailedLastCallIsNotKept(t *testing.T) {
	l, o := bareStore(t)
	freed := make(chan struct{})
	fail := func() *request {
		held := new([1 << 10]byte)
		runtime.AddCleanup(held, func(c chan struct{}) { close(c) }, freed)
		return &request{fn: func(*Tx) error {
			if held[0] != 0 {
				return nil
			}
			return os.ErrInvalid
		}, done: make(chan error, 1)}
	}()
	batch := append(make([]*request, 0, 64), appendCall(), appendCall(), fail)
	// A commit that holds the file past maxHold (a loaded machine: CI once)
	// leaves the calls after it to the next commit, as refill would: the
	// failed call is then answered by a later one, and what is left of the
	// batch (the same array) must not hold it either.
	rest, answered := batch, 0
	for try := 0; len(rest) > 0 && try < len(batch); try++ {
		r, n, err := l.commit(o, rest, -1, 0)
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
		rest, answered = r, answered+n
	}
	if answered != 3 || len(rest) != 0 || !errors.Is(<-fail.done, os.ErrInvalid) {
		t.Fatalf("commits: %d answered, %d left", answered, len(rest))
	}
	batch, fail = nil, nil
	for range 100 {
		runtime.GC()
		select {
		case <-freed:
			runtime.KeepAlive(rest)
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("the failed call, answered, is still held by what is left of its batch")
}

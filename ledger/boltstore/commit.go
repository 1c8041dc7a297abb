package boltstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Group commit: one committer goroutine per Store takes every call that is
// waiting and runs them in one write transaction; a failing call is rolled
// back alone. In the shared-file mode it keeps the file open between
// commits while no other process waits for it, and lets it go after the
// current commit once one does (waiters signal: want_linux.go).

// maxHold bounds how long one process keeps the file while its own calls
// keep arriving and another process waits: that process waits at most
// about this plus one commit.
const maxHold = 2 * time.Millisecond

// quietHold bounds how long one process keeps the file open while no other
// process says it waits — busy or idle — so that a process that cannot
// signal (another program, an older logbook) is not kept out for long.
// Reopening the file every quietHold costs nothing measurable.
const quietHold = 100 * time.Millisecond

// pollWant is how often an idle holder looks for a waiting process: a
// process that starts waiting while the holder is idle waits about this
// long more. A waiter that comes during a commit is seen when it ends.
// (Every 250 µs, one call at a time over stdio was answered 9% later and
// cost more CPU: each look wakes the committer, once or twice a call; 8
// alternated runs of 3,000 task_creates from a Node.js client, p50 430–476
// against 398–416 µs.)
const pollWant = time.Millisecond

// linger is how long, within maxHold, the committer keeps the file open
// after a commit for the next call where waiters cannot signal (not
// Linux). It never delays a call: a call that arrives commits at once.
const linger = 500 * time.Microsecond

func (l *Store) run() {
	defer close(l.done)
	defer func() {
		// No call commits on the file from now on, the held one included.
		l.commitMu.Lock()
		if l.open != nil {
			if l.endErr = l.endGeneration(l.open); l.endErr != nil {
				l.dropGeneration(l.open)
			}
		}
		l.open = nil
		l.commitMu.Unlock()
	}()
	for {
		var batch []*request
		select {
		case r := <-l.queue:
			// An array of its own each session: one kept across sessions
			// kept the calls a session's last batches had left in it,
			// answered long ago (see forget).
			batch = append(make([]*request, 0, l.opts.MaxBatch), r)
		case <-l.pended:
			// Calls committed directly on the held file (direct) left
			// commits pending: settled once quiet, while waiting for
			// the next call.
			if l.held == nil {
				continue // (a session's: it settled them)
			}
			if batch = l.idle(nil, l.open); len(batch) == 0 {
				continue // closing
			}
			batch = append(make([]*request, 0, l.opts.MaxBatch), batch...)
		case <-l.quit:
			for {
				select {
				case r := <-l.queue:
					l.session([]*request{r})
				default:
					return
				}
			}
		}
		l.session(l.drain(batch))
	}
}

// await waits at most d for a call and returns batch with it and whatever
// else is waiting then; batch unchanged if none came or the ledger closes.
func (l *Store) await(batch []*request, d time.Duration) []*request {
	if d <= 0 {
		return batch
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-l.queue:
		return l.drain(append(batch, r))
	case <-t.C:
	case <-l.quit:
	}
	return batch
}

// drain adds whatever else is already waiting to batch, up to MaxBatch
// calls; it never waits. (Not up to cap(batch): what is left of a batch
// after a commit is a slice of it with less room each time, and a session
// that kept the file for many commits ended up draining one call a commit.)
func (l *Store) drain(batch []*request) []*request {
	for len(batch) < l.opts.MaxBatch {
		select {
		case r := <-l.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// refill drains what waits into batch after a commit that answered
// calls, and returns how many calls the next commit may expect: those
// waiting and those answered, who are runnable but may not have had a CPU to
// queue their next call yet. Committing only those already queued left the
// rest to the commit after, so many concurrent callers alternated between
// two half-full commits; so the next commit, once it has run the calls it
// has, waits for the expected ones (commit). If none waits yet, refill
// waits for the first, at most wait. It waits blocked, not yielding: a
// goroutine that yields goes to the global run queue, which its processor
// takes it back from before it steals the callers from another
// processor's queue — whose thread the OS may not be running — so the
// committer went idle after its first yields, and the first caller back
// committed alone on its own goroutine (direct). A lone caller (one
// answered) is expected by no one.
func (l *Store) refill(batch []*request, answered int, wait time.Duration) ([]*request, int) {
	// Those left over and those answered: the answered who queued again by
	// now are among the calls drained, not more of them.
	expect := min(len(batch)+answered, l.opts.MaxBatch)
	batch = l.drain(batch)
	if answered <= 1 {
		return batch, 0
	}
	if len(batch) == 0 {
		batch = l.await(batch, wait)
	}
	return batch, expect
}

// refillWait is how long refill waits for the next of the callers it
// answered to queue again, after a commit that took spent: as long. Callers
// that come back within it and share the next commit are answered no later
// than if the first of them had committed without them (the rest then
// waiting for that commit to end, and committing after it); at least what
// a runnable goroutine may take to get a CPU on a busy machine, at most
// maxHold.
func refillWait(spent time.Duration) time.Duration {
	return min(max(spent, 20*time.Microsecond), maxHold)
}

// openFile is the file the committer has open and locked: a hold of the
// shared file, or the held file (Options.Hold). Store.open points to it,
// under commitMu, for as long as calls may commit on it.
type openFile struct {
	db   *bolt.DB
	file *os.File
	// id is file's, taken at its first commit: the path must still name
	// that file at every commit (checkSameFile).
	id *pathStat
	// linked: the path's stat at the current commit (checkSameFile) found
	// the file with more than one name (hard links): a generation ends at
	// its next commit (journalRecord).
	linked bool
	// start is when this hold began (zero for the held file).
	start time.Time
	// size is the file's size when the current commit began; filled, how
	// far from the start the file is known to hold no hole (fillTail).
	size, filled int64
	// broken: a commit on it failed (I/O, or a damaged page): the
	// committer lets it go and opens the file afresh.
	broken bool
	// gen is the journal generation its commits go to, if any; nojournal:
	// none could begin on it (journal.go), and how many commits go synced
	// before one is tried again (a journal that could not be made on a
	// full disk can be once there is room; the held file is kept for the
	// process's lifetime).
	gen       *generation
	nojournal int
	// pend is the write transaction of the commits answered but not yet
	// committed by bbolt (pending.go), if open; pendEvents the events
	// they appended (in the journal's records, durable), pendHead the
	// head after them, pendAt when the last was answered.
	pend       *bolt.Tx
	pendEvents [][]byte
	pendHead   ledger.Head
	pendAt     time.Time
	// settleErr: the last settle failed (no commit is left pending
	// until one succeeds: a full disk would have calls answered into the
	// journal alone).
	settleErr error
}

// session opens the file once and commits batch, then further batches for
// as long as it may keep the file (keep, idle): a process pays for opening
// the file once, not once per commit. Meanwhile this process's read
// transactions use the same open file (share), and a call that comes while
// the committer idles commits on it from its own goroutine (direct).
func (l *Store) session(batch []*request) {
	for len(batch) > 0 {
		opened := false
		err := l.withDBWait(false, lockWait(batch, time.Now()), func(db *bolt.DB, file *os.File) error {
			opened = true
			l.shared.set(db, file)
			defer l.shared.unset()
			l.commitMu.Lock()
			locked := true
			o := l.open
			if l.held == nil {
				o = &openFile{db: db, file: file, start: time.Now()}
				l.open = o
			}
			o.broken = false
			defer func() {
				if !locked {
					l.commitMu.Lock()
				}
				if l.held == nil {
					// Synced before another process may have it; commits
					// it could not settle are the next open's to recover,
					// from the journal.
					if l.endGeneration(o) != nil {
						l.dropGeneration(o)
					}
					l.open = nil
				}
				l.commitMu.Unlock()
			}()
			expect, wait := 0, time.Duration(0)
			for len(batch) > 0 {
				start := time.Now()
				rest, answered, err := l.commit(o, batch, expect, wait)
				l.settleWanted(o)
				if batch = rest; err != nil {
					// The commit itself failed (I/O): start afresh from the
					// file rather than go on with this handle.
					return nil
				}
				wait = refillWait(time.Since(start))
				batch, expect = l.refill(batch, answered, wait)
				if len(batch) == 0 {
					locked = false
					l.commitMu.Unlock()
					batch = l.idle(batch, o)
					l.commitMu.Lock()
					locked = true
				}
				if !l.keep(o) {
					// Let other processes have the file; what is left of
					// this batch goes in the next session.
					return nil
				}
			}
			return nil
		})
		if opened {
			continue // with what is left, if anything
		}
		if err == nil {
			return
		}
		// The file could not be opened: nothing ran. Try again for the
		// calls that may still wait, with whatever else queued meanwhile.
		batch = l.drain(answerExpired(batch, err, time.Now()))
	}
}

// direct commits r on the calling goroutine, alone, when the committer has
// the file open and idles, and no call is queued: a call one at a time
// then costs no hand-off to the committer goroutine and back (two
// wake-ups, each some µs on a busy machine). It reports whether r was
// answered; if not, r goes to the committer as any call.
func (l *Store) direct(r *request) bool {
	if len(l.queue) > 0 || !l.commitMu.TryLock() {
		return false
	}
	defer l.commitMu.Unlock()
	o := l.open
	if o == nil || o.broken || !l.keep(o) {
		return false
	}
	select {
	case <-l.quit:
		return false
	default:
	}
	err := guard(func() error {
		_, _, err := l.commit(o, []*request{r}, -1, 0)
		l.settleWanted(o)
		return err
	})
	if err != nil {
		o.broken = true
	}
	// commit answers r whatever the file does (a damaged page that
	// panics is ErrDamaged, update); o, broken, is no longer used
	// directly: the committer lets it go and opens the file afresh (the
	// held file: commits on it again).
	return len(r.done) > 0
}

// keep reports whether the committer, holding o since o.start, may go on
// committing: for maxHold in any case, then for as long as no other process
// waits, up to quietHold; the held file always, unless broken.
func (l *Store) keep(o *openFile) bool {
	if o.broken {
		return false
	}
	if l.held != nil {
		return true
	}
	held := time.Since(o.start)
	if held <= maxHold {
		return true
	}
	return wantSignals && held <= l.quiet && !othersWant(o.file)
}

// idle waits, holding o since o.start, for the next call: the held file
// until a call comes or the Store closes; on Linux until another process
// waits for the file or quietHold has passed, elsewhere for linger. It
// returns batch with the calls that came, if any.
func (l *Store) idle(batch []*request, o *openFile) []*request {
	if l.held != nil {
		var t *time.Timer
		defer func() {
			if t != nil {
				t.Stop()
			}
		}()
		for {
			var settle <-chan time.Time
			if wait := l.settleQuiet(o); wait > 0 {
				if t == nil {
					t = time.NewTimer(wait)
				} else {
					t.Reset(wait)
				}
				settle = t.C
			}
			select {
			case r := <-l.queue:
				return l.drain(append(batch, r))
			case <-settle:
			case <-l.pended:
			case <-l.quit:
				return batch
			}
		}
	}
	if !wantSignals {
		return l.await(batch, min(linger, maxHold-time.Since(o.start)))
	}
	// One timer for all the polls: an idle holder polls about once per
	// call that comes one at a time (a timer each was 3 allocations).
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for time.Since(o.start) < l.quiet && !othersWant(o.file) {
		if t == nil {
			t = time.NewTimer(pollWant)
		} else {
			t.Reset(pollWant)
		}
		select {
		case r := <-l.queue:
			return l.drain(append(batch, r))
		case <-t.C:
			l.settleQuiet(o)
		case <-l.quit:
			return batch
		}
	}
	return batch
}

// lockWait is how long a session for batch may wait for the file lock: no
// longer than its oldest call may still wait, so that a call queued behind
// a failed attempt does not wait a whole timeout twice.
func lockWait(batch []*request, now time.Time) time.Duration {
	wait := batch[0].deadline.Sub(now)
	for _, r := range batch[1:] {
		wait = min(wait, r.deadline.Sub(now))
	}
	return max(wait, time.Millisecond)
}

// answerExpired answers with err the calls of batch that cannot wait any
// longer — all of them unless err is a lock timeout — and returns the rest.
func answerExpired(batch []*request, err error, now time.Time) []*request {
	keep := batch[:0]
	for _, r := range batch {
		if errors.Is(err, ErrLocked) && r.deadline.After(now.Add(time.Millisecond)) {
			keep = append(keep, r)
		} else {
			r.done <- err
		}
	}
	clear(batch[len(keep):]) // the answered (see forget)
	return keep
}

// forget returns the calls of batch after the first n, which were
// answered, and clears their slots: the array lives on under later
// batches (what is left is a slice of it, and calls drained are appended
// to that), and a slot kept its call — its arguments, their parsed tree,
// its reply — alive long after the answer: up to MaxBatch calls in all,
// whatever the transports bound of what is in flight (attack review: 150
// MB live after 40 large calls answered and an idle server).
func forget(batch []*request, n int) []*request {
	clear(batch[:n])
	return batch[n:]
}

// commit runs the batch in one transaction, and unless expect < 0 the calls
// that queue while it runs them (so that concurrent callers fill a commit
// however their calls arrive): until it has run expect calls it waits for
// the next, each at most wait, while the calls it has run wait for the
// commit anyway (the callers it answered last calling again: refill). It
// answers the calls it ran and returns those it left for the next commit
// (it holds the file about maxHold at most), and how many calls it
// answered, those it took while running included. A failing fn is
// answered with its error and the rest run again without it.
func (l *Store) commit(o *openFile, batch []*request, expect int, wait time.Duration) (rest []*request, answered int, err error) {
	grow := expect >= 0
	// The path must still name the file open here: a file renamed away or
	// deleted after it was opened would take every commit with it.
	if err := l.checkSameFile(o); err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return forget(batch, len(batch)), len(batch), err
	}
	if err := l.retireStale(o); err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return forget(batch, len(batch)), len(batch), err
	}
	retries := 0
	// unpinned: the batch commits without a generation (it would grow the
	// file past what a generation may map).
	unpinned := false
	for len(batch) > 0 {
		if batch[0].series != nil {
			// A series commits synced (its transactions may be large).
			if err := l.endGeneration(o); err != nil {
				batch[0].done <- err
				return forget(batch, 1), answered + 1, err
			}
			err := l.commitSeries(o, batch[0])
			return forget(batch, 1), answered + 1, err
		}
		if o.gen != nil && o.size > journalLimit() {
			// The file grew past the limit: no generation from now on
			// (bbolt would remap the file, waiting for the pin).
			if err := l.endGeneration(o); err != nil {
				for _, r := range batch {
					r.done <- err
				}
				return forget(batch, len(batch)), answered + len(batch), err
			}
		}
		if o.gen == nil && o.nojournal > 0 {
			o.nojournal--
		} else if o.gen == nil && !unpinned && l.journaling() && l.beginGeneration(o) != nil {
			// Not journaled (synced as before) if it cannot begin — once
			// the header it may have written is retired: commits without
			// the pin reuse the pages of its checkpoint — for as many
			// commits as a generation's.
			o.nojournal = genCommits
			if err := l.retireStale(o); err != nil {
				for _, r := range batch {
					r.done <- err
				}
				return forget(batch, len(batch)), answered + len(batch), err
			}
		}
		failed, ferr := -1, error(nil)
		ran := 0
		// inLog: the replicated log took the events (Replica.Append), so
		// they are durable whatever becomes of this file's commit; appended
		// marks the calls that appended some (with a Replica only).
		inLog := false
		var appended []bool
		var head ledger.Head
		var events [][]byte // what the commit appended
		var before uint64   // the head's seq before it
		ingested := false   // whether the catch-up brought events in
		// recorded: the commit's journal record was written (before bbolt
		// writes the commit's pages), with the outcome recordErr; it is
		// flushed once bbolt has written them.
		recorded, recordErr := false, error(nil)
		err := l.inPending(o, func(btx *bolt.Tx) error {
			start := time.Now()
			tx, in, err := l.writeTx(o, btx, true) // checked as it began (beginPending)
			if err != nil {
				return err
			}
			before = tx.head.Seq
			defer func() { head, events = tx.head, tx.appended }()
			l.fillTail(o, btx)
			ingested = in
			replica := l.opts.Replica
			base := tx.head // what the calls decide against
			for i := 0; i < len(batch); i++ {
				if batch[i].series != nil {
					// A series commits alone, in transactions of its own.
					break
				}
				n := len(tx.appended)
				if err := safeRun(batch[i].fn, tx); err != nil {
					failed, ferr = i, err
					return err
				}
				ran = i + 1
				if replica != nil {
					appended = append(appended, len(tx.appended) > n)
				}
				// However many calls are waiting, one commit holds the
				// file for about maxHold at most: the rest go in the next.
				if time.Since(start) > maxHold {
					break
				}
				if ran == len(batch) && grow {
					// Calls that came while these ran join this commit.
					batch = l.drain(batch)
					if ran == len(batch) && ran < expect {
						// And those expected, as they come.
						if batch = l.await(batch, min(wait, maxHold-time.Since(start))); ran == len(batch) {
							expect = 0 // none came: no more waiting
						}
					}
				}
			}
			if replica != nil && len(tx.appended) > 0 {
				if err := replica.Append(base, tx.appended); err != nil {
					return err
				}
				inLog = true
			}
			if o.gen != nil && len(tx.appended) > 0 && tx.head.Seq-before == uint64(len(tx.appended)) && l.journalRecord(o, tx.appended) {
				// The record goes to the journal's page cache now, bbolt's
				// pages after it, and one flush of the journal then makes
				// the commit durable; the calls are answered after it.
				recorded, recordErr = true, writeRecord(o.gen)
			}
			return tx.flush()
		})
		pending := false
		if err == nil {
			if recorded && recordErr == nil && !ingested && head.Seq-before == uint64(len(events)) && l.mayPend(o) {
				// Durable once its record is: answered now, committed
				// by bbolt with the next ones (pending.go).
				if recordErr = syncRecord(o.gen); recordErr == nil {
					pending = true
					o.pendEvents = append(o.pendEvents, events...)
					o.pendHead, o.pendAt = head, time.Now()
					l.seen.answer(head)
					l.unsettled.Store(true)
					select {
					case l.pended <- struct{}{}:
					default:
					}
				}
			}
			if !pending {
				err = l.commitPending(o)
				if err == nil {
					l.settled(o) // what was pending, committed with it
				}
			}
		}
		if recorded && recordErr == nil && err == nil && !pending {
			recordErr = syncRecord(o.gen)
		}
		if recorded {
			switch rerr := recordErr; {
			case err == nil:
				err = l.journalEnd(o, rerr)
			case errors.Is(rerr, errRecordUnwritten):
				// The commit failed, and no byte of its record was
				// written: nothing to take back.
			default:
				if err = retractRecord(o.gen, err); errors.Is(err, ErrOutcomeUnknown) {
					// Unknown for the calls that ran; those after them
					// (the commit held the file long enough) go to the
					// next commit.
					o.broken = true
					l.endGeneration(o) // as after any failed commit, below
					for _, r := range batch[:ran] {
						r.done <- err
					}
					return forget(batch, ran), answered + ran, err
				}
			}
		}
		if failed >= 0 {
			batch[failed].done <- ferr
			answered++
			batch[failed] = nil // answered (see forget): the last, it stays in the array
			batch = append(batch[:failed:failed], batch[failed+1:]...)
			continue
		}
		if errors.Is(err, berrors.ErrMaxSizeReached) && o.gen != nil {
			// The commit would grow the file past the mapping, which bbolt
			// would remap waiting for the pin: it commits synced instead,
			// after the generation's end.
			if err := l.endGeneration(o); err != nil {
				for _, r := range batch {
					r.done <- err
				}
				return forget(batch, len(batch)), answered + len(batch), err
			}
			unpinned = true
			continue
		}
		if errors.Is(err, ErrHeadMoved) && retries < maxReplicaRetries {
			// Another node appended first: roll back, catch up, decide
			// again against the new state — after a short random pause
			// that grows with each conflict, so nodes that keep colliding
			// spread out instead of colliding again.
			retries++
			if ingested {
				// Keep what the rolled-back transaction ingested: a node
				// far behind would ingest the same events again at every
				// conflict and, while others keep appending, never get
				// to decide (a node reopened behind starved for 20s in
				// jetstream's fault test). Its error, if any, is the
				// next attempt's too.
				l.catchUp(o)
			}
			time.Sleep(time.Duration(rand.Int64N(int64(100*time.Microsecond) << min(retries, 7))))
			continue
		}
		if err == nil && !recorded && o.gen != nil && head.Seq > before {
			if head.Seq-before == uint64(len(events)) {
				// Its record was not written (journalRecord: no room, or
				// the file has another name): the generation ends.
				err = l.journalEnd(o, errNoRecord)
			} else {
				// Events came in other than by Append (Tx.Ingest), which
				// the journal does not record: the file is synced.
				err = l.endGeneration(o)
			}
		}
		switch {
		case err == nil && pending:
		case err == nil:
			l.seen.committed(head)
		case inLog:
			// The replicated log, which alone makes them durable, has the
			// events; only this file's copy failed (the next commit
			// ingests them). A call that appended succeeded: told it
			// failed, its caller would append it again. One that appended
			// nothing lost what it wrote.
			for i, r := range batch[:ran] {
				if appended[i] {
					r.done <- nil
				} else {
					r.done <- err
				}
			}
			return forget(batch, ran), answered + ran, err
		case errors.Is(err, ErrOutcomeUnknown):
			// The commit's calls may be in the ledger; those after them
			// never ran and go to the next commit.
		default:
			ran = len(batch) // the commit failed: every call gets its error
			// Its generation, if one runs, ends: the pin keeps every
			// page the generation's commits freed from reuse, so that on
			// a file that cannot grow (a full disk, a size limit) each
			// later commit would need new pages at the end of the file
			// and fail too, however small, until space appeared (a
			// process holding the file keeps its generation across
			// commits). Ended, the next commit reuses those pages in a
			// generation of its own. An ending that fails is answered by
			// the next commit (retireStale; a failed sync: ErrSyncFailed);
			// these calls keep the commit's error.
			l.endGeneration(o)
		}
		for _, r := range batch[:ran] {
			r.done <- err
		}
		return forget(batch, ran), answered + ran, err
	}
	return nil, answered, nil
}

// catchUp commits, alone, what the replicated log holds past the file's
// head.
func (l *Store) catchUp(o *openFile) error {
	var head ledger.Head
	err := update(o.db, func(btx *bolt.Tx) error {
		if err := l.checkFile(btx); err != nil {
			return err
		}
		tx := newTx(btx)
		defer func() { head = tx.head }()
		tx.now = l.opts.Now
		if err := l.opts.Replica.CatchUp(tx); err != nil {
			return fmt.Errorf("catch up with the replicated log: %w", err)
		}
		return tx.flush()
	})
	if err == nil {
		l.seen.committed(head)
	}
	return err
}

// update is db.Update with what a damaged file makes bbolt do (a panic on
// a page that is not what it claims, a fault past the end of the mapping)
// turned into an ErrDamaged error, the transaction rolled back: the commit
// then answers its calls with it, as any failed commit does. Left to
// escape, the panic skipped the answers (and the calls the commit had
// taken from the queue), and the committer ran the same batch again and
// again on the same damage, its callers waiting forever.
func update(db *bolt.DB, fn func(*bolt.Tx) error) error {
	return guard(func() error { return db.Update(fn) })
}

// diskFull is err, the answer to a call, wrapped as ErrDiskFull where a
// write or a growth of a file (the ledger's, its journal's) was refused
// for want of room (noRoom).
func diskFull(err error) error {
	if err != nil && noRoom(err) && !errors.Is(err, ErrDiskFull) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}

// noRoom tells whether err is a write or a growth of the file refused for
// want of room: ENOSPC, EDQUOT, or EFBIG (a file size limit:
// RLIMIT_FSIZE). bbolt reports a growth of the file that failed by the
// errno's text alone ("file resize error: %s"): that text is read too,
// at any depth of err's chain (a snapshot's "snapshot: write: %w").
func noRoom(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG} {
		if errors.Is(err, errno) {
			return true
		}
		for e := err; e != nil; e = errors.Unwrap(e) {
			if msg := e.Error(); strings.HasPrefix(msg, "file resize error: ") && strings.HasSuffix(msg, ": "+errno.Error()) {
				return true
			}
		}
	}
	return false
}

func safeRun(fn func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if fromStorage(v) {
				err = damagedRead(v)
				return
			}
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(tx)
}

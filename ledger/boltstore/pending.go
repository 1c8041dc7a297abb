package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// Pending commits: a commit whose journal record is durable is answered
// before bbolt commits it.
//
// With the journal, a commit is durable once its record is flushed
// (journal.go); bbolt's own commit of it — copying each changed page's
// node, writing the pages, the freelist and the meta page — is the larger
// part of a lone call's CPU and of its memory (BenchmarkServerCallFloor).
// So a commit whose record is durable is answered at once and its bbolt
// transaction left open, pending (openFile.pend): the next commit goes on
// in the same transaction, and bbolt commits them all together — the
// nodes each commit touches copied once, each page written once — when
// the generation ends (its 64th record, the end of the hold, a series),
// before any read transaction of this Store (a read must see every call
// answered), after settleIdle without a commit, or when a commit is not
// journaled. Until then the events of the pending commits are in the
// journal alone (openFile.pendEvents keeps them too):
//
//   - a call that fails in a later commit rolls the transaction back, and
//     the pending events are ingested again into the next one
//     (beginPending) before it runs anything;
//   - a process that dies leaves records past the file's head: the next
//     writer's open writes the file back to the generation's checkpoint
//     and ingests every record's events, in this boot as in another
//     (settleJournal, recovery.replay);
//   - a bbolt commit of them that fails leaves the generation pinned and
//     its header holding (never retired while events it holds are missing
//     from the file): the Store tries again, or, letting the file go,
//     leaves them to the next open (dropGeneration).

// settleIdle is how long the committer leaves commits pending without a
// new one: a process killed later has left its file whole. (A variable:
// tests keep commits pending.)
var settleIdle = time.Millisecond

// readLookAgain is how often a read waiting for pending commits to be
// settled looks again (settleForRead), whatever settleIdle is: tests that
// keep commits pending (settleIdle an hour) had such a read wait out its
// lock timeout when it found the committer looking at its idle spell.
const readLookAgain = time.Millisecond

// pendingCommit is bbolt's commit of a pending transaction (tests make it
// fail).
var pendingCommit = (*bolt.Tx).Commit

// Refold, if set, folds what the log holds past the projections, in a
// transaction into which events answered were ingested again
// (beginPending): rolled back with the call that failed, their folds went
// too, and a read must find the state the calls were answered on.
// from is the head the events were ingested onto. Set by the package that
// owns the folds (projections, at init), as database/sql's drivers
// register: this package cannot import it.
var Refold func(tx *Tx, from uint64) error

// inPending runs fn in o's pending transaction, begun if none is open. If
// fn fails (or panics) the transaction is rolled back, pending commits
// and all.
func (l *Store) inPending(o *openFile, fn func(*bolt.Tx) error) error {
	return guard(func() error {
		if err := l.openPending(o); err != nil {
			return err
		}
		btx, ok := o.pend, false
		defer func() {
			if !ok {
				btx.Rollback()
				o.pend = nil
			}
		}()
		err := fn(btx)
		ok = err == nil
		return err
	})
}

// openPending makes sure o has its pending transaction open, on the file
// it began from: one the file changed under (another file copied over it,
// samePending) is rolled back and begun again, which checks the file.
func (l *Store) openPending(o *openFile) error {
	if o.pend != nil && !l.samePending(o) {
		o.pend.Rollback()
		o.pend = nil
	}
	if o.pend == nil {
		return l.beginPending(o)
	}
	return nil
}

// beginPending begins o's write transaction: the file checked (checkFile,
// as every commit's first transaction is), then the events of commits
// answered but not in the file (a transaction rolled back, or a bbolt
// commit that failed) ingested again, and folded (Refold). A fold that
// fails leaves them unfolded, for the next call's catch-up, which reports
// it: the transaction is begun again without it.
func (l *Store) beginPending(o *openFile) error {
	err := l.beginPendingFold(o, Refold)
	if err != nil && errors.Is(err, errRefold) {
		err = l.beginPendingFold(o, nil)
	}
	return err
}

// errRefold wraps a failure of Refold in beginPending.
var errRefold = errors.New("refold")

func (l *Store) beginPendingFold(o *openFile, refold func(*Tx, uint64) error) error {
	btx, err := o.db.Begin(true)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			btx.Rollback()
		}
	}()
	if err := l.checkFile(btx); err != nil {
		return err
	}
	if len(o.pendEvents) > 0 {
		tx := newTx(btx)
		tx.tail = &l.tail
		tx.now = l.opts.Now
		from := tx.head.Seq
		for _, raw := range o.pendEvents {
			// A bbolt commit that failed after its meta page was written
			// may have left some in the file: those are skipped, if the
			// file's bytes are theirs.
			if seq, in, err := tx.holds(raw); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrDamaged, l.path, err)
			} else if in {
				from = max(from, seq)
				continue
			}
			if _, err := tx.Ingest(raw); err != nil {
				return err
			}
		}
		if err := tx.flush(); err != nil {
			return err
		}
		if refold != nil {
			if err := refold(tx, from); err != nil {
				return fmt.Errorf("%w: %w", errRefold, err)
			}
		}
	}
	o.pend, ok = btx, true
	return nil
}

// commitPending commits o's open transaction, if any: unsynced within a
// generation, synced outside one.
func (l *Store) commitPending(o *openFile) error {
	btx := o.pend
	if btx == nil {
		return nil
	}
	o.pend = nil
	return guard(func() error {
		defer func() {
			if btx.DB() != nil {
				btx.Rollback()
			}
		}()
		return pendingCommit(btx)
	})
}

// settle commits in bbolt the commits of o answered before it (their
// records durable): the file then holds every event answered. On error
// they stay pending, in the journal, and the header holds for them.
//
// Pending commits exist only under a generation, whose pin keeps the
// checkpoint's pages: they are never committed without it while the
// header holds (the next open would write the checkpoint back over pages
// reused). Where settling fails the generation goes on, pinned, and no
// commit is left pending until one settles (settleErr); a Store that lets
// the file go meanwhile leaves them to the next open (dropGeneration).
func (l *Store) settle(o *openFile) error {
	if len(o.pendEvents) == 0 {
		return nil
	}
	if o.gen == nil {
		return errors.New("commits pending without their journal generation")
	}
	err := guard(func() error { return l.openPending(o) })
	if err == nil {
		err = l.commitPending(o)
	}
	if err != nil {
		o.settleErr = err
		return err
	}
	l.seen.committed(o.pendHead)
	l.settled(o)
	return nil
}

// settled records that o has nothing pending (bbolt committed it all),
// and wakes the reads waiting for that.
func (l *Store) settled(o *openFile) {
	o.pendEvents, o.settleErr = nil, nil
	l.unsettled.Store(false)
	l.wakeReads()
}

// wakeReads wakes the reads waiting in settleForRead.
func (l *Store) wakeReads() {
	next := make(chan struct{})
	if old := l.settledSig.Swap(&next); old != nil {
		close(*old)
	}
}

// settleWanted settles o's pending commits if a read waits for them:
// the committer, holding commitMu commit after commit while calls keep
// coming, settles on the reads' behalf between two commits (a read that
// waited for commitMu itself waited as long as the calls kept coming).
func (l *Store) settleWanted(o *openFile) {
	if l.readsWaiting.Load() > 0 && len(o.pendEvents) > 0 {
		if l.settle(o) != nil {
			// Woken, the reads try it themselves (settleForRead), and
			// are answered its error.
			l.wakeReads()
		}
	}
}

// dropGeneration lets o's generation go as the file is let go or closed,
// unended: its pending commits, which could not be settled, are left to
// the journal, whose header keeps holding, for the next open to recover
// (its pin held until now: the checkpoint's pages are intact). Reads of
// this process open the file (recovering them) rather than borrow o's.
func (l *Store) dropGeneration(o *openFile) {
	if o.pend != nil {
		o.pend.Rollback()
		o.pend = nil
	}
	if g := o.gen; g != nil {
		g.pin.Rollback()
		o.gen = nil
		o.db.NoSync, o.db.MaxSize = false, 0
	}
	if len(o.pendEvents) > 0 {
		o.pendEvents = nil
		l.dropped.Store(true)
		l.wakeReads()
	}
}

// settleForRead settles the commits pending, if any, before a read
// transaction of this Store begins: a read sees every call answered.
// Where the committer is busy it waits for it to settle them between two
// commits (settleWanted), at most wait (ErrLocked after); it never waits
// for commitMu itself (a read inside a call's own function, which holds
// it, would wait forever). own tells the read to open the file itself
// rather than borrow the committer's: commits answered were left to the
// journal (dropGeneration), which an open recovers.
func (l *Store) settleForRead(wait time.Duration) (own bool, err error) {
	if !l.unsettled.Load() {
		return false, nil
	}
	l.readsWaiting.Add(1)
	defer l.readsWaiting.Add(-1)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		sig := l.settledSig.Load()
		switch {
		case l.dropped.Load():
			return true, nil
		case !l.unsettled.Load():
			return false, nil
		case l.commitMu.TryLock():
			defer l.commitMu.Unlock()
			if l.dropped.Load() {
				return true, nil
			}
			if o := l.open; o != nil {
				return false, l.settle(o)
			}
			return false, nil
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		// Woken when the committer settles; or looked at again soon (it
		// may have gone idle between a commit and its next, or held the
		// commit mutex only to find its idle spell not over: no settle,
		// no signal).
		select {
		case <-*sig:
		case <-time.After(readLookAgain):
		case <-timer.C:
			return false, fmt.Errorf("%w: calls kept the committer busy past the lock timeout while a read waited for the commits before it to be committed", ErrLocked)
		}
	}
}

// settleQuiet settles o's pending commits once none came for settleIdle;
// it tells how long to wait before looking again (0: nothing pending).
// It never waits for a commit (a call committing directly): it looks
// again later.
func (l *Store) settleQuiet(o *openFile) time.Duration {
	if !l.unsettled.Load() {
		return 0
	}
	if !l.commitMu.TryLock() {
		return settleIdle
	}
	defer l.commitMu.Unlock()
	if len(o.pendEvents) == 0 {
		return 0
	}
	if wait := settleIdle - time.Since(o.pendAt); wait > 0 {
		return wait
	}
	if err := l.settle(o); err != nil {
		o.broken = true
	}
	return 0
}

// samePending tells whether o's file still holds, committed, the ledger
// and head its pending transaction began from (checkFile saw them): bbolt
// reads the pages the transaction has not copied from the file, and a
// file copied over in place (the same inode: checkSameFile) would mix
// another ledger's pages into it. Each transaction that begins checks
// the file; this is that check for the commits that go on in one, by a
// read transaction (it sees the meta page the file holds now).
func (l *Store) samePending(o *openFile) bool {
	rtx, err := o.db.Begin(false)
	if err != nil {
		return false
	}
	defer rtx.Rollback()
	if rtx.ID() != o.pend.ID()-1 || checkFormat(rtx) != nil {
		return false
	}
	id, head := fileHead(rtx)
	l.seen.mu.Lock()
	defer l.seen.mu.Unlock()
	return bytes.Equal(id, l.seen.id) && head == l.seen.head
}

// mayPend tells whether a commit on o whose record is durable may be left
// pending: not after a settle failed until one succeeds, nor where the
// file has no room for bbolt's later commit of it (roomFor), nor where
// its record may be found by no open — the file has another name (an
// open through it sees another journal) or the journal was removed or
// replaced at its path (o's generation writes to an unlinked file).
func (l *Store) mayPend(o *openFile) bool {
	if l.noPending || o.settleErr != nil || o.linked || !l.roomFor(o) {
		return false
	}
	st, err := statFile(o.gen.f)
	return err == nil && st.links > 0
}

// holds tells whether the file already holds the event raw (its stored
// bytes at its seq: in), and its seq; false for one past the head. An
// event that does not decode, or a seq at or below the head holding other
// bytes, is an error (the callers' damage).
func (tx *Tx) holds(raw []byte) (seq uint64, in bool, err error) {
	r, err := ledger.DecodeRecord(raw)
	if err != nil {
		return 0, false, fmt.Errorf("an event does not decode: %v", err)
	}
	if r.Seq > tx.head.Seq {
		return r.Seq, false, nil
	}
	got, err := tx.Event(r.Seq)
	if err != nil || !bytes.Equal(got.Raw, raw) {
		return r.Seq, false, fmt.Errorf("event %d is held otherwise by the file", r.Seq)
	}
	return r.Seq, true, nil
}

package boltstore

import (
	"bytes"
	"time"

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
//     open in this boot ingests them (settleJournal, recovery.replay), as
//     an open in another boot ingests those past the checkpoint;
//   - a bbolt commit of them that fails leaves the header holding (it is
//     never retired while events it holds are missing from the file):
//     the Store tries again before its next commit, or leaves them to the
//     next open.

// settleIdle is how long the committer leaves commits pending without a
// new one: a process killed later has left its file whole. (A variable:
// tests keep commits pending.)
var settleIdle = time.Millisecond

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
		if o.pend != nil && !l.samePending(o) {
			// The file changed under the transaction (another file
			// copied over it): begun again, the file is checked.
			o.pend.Rollback()
			o.pend = nil
		}
		if o.pend == nil {
			if err := l.beginPending(o); err != nil {
				return err
			}
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

// beginPending begins o's write transaction: the file checked (checkFile,
// as every commit's first transaction is), then the events of commits
// answered but not in the file (a transaction rolled back, or a bbolt
// commit that failed) ingested again.
func (l *Store) beginPending(o *openFile) error {
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
			if _, err := tx.Ingest(raw); err != nil {
				return err
			}
		}
		if err := tx.flush(); err != nil {
			return err
		}
		if Refold != nil {
			if err := Refold(tx, from); err != nil {
				return err
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
func (l *Store) settle(o *openFile) error {
	if len(o.pendEvents) == 0 {
		return nil
	}
	if o.pend == nil {
		if err := guard(func() error { return l.beginPending(o) }); err != nil {
			return err
		}
	}
	if err := l.commitPending(o); err != nil {
		return err
	}
	l.seen.committed(o.pendHead)
	o.pendEvents = nil
	l.unsettled.Store(false)
	return nil
}

// settleForRead settles the commits pending, if any, before a read
// transaction of this Store begins: a read sees every call answered.
func (l *Store) settleForRead() error {
	if !l.unsettled.Load() {
		return nil
	}
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if o := l.open; o != nil {
		return l.settle(o)
	}
	return nil
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

// abandon rolls back o's open transaction, if any: what it held that was
// answered stays in the journal (pendEvents, and the header's records).
// With the header, it lets the generation go, unretired, as endGeneration
// does when settling failed.
func (l *Store) abandon(o *openFile) {
	if o.pend != nil {
		o.pend.Rollback()
		o.pend = nil
	}
	if g := o.gen; g != nil && len(o.pendEvents) > 0 {
		o.broken = true
		g.pin.Rollback()
		o.gen = nil
		o.db.NoSync, o.db.MaxSize = false, 0
	}
}

// restore commits, synced, the commits answered that a generation let go
// unsettled (abandon) — its header still holding for them — and then
// retires that header: from the same Store, whose file stayed open (the
// held file); a Store that let its file go leaves them to the next open.
func (l *Store) restore(o *openFile) error {
	if len(o.pendEvents) == 0 || o.gen != nil {
		return nil
	}
	if l.syncFailed != nil {
		return l.syncFailedErr()
	}
	if err := l.settle(o); err != nil {
		return err
	}
	l.stale = true
	return l.retireStale(o)
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

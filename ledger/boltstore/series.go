package boltstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// errSeriesAppend: a transaction of a series appended, which a series does
// not do (its transactions would each need the replicated log's
// compare-and-append, retried apart from the others).
var errSeriesAppend = errors.New("a transaction of a series appended events")

// UpdateSeries runs fn in write transactions, one after another, each
// committed (durably) before the next begins, until fn reports done, all
// in one hold of the file: no other process, and no other Update of this
// Store, commits between them, so the states between them are seen by
// nobody else — unless the process dies in between: each must leave a
// state the next start can recover from (a rebuild drops the projections
// in the first, marking them missing, copies the new ones in over the
// next, and marks them complete in the last). Pages the earlier
// transactions free are reused by the later ones, as long as no read
// transaction of this Store that began before them is still open (bbolt
// keeps what such a reader may see): a Store's own reads are its caller's
// to keep out meanwhile. The transactions do not append. It stops at the
// first transaction fn fails, rolled back (the ones before it stay
// committed), and returns its error; held is how long the file was held
// for them, from the first transaction's start to the last one's commit.
func (l *Store) UpdateSeries(fn func(*Tx) (done bool, err error)) (held time.Duration, err error) {
	if l.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	r := &request{series: fn, done: make(chan error, 1), deadline: time.Now().Add(l.opts.LockTimeout)}
	err = l.send(r)
	return r.held, err
}

// commitSeries runs the transactions of r, a series, on o, one after
// another, and answers r. It returns the error of a commit that failed
// (not of the series' own function), as commit does.
func (l *Store) commitSeries(o *openFile, r *request) error {
	if err := l.checkSameFile(o); err != nil {
		r.done <- err
		return err
	}
	start := time.Now()
	var err, ferr error
	for done := false; !done; {
		var head ledger.Head
		err = update(o.db, func(btx *bolt.Tx) error {
			tx, _, err := l.writeTx(o, btx, false)
			if err != nil {
				return err
			}
			ferr = safeRun(func(tx *Tx) (err error) {
				done, err = r.series(tx)
				return err
			}, tx)
			if ferr == nil && len(tx.appended) > 0 {
				ferr = errSeriesAppend
			}
			if ferr != nil {
				return ferr
			}
			head = tx.head
			return tx.flush()
		})
		if err != nil {
			break
		}
		l.seen.committed(head)
	}
	r.held = time.Since(start)
	r.done <- err
	if ferr != nil {
		return nil
	}
	return err
}

// writeTx begins a commit's Tx on btx, of o: the file checked, the Store's leaf
// hashes and clock, a little of the trash freed, and what a replicated log
// holds past the file's head ingested (ingested reports whether it held
// any).
func (l *Store) writeTx(o *openFile, btx *bolt.Tx, checked bool) (tx *Tx, ingested bool, err error) {
	if !checked {
		if err := l.checkFile(btx); err != nil {
			return nil, false, err
		}
	}
	tx = newTx(btx)
	tx.file = o.file
	tx.tail = &l.tail
	tx.now = l.opts.Now
	tx.noAppend = l.opts.NoAppend
	// Free a little of what rebuilds discarded: a bounded cost, nothing
	// once the trash is empty.
	if _, err := tx.emptyTrash(128 << 10); err != nil {
		return nil, false, err
	}
	if l.opts.Replica != nil {
		before := tx.head.Seq
		if err := l.opts.Replica.CatchUp(tx); err != nil {
			return nil, false, fmt.Errorf("catch up with the replicated log: %w", err)
		}
		ingested = tx.head.Seq > before
	}
	return tx, ingested, nil
}

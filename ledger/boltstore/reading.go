package boltstore

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Reading is a run of read transactions of a Store (a rebuild's chunk
// reads) that keeps the file open between them, as the committer keeps it
// between commits (keep): for as long as no other process waits for it,
// up to quietHold, rather than open, lock, map and close it once per
// transaction. Where the Store has the file open already (Options.Hold, or
// its committer's hold), its transactions are the Store's View. It
// releases the pages each transaction mapped, as closing the file did.
// It looks for a waiting process after each transaction and whenever its
// owner polls (Poll; Wait while the owner waits): a process that begins
// waiting while the owner works between transactions (a rebuild decodes
// and prepares a chunk: a few ms) waits until then. A Reading is for one
// goroutine; Close it before the Store commits again (the committer would
// wait for its lock until it polls).
type Reading struct {
	l *Store
	o *openFile // the file kept open; nil: none
}

// Reading begins a run of read transactions of l.
func (l *Store) Reading() *Reading { return &Reading{l: l} }

// View runs fn in a read transaction, as Store.View does.
func (r *Reading) View(fn func(*Tx) error) error {
	if r.o != nil && !r.l.keep(r.o) {
		r.Close()
	}
	if r.o == nil && r.l.held == nil {
		if db, _, done := r.l.shared.borrow(); db != nil {
			done()
			return r.l.View(fn)
		}
		db, file, err := r.l.openDB(true, r.l.opts.LockTimeout)
		if err != nil {
			return err
		}
		r.o = &openFile{db: db, file: file, start: time.Now()}
	}
	if r.o == nil {
		return r.l.View(fn)
	}
	err := located(r.o.db, r.o.file, guard(func() error {
		return r.o.db.View(func(btx *bolt.Tx) error {
			defer releaseMapped(btx)
			// The file opened again may be another than the one the
			// Store has been using (another ledger, or an older copy,
			// moved over the path): refused as a commit refuses it
			// (ErrReplaced), not read on from where the last one ended
			// (a rebuild took that for a broken hash chain: damage).
			if err := r.l.checkLedger(btx); err != nil {
				return err
			}
			return fn(newTx(btx))
		})
	}))
	if err != nil {
		r.o.broken = true
	}
	// One that began waiting meanwhile has the file now, not after what
	// the caller does before its next transaction.
	r.Poll()
	return err
}

// Poll lets the file go if the Reading may no longer keep it (another
// process waits, or it has kept it quietHold).
func (r *Reading) Poll() {
	if r.o != nil && !r.l.keep(r.o) {
		r.Close()
	}
}

// Wait is what a reader waiting between its transactions selects on, to
// Poll meanwhile: a channel that fires after pollWant while the file is
// kept open; nil (never) otherwise.
func (r *Reading) Wait() <-chan time.Time {
	if r.o == nil {
		return nil
	}
	return time.After(pollWant)
}

// Close lets the file go, if the Reading kept it. The Reading may go on:
// its next View opens the file again.
func (r *Reading) Close() error {
	if r.o == nil {
		return nil
	}
	err := r.o.db.Close()
	r.o = nil
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

package boltstore

import (
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// UpdateEach runs fn in one write transaction after another, each durable
// (committed as Update commits) before the next begins, until fn returns
// done or an error; committed, if set, is called after each commit. It is
// for long work done in bounded steps, such as a rebuild's chunks: as many
// Update calls would, it lets other processes (and this one's own calls)
// have the file between two steps — but only when one is waiting for it.
// While none is, it keeps the file open rather than reopen it, reload its
// free-page list and fault its pages in again for every step. Where it
// cannot tell (othersWaiting), it lets the file go after every step.
//
// fn's error is returned as it is, its transaction rolled back; a failed
// commit is returned as Update returns it.
func (l *Store) UpdateEach(fn func(*Tx) (done bool, err error), committed func()) error {
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	if l.held != nil {
		// The file stays open anyway; the group commit interleaves this
		// process's calls with the steps.
		for {
			var done bool
			err := l.Update(func(tx *Tx) (err error) { done, err = fn(tx); return err })
			if err != nil {
				return err
			}
			if committed != nil {
				committed()
			}
			if done {
				return nil
			}
		}
	}
	for {
		var done, yielded bool
		err := l.withDB(false, func(db *bolt.DB, file *os.File) error {
			for {
				r := &request{fn: func(tx *Tx) (err error) { done, err = fn(tx); return err },
					done: make(chan error, 1), deadline: time.Now().Add(l.opts.LockTimeout)}
				l.commit(db, file, []*request{r})
				if err := <-r.done; err != nil {
					return err
				}
				if committed != nil {
					committed()
				}
				if done {
					return nil
				}
				if othersWaiting(file) {
					yielded = true
					return nil
				}
			}
		})
		if err != nil || done {
			return err
		}
		if yielded {
			// The kernel wakes a waiter when the lock is released but
			// does not hand it over: give it the time to take it.
			time.Sleep(yieldPause)
		}
	}
}

// yieldPause is how long UpdateEach leaves the file to a waiting process
// before it asks for it again.
const yieldPause = time.Millisecond

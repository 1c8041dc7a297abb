package boltstore

import (
	"os"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// sharedDB is the file the committer has open in the shared-file mode,
// lent to this process's read transactions: opening the file beside it
// would wait for the committer's own lock. bbolt runs read transactions
// alongside the write transaction on one handle; the committer closes the
// handle only once every borrower has returned it.
type sharedDB struct {
	mu    sync.Mutex
	free  sync.Cond // signalled when users drops to 0
	db    *bolt.DB
	file  *os.File
	users int
}

// set lends db, opened from file, until unset.
func (s *sharedDB) set(db *bolt.DB, file *os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free.L = &s.mu
	s.db, s.file = db, file
}

// unset stops lending the handle and waits until no borrower uses it.
func (s *sharedDB) unset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.db, s.file = nil, nil
	for s.users > 0 {
		s.free.Wait()
	}
}

// borrow returns the lent handle (nil if none) and a func returning it.
func (s *sharedDB) borrow() (*bolt.DB, *os.File, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil, nil, nil
	}
	s.users++
	return s.db, s.file, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.users--; s.users == 0 {
			s.free.Broadcast()
		}
	}
}

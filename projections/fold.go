package projections

import (
	"fmt"
	"maps"
	"slices"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// folder folds records into the projections of one transaction. A batch
// folder (CatchUp, Fold) keeps the tasks and sessions it reads decoded and
// writes the changed ones back once, in flush: a rebuild's chunk touches the
// same few hundred recent tasks thousands of times, and decoding and
// re-encoding them for every event was most of its cost. The values written
// are the same either way, so a batch fold and record-by-record Apply leave
// identical projections.
type folder struct {
	tx    *boltstore.Tx
	root  func(uint64) (ledger.Hash, error)   // the root of the folded log at a size
	event func(uint64) (ledger.Record, error) // an earlier event of the folded log

	// Batch folders only (nil maps otherwise): decoded records, and the
	// numbers of those changed since the last flush.
	tasks         map[uint64]*Task
	sessions      map[uint64]*Session
	dirtyTasks    map[uint64]bool
	dirtySessions map[uint64]bool
	indexBuf      *writeBuffer // the full-text index's writes (knowledge.go)
}

func newFolder(tx *boltstore.Tx, root func(uint64) (ledger.Hash, error), event func(uint64) (ledger.Record, error), batch bool) *folder {
	f := &folder{tx: tx, root: root, event: event}
	if batch {
		f.tasks, f.dirtyTasks = map[uint64]*Task{}, map[uint64]bool{}
		f.sessions, f.dirtySessions = map[uint64]*Session{}, map[uint64]bool{}
		f.indexBuf = newWriteBuffer()
	}
	return f
}

// task returns task number n; ok is false if there is none.
func (f *folder) task(n uint64) (*Task, bool, error) { return load(f.tx, f.tasks, spTasks, n) }

// load returns record number n of space, from cache if it holds it (a
// batch folder's), else decoded and then kept there; ok is false if there
// is none.
func load[T any](tx *boltstore.Tx, cache map[uint64]*T, space string, n uint64) (v *T, ok bool, err error) {
	if v, ok := cache[n]; ok {
		return v, true, nil
	}
	sp, err := tx.Space(space)
	if err != nil {
		return nil, false, err
	}
	v = new(T)
	if ok, err = getRecord(sp, u64(n), v); err != nil || !ok {
		return nil, false, err
	}
	if cache != nil {
		cache[n] = v
	}
	return v, true, nil
}

// setTask stores task number n (in a batch, at flush).
func (f *folder) setTask(n uint64, t *Task) error {
	if f.tasks != nil {
		f.tasks[n], f.dirtyTasks[n] = t, true
		return nil
	}
	tasks, err := f.tx.Space(spTasks)
	if err != nil {
		return err
	}
	return putRecord(tasks, u64(n), t)
}

// session returns session number n; ok is false if there is none.
func (f *folder) session(n uint64) (*Session, bool, error) {
	return load(f.tx, f.sessions, spSessions, n)
}

// setSession stores session number n (in a batch, at flush).
func (f *folder) setSession(n uint64, s *Session) error {
	if f.sessions != nil {
		f.sessions[n], f.dirtySessions[n] = s, true
		return nil
	}
	return putSession(f.tx, n, s)
}

// flush writes back what a batch changed, in key order.
func (f *folder) flush() error {
	if len(f.dirtyTasks) > 0 {
		tasks, err := f.tx.Space(spTasks)
		if err != nil {
			return err
		}
		for _, n := range slices.Sorted(maps.Keys(f.dirtyTasks)) {
			if err := putRecord(tasks, u64(n), f.tasks[n]); err != nil {
				return err
			}
		}
		clear(f.dirtyTasks)
	}
	for _, n := range slices.Sorted(maps.Keys(f.dirtySessions)) {
		if err := putSession(f.tx, n, f.sessions[n]); err != nil {
			return err
		}
	}
	clear(f.dirtySessions)
	return f.indexBuf.flush()
}

// isWithin is IsWithin through the folder's decoded tasks.
func (f *folder) isWithin(id, ancestor string) (bool, error) {
	return isWithin(id, ancestor, func(id string) (Task, bool, error) {
		n, valid := domain.ParseID(domain.TaskPrefix, id)
		if !valid {
			return Task{}, false, nil
		}
		t, ok, err := f.task(n)
		if t == nil {
			return Task{}, ok, err
		}
		return *t, ok, err
	})
}

// putNumbered stores rec, the projection of the object with the given id
// (prefix and a number), in space under its number, after checking the id
// and advancing the id counter; numbers only grow, so the space's pages are
// packed full. It returns the number.
func putNumbered(f *folder, prefix, counter, space, id string, rec any) (uint64, error) {
	n, ok := domain.ParseID(prefix, id)
	if !ok {
		return 0, fmt.Errorf("bad id %q", id)
	}
	if err := seenNumber(f.tx, counter, n); err != nil {
		return 0, err
	}
	sp, err := f.tx.Space(space)
	if err != nil {
		return 0, err
	}
	sp.AppendOnly()
	return n, putRecord(sp, u64(n), rec)
}

// getNumbered reads into rec what putNumbered stored for id; ok is false if
// there is none (or id is not of that prefix).
func getNumbered(tx *boltstore.Tx, prefix, space, id string, rec any) (ok bool, err error) {
	n, valid := domain.ParseID(prefix, id)
	if !valid {
		return false, nil
	}
	sp, err := tx.Space(space)
	if err != nil {
		return false, err
	}
	return getRecord(sp, u64(n), rec)
}

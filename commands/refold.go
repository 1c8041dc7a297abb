package commands

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// A rebuild cut off between the transactions of its swap (its process
// killed) leaves the file with no projections (projections.ErrNoProjections);
// the log is whole. A running process that finds them missing folds them
// again from the log, as its start-up would (Rebuild: into a scratch file
// while the other processes keep working, then swapped in, the need
// checked again inside the swap's hold, so that two processes refolding
// at once do not both swap), and runs the call again, once (more if
// another cut-off rebuild dropped them again meanwhile). Projections
// of another version are left as they are: the call is refused
// (ErrVersionChanged), or two binaries would rebuild them in turn.

// refolding lets one refold run at a time in a process: the calls that
// find the projections missing meanwhile wait for it. A Service shares it
// with its guests. A refold that failed (a log that does not fold) is not
// tried again for refoldRetryAfter: each try reads the whole log, and
// every call would start one. One that found the file held by another
// process past the lock timeout (boltstore.ErrLocked) is tried again at
// the next call, and that call is refused as locked.
type refolding struct {
	mu       sync.Mutex
	run      *refoldRun // the refold running, nil if none
	failed   time.Time  // when the last refold failed (zero: it did not)
	failedBy error      // why
}

const refoldRetryAfter = 30 * time.Second

// refoldRun is one refold: err is set before done is closed.
type refoldRun struct {
	done chan struct{}
	err  error
}

// update runs fn in a write transaction (boltstore.Store.Update). If fn
// finds no projections there, it folds them again (refold) and runs fn
// once more; if another cut-off rebuild dropped them again meanwhile, the
// same again, up to refoldTries refolds, each of which succeeded.
func (s *Service) update(ctx context.Context, fn func(*boltstore.Tx) error) error {
	err := s.l.UpdateWithin(s.lockWait, fn)
	for try := 0; try < refoldTries && errors.Is(err, projections.ErrNoProjections); try++ {
		if rerr := s.refold(ctx); errors.Is(rerr, boltstore.ErrLocked) {
			// Not the log: another process kept the file too long.
			return rerr
		} else if rerr != nil {
			return fmt.Errorf("%w; folding them again failed: %v", err, rerr)
		}
		err = s.l.UpdateWithin(s.lockWait, fn)
	}
	return err
}

// refoldTries bounds the refolds one call waits for: each follows a
// rebuild cut off after the one before.
const refoldTries = 3

// refold folds the projections again from the log if the file holds
// none, or waits for the refold this process runs already; it returns
// once they are back. The refold goes on if ctx ends first.
func (s *Service) refold(ctx context.Context) error {
	r := s.refolding
	r.mu.Lock()
	run := r.run
	if run == nil && !r.failed.IsZero() && time.Since(r.failed) < refoldRetryAfter {
		err := r.failedBy
		r.mu.Unlock()
		return fmt.Errorf("%w (a failed refold is tried again after %v)", err, refoldRetryAfter)
	}
	if run == nil {
		run = &refoldRun{done: make(chan struct{})}
		r.run = run
		go func() {
			run.err = s.refoldMissing()
			r.mu.Lock()
			r.run = nil
			r.failed = time.Time{}
			if run.err != nil && !errors.Is(run.err, boltstore.ErrLocked) {
				r.failed, r.failedBy = time.Now(), run.err
			}
			r.mu.Unlock()
			close(run.done)
		}()
	}
	r.mu.Unlock()
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refoldMissing rebuilds the projections if the file holds none (another
// process may have put them back already).
func (s *Service) refoldMissing() error {
	var version uint64
	err := s.l.View(func(tx *boltstore.Tx) (err error) {
		version, _, err = projections.State(tx)
		return err
	})
	if err != nil || version != 0 {
		return err
	}
	s.log.Warn("the ledger file holds no projections (a rebuild that did not finish dropped them): folding them again from the log")
	start := time.Now()
	res, err := Rebuild(s.l, projections.RebuildOptions{Progress: s.progress})
	if err != nil {
		s.log.Error("folding the projections again failed", "err", err)
		return err
	}
	s.log.Info("projections folded again", "applied", res.Applied, "swapped", res.Swapped, "ms", time.Since(start).Milliseconds())
	return nil
}

// progress logs how far a rebuild of the projections is.
func (s *Service) progress(done, total uint64) {
	s.log.Info("rebuilding projections", "done", done, "total", total)
}

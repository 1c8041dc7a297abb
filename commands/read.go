package commands

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// A read-only call does its work in a read transaction, not in the shared
// write commit: it does not hold up the calls committing beside it (in a
// server that holds the file, reads run alongside commits; in the shared
// file mode, beside other readers), and its tool.called event then goes
// into a commit of its own that costs what any audit record costs. Its
// reply is the state at the read's snapshot; the tool.called event, later
// in the log, records the reply's hash as always.

// readsAside reports whether call runs in a read transaction of its own.
// In the shared-file mode (where a read transaction opens the file unless
// this process's committer has it open, boltstore's shared.go) only the
// reads whose work grows with the ledger (Command.heavy) are read aside; a
// light read is cheaper inside the commit that records it.
func (s *Service) readsAside(call Call, first *bool) bool {
	c := call.Command
	if c == nil || c.mutates || call.Invalid != nil || s.firstPending(first) {
		return false
	}
	return s.l.Held() || c.heavy
}

// errFallBack: the read could not be answered aside (projections behind
// the log, or a failure the write path reports); run the call as a write.
var errFallBack = errors.New("answer through the write path")

// doRead answers call from a read transaction and records it in a commit
// of its own. handled is false when the call must go through the write
// path instead (which then answers it, and reports any failure).
func (s *Service) doRead(ctx context.Context, call Call, actor string, args callArgs, start time.Time) (reply []byte, handled bool, err error) {
	if !s.l.Held() {
		// A read transaction keeps the file from other processes (its own
		// shared lock, or the committer's open file, which the committer
		// cannot let go while it is read), and writers wait for it: one
		// process's reads go one at a time, so they cannot overlap and keep
		// the writers out together.
		s.readMu.Lock()
		defer s.readMu.Unlock()
	}
	var code string
	err = s.l.ViewWithin(s.lockWait, func(lt *boltstore.Tx) error {
		version, applied, err := projections.State(lt)
		if err != nil || version != projections.Version || applied != lt.Head().Seq {
			return errFallBack // another process appended: fold first
		}
		result, herr := s.safeDispatch(ctx, &Tx{lt: lt, actor: actor, readOnly: call.ReadOnly}, call, args)
		if herr != nil && !isDomain(herr) {
			return errFallBack
		}
		// Encoded inside the transaction: the result may point into it.
		code, reply = call.Encode(result, herr)
		return nil
	})
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		// The file was not had within the lock timeout: the write path
		// would wait it out again (twice the timeout a call).
		return nil, true, s.storageError(call.Name, err)
	case err != nil:
		return nil, false, nil
	}
	sum := sha256.Sum256(reply)
	err = s.update(ctx, func(lt *boltstore.Tx) error {
		if _, err := projections.CatchUp(lt, 0); err != nil {
			return &funcError{err}
		}
		if revoked, err := s.tokenRevoked(lt, call); err != nil {
			return &funcError{err}
		} else if revoked {
			// Revoked since the read: its answer is not sent (the write
			// path refuses it, recorded). A funcError: not a failed commit.
			return &funcError{errFallBack}
		}
		if err := s.appendCall(&Tx{lt: lt, actor: actor}, call, args, start, code, sum); err != nil {
			return &funcError{err}
		}
		return nil
	})
	switch {
	case err == nil:
		return reply, true, nil
	case isStorage(err), errors.Is(err, boltstore.ErrDamaged), errors.Is(err, projections.ErrVersionChanged):
		return nil, true, s.storageError(call.Name, err)
	}
	return nil, false, nil
}

// safeDispatch runs a read-only handler, turning a panic into errFallBack
// (the write path runs the call again, and reports it as an internal error).
func (s *Service) safeDispatch(ctx context.Context, tx *Tx, call Call, args callArgs) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, fmt.Errorf("%w: panic: %v", errFallBack, v)
		}
	}()
	return s.dispatch(ctx, tx, call, args)
}

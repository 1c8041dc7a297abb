package jetstream

import (
	"context"
	"errors"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go/jetstream"
)

// Follow keeps store's local copy caught up with the stream until ctx ends,
// for the reads (View) of a node that may not write for a while: every
// interval it asks the stream for its last sequence and, if that is past
// the local head, runs a write transaction that catches up and then calls
// fold (if not nil) in it, e.g. to fold projections over what came in. It
// returns ctx's error, or the first integrity error or boltstore.ErrLogGone:
// a node that found the stream damaged or deleted stops following. Other
// errors (a server down) are logged and tried again.
func (r *Replica) Follow(ctx context.Context, store *boltstore.Store, interval time.Duration, fold func(*boltstore.Tx) error) error {
	if fold == nil {
		fold = func(*boltstore.Tx) error { return nil }
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		info, err := r.Info(ctx)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return r.gone()
		}
		if err == nil && r.unsafeErr() == nil {
			r.noteKnown(info.State.LastSeq)
			var local uint64
			store.View(func(tx *boltstore.Tx) error { local = tx.Head().Seq; return nil })
			if info.State.LastSeq > local {
				err := store.Update(fold)
				if errors.As(err, new(*ledger.IntegrityError)) || errors.Is(err, boltstore.ErrLogGone) {
					return err
				}
				if err != nil && ctx.Err() == nil {
					r.opts.Logf("follow stream %s: %v (trying again)", r.opts.Stream, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

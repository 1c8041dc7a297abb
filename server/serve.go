package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/ledger/jetstream"
)

// Ledger is the ledger file Serve opens and the tools it serves on it.
type Ledger struct {
	DB      string           // the ledger file, created if missing
	Skills  string           // the skills folder (Tools)
	Version string           // the binary's version (Tools)
	Tools   commands.Options // the tools' options; Logger is Options.Logger
	// Replica, if set, is the replicated log the file is a copy of
	// (boltstore.Options.Replica); NoSync then skips the copy's fsync.
	Replica *jetstream.Replica
	NoSync  bool
}

// Serve is logbook server: it listens (opts.Listen, unless opts.Listener
// is set) and loads its TLS certificate before anything else, so that no
// ledger file is created for a server that cannot start; opens led.DB, held for its lifetime; loads the
// tools on it; and runs the server (Run, with opts' Store and MCP set here)
// until ctx ends. It closes the ledger before it returns.
func Serve(ctx context.Context, led Ledger, opts Options) error {
	if opts.Listener == nil {
		ln, err := net.Listen("tcp", cmp.Or(opts.Listen, DefaultListen))
		if err != nil {
			return err
		}
		opts.Listener = ln
	}
	defer opts.Listener.Close()
	if opts.TLSCert != "" || opts.TLSKey != "" {
		var err error
		if opts.certificate, err = loadCertificate(opts.TLSCert, opts.TLSKey, time.Now(), cmp.Or(opts.Logger, slog.Default())); err != nil {
			return err
		}
	}
	so := boltstore.Options{Create: true, Hold: true}
	if led.Replica != nil {
		// One commit is one atomic batch: its events (a few per call) stay
		// well below the servers' limit.
		so.Replica, so.NoSync, so.MaxBatch = led.Replica, led.NoSync, jetstream.MaxBatch/8
	}
	l, err := boltstore.Open(led.DB, so)
	if err != nil {
		return err
	}
	defer l.Close()
	if led.Replica != nil {
		// The copy catches up before anything is served (an Update
		// ingests what the stream holds past it first; the tools then fold
		// it), and must agree with the stream: one holding events the
		// stream no longer has (deleted and made again, or cut) is refused
		// now, rather than serve reads from it and fail every write. (A
		// server that does not answer is not a verdict: the calls then
		// catch up.)
		err := l.Update(func(*boltstore.Tx) error { return nil })
		if errors.As(err, new(*ledger.IntegrityError)) {
			// Nothing was committed: a marker this start made is taken
			// back, and the file is as it was (a plain ledger given to a
			// node by mistake stays usable alone).
			changed := "Nothing was changed"
			if uerr := l.UnmarkForked(); uerr != nil {
				changed = fmt.Sprintf("Nothing was written to the copy, but it stays marked as the stream's (%v)", uerr)
			}
			return fmt.Errorf("the local copy %s and the stream disagree: %w. %s; which to keep is yours to decide: "+
				"the stream's (move the copy aside; the node then starts a new copy from the stream) or the copy's "+
				"(logbook verify it, then logbook migrate --from it into a new stream)", led.DB, err, changed)
		}
		if err != nil && opts.Logger != nil {
			opts.Logger.Warn("catching up with the stream before serving", "err", err)
		}
	}
	led.Tools.Logger = opts.Logger
	if opts.MCP, err = Tools(l, led.Skills, led.Version, led.Tools); err != nil {
		return err
	}
	opts.Store, opts.Replica = l, led.Replica
	if err := Run(ctx, opts); err != nil {
		return err
	}
	return l.Close()
}

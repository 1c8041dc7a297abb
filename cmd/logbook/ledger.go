package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/ledger/jetstream"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/server"
)

// The commands that copy or rebuild a ledger: snapshot, rebuild, migrate.

func snapshot(c *call) func() error {
	c.ledgerFlags()
	out := c.fs.String("out", "", "the new file to write (required; must not exist)")
	c.jsonFlag("print JSON")
	return func() error {
		if *out == "" {
			return errors.New("--out is required")
		}
		if err := checkPath("--out", *out, false); err != nil {
			return err
		}
		opts, err := c.openOptions(true)
		if err != nil {
			return err
		}
		boundMemory(heapLimit)
		res, err := server.Snapshot(c.ctx, *c.db, *out, server.SnapshotOptions{Open: opts,
			Copied: c.progress("snapshot: copy"), Folded: c.progress("snapshot: projections")})
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("--out %s exists; refusing to overwrite it", *out)
		}
		if errors.Is(err, boltstore.ErrDiskFull) {
			// Not the temporary file's name, which the operator never gave.
			return fmt.Errorf("--out %s: %w (or the file may grow no more): no room for the copy; nothing was written", *out, boltstore.ErrDiskFull)
		}
		if err != nil {
			return err
		}
		return c.print(res, func() error {
			_, err := fmt.Fprintf(c.stdout, "snapshot of %d events (head %s, root %s) written to %s; the source was held %.1f ms at most\n",
				res.Size, res.Head, res.Root, res.Out, res.LockedMS)
			return err
		})
	}
}

func rebuild(c *call) func() error {
	c.ledgerFlags()
	pastHead := c.fs.Bool("past-head", false, "rebuild even projections folded past the log's head — the log cut short (verify names the events gone) or their counter damaged —, which is otherwise refused: this wipes the one trace of such a cut")
	c.jsonFlag("print JSON")
	return func() error {
		var res server.Rebuilt
		err := c.with(false, func(l *boltstore.Store) (err error) {
			boundMemory(refoldHeapLimit)
			l.ReadAhead()
			if res, err = server.Rebuild(l, projections.RebuildOptions{PastHead: *pastHead, Progress: c.progress("rebuild")}); err == nil {
				err = l.Close()
			}
			return err
		})
		if err != nil {
			return err
		}
		return c.print(res, func() error {
			_, err := fmt.Fprintf(c.stdout, "rebuilt projections (version %d) from %d events in %.0f ms (%.0f events/s)\n",
				res.Version, res.Events, res.MS, res.EventsPerS)
			return err
		})
	}
}

func migrate(c *call) func() error {
	from := c.fs.String("from", "", "the ledger file to copy (required)")
	to := c.fs.String("to", "", "NATS servers: nats://HOST:PORT[,nats://HOST:PORT…] (required)")
	nf := jetstream.AddFlags(c.fs, c.getenv)
	c.jsonFlag("print JSON")
	return func() error {
		if *from == "" || *to == "" {
			return errors.New("--from FILE and --to nats://HOST:PORT are required")
		}
		if err := jetstream.CheckURLs(*to); err != nil {
			return fmt.Errorf("--to: %w", err)
		}
		if err := checkPath("--from", *from, true); err != nil {
			return err
		}
		src, err := openLedger(*from, boltstore.Options{ReadOnly: true}, onACopy(*from))
		if err != nil {
			return err
		}
		defer src.Close()
		rep, closeRep, err := c.openReplica(nf, *to)
		if err != nil {
			return err
		}
		defer closeRep()
		res, err := jetstream.Migrate(c.ctx, src, rep, c.progress("migrate: copy"))
		if err != nil {
			return err
		}
		return c.print(res, func() error {
			held := ""
			if res.Held > 0 {
				held = fmt.Sprintf(" (%d of them there before: a migrate run again)", res.Held)
			}
			_, err := fmt.Fprintf(c.stdout, "migrated %d events into stream %s%s\nhead %v\nroot %v (identical to the file's)\n",
				res.Size, res.Stream, held, res.Head, res.Root)
			return err
		})
	}
}

// openReplica connects to the servers at urls (comma-separated) and opens
// the stream f names. The returned close ends the replica and its
// connections.
func (c *call) openReplica(f *jetstream.Flags, urls string) (*jetstream.Replica, func(), error) {
	if f.Options.Stream == "" {
		return nil, nil, errors.New("--stream is required with a NATS store")
	}
	f.Dial.URLs, f.Dial.Name = urls, "logbook "+c.name
	f.Options.Logf = func(format string, args ...any) { fmt.Fprintf(c.stderr, c.name+": "+format+"\n", args...) }
	rep, closeRep, err := jetstream.Connect(c.ctx, f.Dial, f.Options)
	if err != nil {
		return nil, nil, err
	}
	return rep, closeRep, nil
}

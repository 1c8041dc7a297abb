package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

func init() {
	register("rebuild", "drop every projection and refold it from the log", rebuild)
}

// rebuildJSON is rebuild's --json output.
type rebuildJSON struct {
	Events     uint64  `json:"events"` // folded: seq 1..events
	Version    uint64  `json:"version"`
	MS         float64 `json:"ms"`
	EventsPerS float64 `json:"events_per_s"`
	FreeMS     float64 `json:"free_ms"` // freeing the old projections' pages, after the refold
}

func rebuild(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "rebuild", `Drop every projection (tasks, thoughts, sessions, skills) and refold it from the log, in
chunks, so agents keep working meanwhile. The log itself is never written. A server does
the same at start-up when the file's projection version is not the binary's.`)
	lf := addLedgerFlags(e, fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if done, err := parse(e, fs, args); done {
		return err
	}
	l, err := lf.open(false)
	if err != nil {
		return err
	}
	defer l.Close()
	boundMemory()
	prog := newProgress(e.stderr, "rebuild")
	start := time.Now()
	if err := commands.Rebuild(l, true, prog.report); err != nil {
		if errors.Is(err, projections.ErrNewerVersion) {
			return usageErr("rebuild: %v", err)
		}
		return ioErr("rebuild", err)
	}
	elapsed := time.Since(start)
	// The old projections were discarded at once and are freed a little
	// per transaction; free the rest now, still in short transactions.
	trashStart := time.Now()
	if err := l.EmptyTrash(); err != nil {
		return ioErr("rebuild", err)
	}
	var res rebuildJSON
	res.FreeMS = millis(time.Since(trashStart))
	if err := l.View(func(tx *boltstore.Tx) error {
		var err error
		res.Version, res.Events, err = projections.State(tx)
		return err
	}); err != nil {
		return ioErr("rebuild", err)
	}
	res.MS, res.EventsPerS = millis(elapsed), rate(res.Events, elapsed)
	if err := l.Close(); err != nil {
		return ioErr("rebuild", err)
	}
	if *asJSON {
		return writeJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "rebuilt projections (version %d) from %d events in %.0f ms (%.0f events/s)\n",
		res.Version, res.Events, res.MS, res.EventsPerS)
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/server"
)

func init() {
	register("snapshot", "copy a live ledger, consistently, for offline audit", snapshot)
}

// snapshotJSON is snapshot's --json output.
type snapshotJSON struct {
	Out      string      `json:"out"`
	Size     uint64      `json:"size"`
	Head     ledger.Hash `json:"head"`
	Root     ledger.Hash `json:"root"`
	LockedMS float64     `json:"locked_ms"` // the longest the source was held for the copy
}

func snapshot(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "snapshot", `Copy the ledger to a new file while agents keep writing: events and Merkle nodes (which
never change) in chunks of short read transactions, then the last events and the head in
one short read transaction. The copy's projections are refolded from its own log (they are
derived state; to check the live file's stored projections, run logbook verify on it).
The copy passes logbook verify and appears at --out only when complete.`)
	lf := addLedgerFlags(e, fs)
	out := fs.String("out", "", "the new file to write (required; must not exist)")
	asJSON := fs.Bool("json", false, "print JSON")
	if done, err := parse(e, fs, args); done {
		return err
	}
	if *out == "" {
		return usageErr("snapshot: --out is required")
	}
	if err := checkPath("--out", *out, false); err != nil {
		return err
	}
	if _, err := os.Lstat(*out); err == nil {
		return usageErr("snapshot: --out %s exists; refusing to overwrite it", *out)
	}
	boundMemory()
	// Written under a temporary name, renamed once its projections are built.
	tmp, err := os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".snapshot-*")
	if err != nil {
		return usageErr("snapshot: %v", err)
	}
	tmp.Close()
	os.Remove(tmp.Name())
	defer os.Remove(tmp.Name())
	rep, err := copyLedger(ctx, e, lf, tmp.Name())
	if err != nil {
		return err
	}
	res := snapshotJSON{Out: *out, Size: rep.Size, Head: rep.Head, LockedMS: millis(rep.Locked)}
	cp, err := boltstore.Open(tmp.Name(), boltstore.Options{})
	if err != nil {
		return ioErr("snapshot", err)
	}
	defer cp.Close()
	if err := commands.Rebuild(cp, true, newProgress(e.stderr, "snapshot: projections").report); err != nil {
		return ioErr("snapshot", err)
	}
	if err := cp.View(func(tx *boltstore.Tx) error {
		var err error
		res.Root, err = tx.Root(rep.Size)
		return err
	}); err != nil {
		return ioErr("snapshot", err)
	}
	if err := cp.Close(); err != nil {
		return ioErr("snapshot", err)
	}
	// Link, not rename: it fails rather than replace a file created at
	// --out meanwhile.
	if err := os.Link(tmp.Name(), *out); err != nil {
		if errors.Is(err, os.ErrExist) {
			return usageErr("snapshot: --out %s exists; refusing to overwrite it", *out)
		}
		if err := os.Rename(tmp.Name(), *out); err != nil {
			return usageErr("snapshot: %v", err)
		}
	}
	if *asJSON {
		return writeJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "snapshot of %d events (head %s, root %s) written to %s; the source was held %.1f ms at most\n",
		res.Size, res.Head, res.Root, res.Out, res.LockedMS)
	return nil
}

// copyLedger snapshots the ledger to dst: through the admin socket of a
// logbook server holding the file, if one answers there, else directly.
func copyLedger(ctx context.Context, e *env, lf *ledgerFlags, dst string) (boltstore.SnapshotReport, error) {
	abs, err := filepath.Abs(dst)
	if err != nil {
		return boltstore.SnapshotReport{}, usageErr("snapshot: %v", err)
	}
	rep, ok, err := server.SnapshotThroughServer(server.AdminSocketPath(*lf.db), abs)
	if ok {
		if err != nil {
			return rep, ioErr("snapshot (through the logbook server)", err)
		}
		return rep, nil
	}
	l, err := lf.open(true)
	if err != nil {
		return rep, err
	}
	defer l.Close()
	rep, err = l.Snapshot(ctx, dst, boltstore.SnapshotOptions{Progress: newProgress(e.stderr, "snapshot: copy").report})
	if err != nil {
		return rep, ioErr("snapshot", err)
	}
	return rep, nil
}

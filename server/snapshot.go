package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// SnapshotOptions tune Snapshot.
type SnapshotOptions struct {
	// Open is how the ledger file is opened when no server holds it.
	Open boltstore.Options
	// Copied and Folded, if set, report the progress of the copy and of the
	// copy's refold (done of total).
	Copied, Folded func(done, total uint64)
}

// Snapshotted is what Snapshot wrote, as logbook snapshot --json prints it.
type Snapshotted struct {
	Out      string      `json:"out"`
	Size     uint64      `json:"size"`
	Head     ledger.Hash `json:"head"`
	Root     ledger.Hash `json:"root"`
	LockedMS float64     `json:"locked_ms"` // the longest the source was held for the copy
}

// Snapshot copies the ledger file db, while agents keep writing, to the new
// file out, which must not exist: through the admin socket of a logbook
// server holding db, if one answers there, else directly
// (boltstore.Store.Snapshot). The copy's projections are refolded from its
// own log. The file appears at out only when complete, and never replaces
// a file there, even one created meanwhile (an error wrapping os.ErrExist,
// at once if out exists when it starts) — except on a file system without
// hard links, where the last step is a rename, which would replace a file
// created at out in the instant after the check.
func Snapshot(ctx context.Context, db, out string, opts SnapshotOptions) (Snapshotted, error) {
	res := Snapshotted{Out: out}
	if _, err := os.Lstat(out); err == nil {
		return res, fmt.Errorf("%s: %w", out, os.ErrExist)
	}
	// A node's copy was at out (moved aside, its marker left): the
	// snapshot, a ledger to use alone, would be taken for that copy and
	// refused to every writer but the node.
	if err := boltstore.CheckNodeCopy(out, ""); err != nil {
		return res, err
	}
	// Written under a temporary name, linked into place once its
	// projections are built.
	// Named after this process (boltstore.CreateOwnTemp), so a later
	// snapshot to out removes what a killed one left: this file, or
	// boltstore's copy named after it.
	dir, prefix := filepath.Dir(out), "."+filepath.Base(out)+".snapshot-"
	boltstore.RemoveDeadTemps(dir, prefix)
	boltstore.RemoveDeadTemps(dir, "."+prefix)
	tmp, err := boltstore.CreateOwnTemp(dir, prefix, "")
	if err != nil {
		return res, err
	}
	tmp.Close()
	os.Remove(tmp.Name())
	defer os.Remove(tmp.Name())
	abs, err := filepath.Abs(tmp.Name())
	if err != nil {
		return res, err
	}
	rep, ok, err := SnapshotThroughServer(db, AdminSocketPath(db), abs)
	switch {
	case !ok:
		rep, err = snapshotFile(ctx, db, tmp.Name(), opts)
	case err != nil:
		err = fmt.Errorf("through the logbook server: %w", err)
	}
	if err != nil {
		return res, err
	}
	res.Size, res.Head, res.LockedMS = rep.Size, rep.Head, millis(rep.Locked)
	cp, err := boltstore.Open(tmp.Name(), boltstore.Options{})
	if err != nil {
		return res, err
	}
	defer cp.Close()
	if _, err := commands.Rebuild(cp, projections.RebuildOptions{Force: true, Progress: opts.Folded}); err != nil {
		return res, err
	}
	if err := cp.View(func(tx *boltstore.Tx) error {
		var err error
		res.Root, err = tx.Root(rep.Size)
		return err
	}); err != nil {
		return res, err
	}
	if err := cp.Close(); err != nil {
		return res, err
	}
	// Link, not rename: it fails rather than replace a file created at out
	// meanwhile.
	err = os.Link(tmp.Name(), out)
	if err != nil && !errors.Is(err, os.ErrExist) {
		err = os.Rename(tmp.Name(), out)
	}
	return res, err
}

// snapshotFile copies the ledger file db to dst directly.
func snapshotFile(ctx context.Context, db, dst string, opts SnapshotOptions) (boltstore.SnapshotReport, error) {
	l, err := boltstore.Open(db, opts.Open)
	if err != nil {
		return boltstore.SnapshotReport{}, err
	}
	defer l.Close()
	// A copy refolds its projections from its log: of a log cut short, it
	// would verify clean, the trace of the cut (projections folded past the
	// head) left behind, as rebuild refuses to (projections.CheckFolded).
	if err := l.View(projections.CheckFolded); err != nil {
		return boltstore.SnapshotReport{}, err
	}
	return l.Snapshot(ctx, dst, boltstore.SnapshotOptions{Progress: opts.Copied})
}

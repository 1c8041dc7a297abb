package boltaudit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// Options tune Verify.
type Options struct {
	// Chunk is the number of events per read transaction, and per commit
	// of the refold; default 4096 (a refold's commit costs more per event
	// as it grows: 8192 took about a tenth more CPU at 1M events).
	Chunk uint64
	// Checkpoint, if set, is a checkpoint whose signature the caller has
	// checked (audit.OpenCheckpoint): the ledger must extend it.
	Checkpoint *audit.Checkpoint
	// Projections refolds the log into a scratch file and compares the
	// stored projections with it.
	Projections bool
	// ScratchDir is where the scratch file goes (default: the system temp
	// directory); its name is removed as soon as it is open, so nothing of
	// it is left however the process ends.
	ScratchDir string
	// Progress, if set, is called as events and nodes are checked (done of
	// total, paced by the refold), then once with the events refolded of
	// the projections' applied seq before they are compared.
	Progress func(done, total uint64)
}

// Verify checks the ledger l without trusting what wrote it, in this order:
//  1. every event's bytes against its stored leaf (formats 2 and 3: the next link
//     and the stored level-4 node over it), every prev link, the
//     head, every stored Merkle node (boltstore.Store.Verify); then the root
//     recomputed from the events' bytes against the stored tree's;
//  2. with a checkpoint: that the ledger has at least its size, that its
//     first events as they are now hash to the signed root, and that a
//     consistency proof from it to the verified root holds;
//  3. with Projections: the log refolded in a scratch file, compared with
//     the stored projections key by key (projections of another version
//     than this binary's are reported as not compared).
//
// A ledger that does not hold is reported in the Report (OK false, Problem
// the first thing wrong); the error is for I/O only.
func Verify(ctx context.Context, l *boltstore.Store, opts Options) (*audit.Report, error) {
	if opts.Chunk == 0 {
		opts.Chunk = 1 << 12
	}
	if opts.Progress == nil {
		opts.Progress = func(done, total uint64) {}
	}
	v := &verifier{l: l, opts: opts}
	return v.run(ctx)
}

// verifier is one run of Verify.
type verifier struct {
	l    *boltstore.Store
	opts Options
	out  audit.Report
}

func (v *verifier) run(ctx context.Context) (*audit.Report, error) {
	start := time.Now()
	out, cp := &v.out, v.opts.Checkpoint
	defer func() { out.Timing.TotalMS = millis(time.Since(start)) }()

	// The projections as they stand before the log is read: they are
	// refolded up to the seq they had applied then, and compared once the
	// refold has caught up with what was applied meanwhile.
	checkProjections := v.opts.Projections
	var version, applied uint64
	if err := v.l.View(func(tx *boltstore.Tx) error {
		var err error
		version, applied, err = projections.State(tx)
		return err
	}); err != nil {
		return out, err
	}
	if checkProjections {
		out.Projections = &audit.ProjectionReport{StoredVersion: version, BinaryVersion: projections.Version, AppliedSeq: applied}
		switch {
		case version == 0:
			out.Projections.Note = "the file holds no complete projections (none built yet, or a rebuild that did not finish dropped them): nothing to compare; logbook rebuild, a server opening the file, or the next call of one running, builds them from the log"
			checkProjections = false
		case version != projections.Version:
			out.Projections.Note = fmt.Sprintf("stored projections are version %d, this binary folds version %d: they are not compared, and are rebuilt from the log when a server opens the file", version, projections.Version)
			checkProjections = false
		}
	}

	// One pass over the log: every event and node checked, the root
	// recomputed from the events themselves (for the checkpoint, and
	// against the stored tree) and the refold, all from the same reads.
	p := &logPass{v: v, recompute: cp != nil || checkProjections, cpRoot: ledger.EmptyRoot}
	if cp != nil {
		p.cpSize = cp.Size // cpRoot is the empty log's until the pass reads that many
	}
	if checkProjections {
		if err := p.openScratch(); err != nil {
			return out, err
		}
		defer p.closeScratch()
		p.foldTo = applied
	}
	rep, err := p.run(ctx)
	out.Timing.ChainMS = millis(p.checked.Sub(start))
	out.Timing.ChainEventsPerS = rate(rep.Size, p.checked.Sub(start))
	out.Size, out.Head, out.Root, out.Nodes = rep.Size, rep.Head, rep.Root, rep.Nodes
	var ie *ledger.IntegrityError
	var pe *audit.Problem
	switch {
	case errors.As(err, &ie):
		return out.Fail(audit.FromIntegrity(ie)), nil
	case errors.As(err, &pe):
		return out.Fail(pe), nil
	case err != nil:
		return out, err
	}
	if cp != nil {
		if p := cp.CheckSize(rep.Size); p != nil {
			return out.Fail(p), nil
		}
	}
	if !p.recompute {
		out.OK = true
		return out, nil
	}
	if got := p.tree.Root(); got != rep.Root {
		root := rep.Root
		return out.Fail(&audit.Problem{Kind: audit.NodeWrong, Seq: rep.Size, Want: &got, Got: &root,
			Detail: "the root from the stored Merkle nodes differs from the root recomputed from the events"}), nil
	}
	if cp != nil {
		out.Checkpoint = &audit.CheckpointReport{Origin: cp.Origin, Size: cp.Size, Root: cp.Root}
		if pe := cp.CheckExtends(p.cpRoot, out.Size, out.Root, v.consistencyProof(cp.Size)); pe != nil {
			return out.Fail(pe), nil
		}
		out.Checkpoint.Consistent = true
	}
	if checkProjections {
		// The pass reported reading the log (its reads wait for the
		// refold); what is left is comparing the projections.
		v.opts.Progress(p.folded, applied)
		pe, err := p.compare()
		out.Timing.ProjectionsMS = millis(time.Since(start))
		out.Timing.ProjectionsEventsPerS = rate(out.Projections.AppliedSeq, time.Since(start))
		if err != nil {
			return out, err
		}
		if pe != nil {
			return out.Fail(pe), nil
		}
		out.Projections.Checked = true
	}
	out.OK = true
	return out, nil
}

// consistencyProof reads the proof from size old to the verified size.
func (v *verifier) consistencyProof(old uint64) func() ([]ledger.Hash, error) {
	return func() ([]ledger.Hash, error) {
		var proof []ledger.Hash
		err := v.l.View(func(tx *boltstore.Tx) error {
			var err error
			proof, err = tx.ConsistencyProof(old, v.out.Size)
			return err
		})
		return proof, err
	}
}

// rate is events per second, 0 when nothing was timed.
func rate(events uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(events) / d.Seconds()
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

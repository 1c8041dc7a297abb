package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

func init() {
	register("verify", "check every event hash and link, Merkle node and projection (and a signed checkpoint)", verify)
}

// verifyJSON is verify's report: the same object on success and failure.
type verifyJSON struct {
	OK          bool             `json:"ok"`
	Size        uint64           `json:"size"`  // events verified: seq 1..size
	Head        ledger.Hash      `json:"head"`  // hash of event size
	Root        ledger.Hash      `json:"root"`  // RFC 9162 root of the first size events
	Nodes       uint64           `json:"nodes"` // stored Merkle nodes above the leaves re-hashed
	Error       *problemJSON     `json:"error,omitempty"`
	Projections *projectionsJSON `json:"projections,omitempty"`
	Checkpoint  *checkpointCheck `json:"checkpoint,omitempty"`
	Timing      timingJSON       `json:"timing"`
}

// problemJSON is the first thing found wrong.
type problemJSON struct {
	Seq     uint64       `json:"seq"`
	Problem string       `json:"problem"`
	Detail  string       `json:"detail,omitempty"`
	Want    *ledger.Hash `json:"want,omitempty"`
	Got     *ledger.Hash `json:"got,omitempty"`
}

type projectionsJSON struct {
	Checked       bool   `json:"checked"` // refolded from the log and compared
	AppliedSeq    uint64 `json:"applied_seq"`
	StoredVersion uint64 `json:"stored_version"`
	BinaryVersion uint64 `json:"binary_version"`
	ComparedKeys  uint64 `json:"compared_keys,omitempty"`
	// Fingerprint is the xxhash-64 of the projections refolded from the log
	// up to AppliedSeq (hex): two auditors verifying copies at the same seq
	// get the same value.
	Fingerprint string `json:"fingerprint,omitempty"`
	Differences uint64 `json:"differences,omitempty"` // keys that differ, on failure
	Note        string `json:"note,omitempty"`
}

type checkpointCheck struct {
	Origin     string      `json:"origin"`
	Size       uint64      `json:"size"`
	Root       ledger.Hash `json:"root"`
	Consistent bool        `json:"consistent"`
}

type timingJSON struct {
	ChainMS               float64 `json:"chain_ms"`
	ChainEventsPerS       float64 `json:"chain_events_per_s"`
	ProjectionsMS         float64 `json:"projections_ms,omitempty"`
	ProjectionsEventsPerS float64 `json:"projections_events_per_s,omitempty"`
	LockHeldMS            float64 `json:"lock_held_ms,omitempty"` // the longest read transaction of the projection comparison
	TotalMS               float64 `json:"total_ms"`
}

func verify(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "verify", `Verify a ledger without trusting the server that wrote it:
  1. every event's hash against its stored Merkle leaf, every prev link, the head;
  2. every stored Merkle node against its children;
  3. the projections: refolded from the log in a scratch file and compared key by key;
  4. with --checkpoint: that the ledger extends the signed checkpoint (same root over its
     first events, recomputed from the events, and a valid RFC 9162 consistency proof).
Reads in short transactions, so agents keep writing. Exit 0 ok, 1 integrity failure
(the first bad seq and the problem are reported), 2 usage or I/O error.`)
	lf := addLedgerFlags(e, fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cpPath := fs.String("checkpoint", "", "signed checkpoint the ledger must extend")
	vkeyPath := fs.String("vkey", "", "verifier key of the checkpoint's signer (with --checkpoint)")
	noProj := fs.Bool("no-projections", false, "skip the projection check")
	scratch := fs.String("scratch", "", "directory for the scratch projections (default: the system temp dir)")
	chunk := fs.Uint64("chunk", 1<<13, "events per read transaction")
	if done, err := parse(e, fs, args); done {
		return err
	}
	if *chunk == 0 {
		return usageErr("verify: --chunk must be positive")
	}
	if *vkeyPath != "" && *cpPath == "" {
		return usageErr("verify: --vkey without --checkpoint")
	}
	var cp *checkpointBody
	if *cpPath != "" {
		c, err := openCheckpoint("verify", *cpPath, *vkeyPath)
		if err != nil {
			return err
		}
		cp = &c
	}
	if *scratch != "" {
		if fi, err := os.Stat(*scratch); err != nil || !fi.IsDir() {
			return usageErr("verify: --scratch %s is not a directory", *scratch)
		}
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()
	boundMemory()

	v := &verifier{l: l, chunk: *chunk, scratchDir: *scratch, prog: newProgress(e.stderr, "verify")}
	out, err := v.run(ctx, cp, !*noProj)
	if err != nil {
		return ioErr("verify", err)
	}
	if *asJSON {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		printVerify(e.stdout, out)
	}
	if !out.OK {
		return integrityErr(fmt.Errorf("verify: %s", describe(out.Error)))
	}
	return nil
}

func describe(p *problemJSON) string {
	s := fmt.Sprintf("seq %d: %s", p.Seq, p.Problem)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

func printVerify(w interface{ Write([]byte) (int, error) }, out *verifyJSON) {
	if !out.OK {
		fmt.Fprintf(w, "FAIL %s\n", describe(out.Error))
		if out.Error.Want != nil && out.Error.Got != nil {
			fmt.Fprintf(w, "  want %s\n  got  %s\n", out.Error.Want, out.Error.Got)
		}
		return
	}
	fmt.Fprintf(w, "ok: %d events, head %s, root %s, %d Merkle nodes (%.0f events/s)\n",
		out.Size, out.Head, out.Root, out.Nodes, out.Timing.ChainEventsPerS)
	if p := out.Projections; p != nil {
		if p.Checked {
			fmt.Fprintf(w, "projections: match a refold of the log (%d keys, at seq %d, fingerprint %s)\n", p.ComparedKeys, p.AppliedSeq, p.Fingerprint)
		} else {
			fmt.Fprintf(w, "projections: not compared: %s\n", p.Note)
		}
	}
	if c := out.Checkpoint; c != nil {
		fmt.Fprintf(w, "checkpoint: %s size %d root %s: the ledger extends it\n", c.Origin, c.Size, c.Root)
	}
}

// verifier is one run of verify.
type verifier struct {
	l          *boltstore.Store
	chunk      uint64
	scratchDir string
	prog       *progress
	out        verifyJSON
}

// run verifies; a failure is reported in the result (OK false), and the
// error is for I/O only.
func (v *verifier) run(ctx context.Context, cp *checkpointBody, checkProjections bool) (*verifyJSON, error) {
	start := time.Now()
	out := &v.out
	defer func() { out.Timing.TotalMS = millis(time.Since(start)) }()
	rep, err := v.l.Verify(ctx, boltstore.VerifyOptions{Chunk: v.chunk, Progress: v.prog.report})
	out.Timing.ChainMS = millis(time.Since(start))
	out.Timing.ChainEventsPerS = rate(rep.Size, time.Since(start))
	out.Size, out.Head, out.Root, out.Nodes = rep.Size, rep.Head, rep.Root, rep.Nodes
	var ie *ledger.IntegrityError
	if errors.As(err, &ie) {
		return v.fail(problemOf(ie)), nil
	}
	if err != nil {
		return out, err
	}
	if cp != nil && cp.Size > rep.Size {
		return v.fail(&problemJSON{Seq: rep.Size + 1, Problem: "log truncated",
			Detail: fmt.Sprintf("the ledger has %d events, the checkpoint of %s signed %d", rep.Size, cp.Origin, cp.Size)}), nil
	}

	var version, applied uint64
	if err := v.l.View(func(tx *boltstore.Tx) error {
		var err error
		version, applied, err = projections.State(tx)
		return err
	}); err != nil {
		return out, err
	}
	if checkProjections {
		out.Projections = &projectionsJSON{StoredVersion: version, BinaryVersion: projections.Version, AppliedSeq: applied}
		switch {
		case version == 0:
			out.Projections.Note = "the file holds no projections yet; a server builds them from the log when it opens the file"
			checkProjections = false
		case version != projections.Version:
			out.Projections.Note = fmt.Sprintf("stored projections are version %d, this binary folds version %d: they are not compared, and are rebuilt from the log when a server opens the file", version, projections.Version)
			checkProjections = false
		}
	}
	if cp == nil && !checkProjections {
		out.OK = true
		return out, nil
	}

	// One pass over the log: the root recomputed from the events themselves
	// (for the checkpoint, and against the stored tree), and the refold.
	p := &logPass{v: v, rootAt: map[uint64]ledger.Hash{0: ledger.EmptyRoot}}
	if cp != nil && cp.Size > 0 {
		p.rootAt[cp.Size] = ledger.Hash{}
	}
	if rep.Size > 0 {
		p.rootAt[rep.Size] = ledger.Hash{}
	}
	end := rep.Size
	if checkProjections {
		if err := p.openScratch(); err != nil {
			return out, err
		}
		defer p.closeScratch()
		p.foldTo = applied
		end = max(end, applied)
	}
	pstart := time.Now()
	if err := p.read(ctx, end); err != nil {
		var pe *problemJSON
		if errors.As(err, &pe) {
			return v.fail(pe), nil
		}
		return out, err
	}
	if got := p.rootAt[rep.Size]; got != rep.Root {
		return v.fail(&problemJSON{Seq: rep.Size, Problem: string(ledger.ProblemNode), Want: &got, Got: &rep.Root,
			Detail: "the root from the stored Merkle nodes differs from the root recomputed from the events"}), nil
	}
	if cp != nil {
		if pe := v.checkCheckpoint(cp, p.rootAt[cp.Size]); pe != nil {
			return v.fail(pe), nil
		}
	}
	if checkProjections {
		pe, err := p.compare()
		out.Timing.ProjectionsMS = millis(time.Since(pstart))
		out.Timing.ProjectionsEventsPerS = rate(out.Projections.AppliedSeq, time.Since(pstart))
		if err != nil {
			return out, err
		}
		if pe != nil {
			return v.fail(pe), nil
		}
		out.Projections.Checked = true
	}
	out.OK = true
	return out, nil
}

func (v *verifier) fail(p *problemJSON) *verifyJSON {
	v.out.OK, v.out.Error = false, p
	return &v.out
}

func problemOf(ie *ledger.IntegrityError) *problemJSON {
	p := &problemJSON{Seq: ie.Seq, Problem: string(ie.Problem), Detail: ie.Detail}
	if ie.Want != ie.Got {
		want, got := ie.Want, ie.Got
		p.Want, p.Got = &want, &got
	}
	return p
}

func (p *problemJSON) Error() string { return describe(p) }

// checkCheckpoint proves the ledger extends the checkpoint: its first
// cp.Size events, as they are now, hash to the signed root (fromEvents,
// recomputed from the events' bytes), and the stored tree gives a
// consistency proof from the checkpoint to the verified root.
func (v *verifier) checkCheckpoint(cp *checkpointBody, fromEvents ledger.Hash) *problemJSON {
	v.out.Checkpoint = &checkpointCheck{Origin: cp.Origin, Size: cp.Size, Root: cp.Root}
	if fromEvents != cp.Root {
		return &problemJSON{Seq: cp.Size, Problem: "checkpoint mismatch", Want: &cp.Root, Got: &fromEvents,
			Detail: fmt.Sprintf("the first %d events no longer hash to the root signed in the checkpoint of %s: the log was rewritten at or before seq %d", cp.Size, cp.Origin, cp.Size)}
	}
	if cp.Size > 0 {
		var proof []ledger.Hash
		err := v.l.View(func(tx *boltstore.Tx) error {
			var err error
			proof, err = tx.ConsistencyProof(cp.Size, v.out.Size)
			return err
		})
		if err == nil {
			err = ledger.VerifyConsistency(cp.Size, v.out.Size, cp.Root, v.out.Root, proof)
		}
		if err != nil {
			return &problemJSON{Seq: cp.Size, Problem: "checkpoint inconsistent", Detail: err.Error()}
		}
	}
	v.out.Checkpoint.Consistent = true
	return nil
}

// logPass reads the log once, in chunks of short read transactions: it
// recomputes the tree root from the events' hashes at the sizes asked for
// in rootAt, and folds the events up to foldTo into scratch projections.
type logPass struct {
	v       *verifier
	rootAt  map[uint64]ledger.Hash // size → root of the first size events, recomputed
	tree    ledger.Frontier        // over every event read so far
	foldTo  uint64
	folded  uint64
	dir     string
	scratch *boltstore.Store
}

func (p *logPass) openScratch() error {
	dir, err := os.MkdirTemp(p.v.scratchDir, "logbook-verify-")
	if err != nil {
		return fmt.Errorf("scratch: %w", err)
	}
	p.dir = dir
	p.scratch, err = boltstore.Open(filepath.Join(dir, "projections.db"), boltstore.Options{Create: true})
	if err != nil {
		return fmt.Errorf("scratch: %w", err)
	}
	return p.scratch.Update(projections.Reset)
}

func (p *logPass) closeScratch() {
	if p.scratch != nil {
		p.scratch.Close()
	}
	os.RemoveAll(p.dir)
}

// read reads events 1..end and folds those up to foldTo. Reading and
// folding overlap: one goroutine reads the next chunk while this one folds.
func (p *logPass) read(ctx context.Context, end uint64) error {
	chunks := make(chan []ledger.Record) // one chunk folded while the next is read
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(chunks)
		for begin := uint64(1); begin <= end; begin += p.v.chunk {
			last := min(begin+p.v.chunk-1, end)
			recs, err := p.readChunk(begin, last)
			if err != nil {
				errc <- err
				return
			}
			if len(recs) == 0 {
				continue
			}
			select {
			case chunks <- recs:
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
		}
		errc <- nil
	}()
	for recs := range chunks {
		if err := p.fold(recs); err != nil {
			cancel()
			for range chunks {
			}
			<-errc
			return err
		}
		p.v.prog.report(recs[len(recs)-1].Seq, end)
	}
	return <-errc
}

// readChunk reads events [begin, last] in one read transaction, feeding the
// recomputed tree, and returns those to fold.
func (p *logPass) readChunk(begin, last uint64) ([]ledger.Record, error) {
	var recs []ledger.Record
	foldEnd := min(last, p.foldTo)
	if foldEnd >= begin {
		recs = make([]ledger.Record, 0, foldEnd-begin+1)
	}
	err := p.v.l.View(func(tx *boltstore.Tx) error {
		return p.scan(tx, begin, last, func(r ledger.Record) {
			if r.Seq <= p.foldTo {
				r.Raw = nil // valid only in this transaction; the fold needs the decoded event
				recs = append(recs, r)
			}
		})
	})
	return recs, err
}

// scan reads events [begin, last] of tx in order into the tree.
func (p *logPass) scan(tx *boltstore.Tx, begin, last uint64, fn func(ledger.Record)) error {
	want := begin
	err := tx.Scan(begin, last+1, func(r ledger.Record) error {
		if r.Seq != want {
			return &problemJSON{Seq: want, Problem: string(ledger.ProblemGap)}
		}
		want++
		p.tree.Append(r.Hash)
		if _, ok := p.rootAt[r.Seq]; ok || r.Type == projections.TypeSessionFinalized {
			p.rootAt[r.Seq] = p.tree.Root()
		}
		fn(r)
		return nil
	})
	if err != nil {
		var pe *problemJSON
		if !errors.As(err, &pe) && errors.Is(err, ledger.ErrMalformed) {
			return &problemJSON{Seq: want, Problem: string(ledger.ProblemMalformed), Detail: err.Error()}
		}
		return err
	}
	if want != last+1 {
		return &problemJSON{Seq: want, Problem: string(ledger.ProblemGap)}
	}
	return nil
}

// fold folds records into the scratch projections in one transaction.
func (p *logPass) fold(recs []ledger.Record) error {
	root := func(size uint64) (ledger.Hash, error) {
		h, ok := p.rootAt[size]
		if !ok {
			return h, fmt.Errorf("no recomputed root at size %d", size)
		}
		return h, nil
	}
	err := p.scratch.Update(func(tx *boltstore.Tx) error { return projections.Fold(tx, recs, root) })
	var fe error
	if err != nil && p.scratch.Update(func(*boltstore.Tx) error { return nil }) == nil {
		// The scratch file works, so the events do not fold: the log
		// verified, so that is content the projections cannot make sense
		// of. Fold them one by one (rolled back) to name the first.
		fe, err = err, p.scratch.Update(func(tx *boltstore.Tx) error {
			for _, r := range recs {
				if err := projections.Fold(tx, []ledger.Record{r}, root); err != nil {
					return &problemJSON{Seq: r.Seq, Problem: "projection fold failed", Detail: err.Error()}
				}
			}
			return fe
		})
	}
	if err != nil {
		return err
	}
	p.folded = recs[len(recs)-1].Seq
	return nil
}

// compareStep is how many keys one read transaction of the comparison
// compares: a millisecond or two of the lock, and a bounded number of the
// (scattered) projection pages mapped at once.
const compareStep = 1024

// compare checks the stored projections against the refold, key by key, in
// steps of one short read transaction each, so neither the lock nor memory
// grows with the projections' size. The stored projections move on while
// agents write: each step first folds into the scratch what was applied
// since the last (a few events), so both states are at the same seq for
// the keys the step compares.
func (p *logPass) compare() (*problemJSON, error) {
	out := p.v.out.Projections
	var cmp projections.Comparison
	for !cmp.Done() {
		err := p.v.l.View(func(tx *boltstore.Tx) error {
			start := time.Now()
			defer func() { p.v.out.Timing.LockHeldMS = max(p.v.out.Timing.LockHeldMS, millis(time.Since(start))) }()
			version, applied, err := projections.State(tx)
			if err != nil {
				return err
			}
			if version != projections.Version || applied < p.folded {
				return fmt.Errorf("the projections were reset while verifying (a rebuild?); run verify again")
			}
			out.AppliedSeq = applied
			if applied > p.folded {
				var recs []ledger.Record
				err := p.scan(tx, p.folded+1, applied, func(r ledger.Record) { r.Raw = nil; recs = append(recs, r) })
				if err != nil {
					return err
				}
				if err := p.fold(recs); err != nil {
					return err
				}
			}
			return p.scratch.View(func(stx *boltstore.Tx) error { return cmp.Step(stx, tx, compareStep) })
		})
		if err != nil {
			var pe *problemJSON
			if errors.As(err, &pe) {
				return pe, nil
			}
			return nil, err
		}
	}
	out.ComparedKeys = cmp.Keys
	if cmp.Differences == 0 {
		// The scratch is this process's own file: fingerprinting it holds
		// no lock the agents wait on.
		return nil, p.scratch.View(func(stx *boltstore.Tx) error {
			fp, err := projections.Fingerprint(stx)
			out.Fingerprint = fmt.Sprintf("%016x", fp)
			return err
		})
	}
	out.Differences = cmp.Differences
	d := cmp.First
	pe := &problemJSON{Seq: out.AppliedSeq, Problem: "projection differs from the log",
		Detail: fmt.Sprintf("%s %s: %s (%d keys differ from a refold of the log)", d.Space, d.Key, d.Problem, cmp.Differences)}
	if d.Seq > 0 {
		pe.Seq = d.Seq
	}
	return pe, nil
}

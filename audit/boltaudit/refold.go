package boltaudit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// logPass reads the log once, in chunks of short read transactions, through
// boltstore's Verify, which checks every event and node: from the same reads
// it recomputes the tree root from the events' hashes (with recompute) and
// folds the events up to foldTo into scratch projections, one chunk while
// the next is read and checked in another goroutine.
type logPass struct {
	v         *verifier
	recompute bool        // recompute the tree and decode every event
	tree      eventTree   // over every event read so far
	cpSize    uint64      // the checkpoint's size, if any
	cpRoot    ledger.Hash // the recomputed root at cpSize
	checked   time.Time   // when the log's check ended

	foldTo   uint64
	folded   uint64
	foldTree ledger.Frontier // the tree over the events folded so far
	prev     []ledger.Record // the chunk folded last, in seq order
	pending  foldChunk       // what the chunk being read adds to the refold
	badEvent error           // the first event past foldTo that does not decode (the reader's)
	badFold  error           // the first event to fold that does not decode (the preparing goroutine's)
	failed   atomic.Bool     // the refold failed: read on, fold no more
	bad      atomic.Bool     // badFold is set: read on, fold no more
	foldErr  error           // why (the folding goroutine's)
	scratch  *boltstore.Store
	refold   projections.Refold // the scratch's fold, chunk after chunk
}

// foldChunk is events to fold, with the recomputed roots at the sizes
// where a session.finalized event asks for one. The reading goroutine
// fills recs with the events' seqs and hashes and copies their stored
// bytes into the chunk's eventBytes; the preparing goroutine decodes them
// into recs, hands the bytes back (the decoded events do not point into
// them) and works out what folding them needs of each event alone
// (projections.Prepare; nil: nothing).
type foldChunk struct {
	recs []ledger.Record
	eventBytes
	roots map[uint64]ledger.Hash
	pre   *projections.Prepared
}

// eventBytes is the stored bytes of a chunk's events, one after the
// other: event i ends at ends[i].
type eventBytes struct {
	raw  []byte
	ends []int
}

// reuse returns c's records, emptied, and what was prepared of them,
// released, for another chunk.
func (c foldChunk) reuse() foldChunk {
	clear(c.recs)
	c.pre.Release()
	return foldChunk{recs: c.recs[:0], pre: c.pre}
}

// decode decodes the events of c read as raw bytes. At the first that
// does not decode it keeps only those before it, and returns the problem.
func (c *foldChunk) decode(dec *ledger.EventDecoder) *audit.Problem {
	start := 0
	for i := range c.recs {
		e, err := dec.Decode(c.raw[start:c.ends[i]])
		if err != nil {
			seq := c.recs[i].Seq
			c.recs = c.recs[:i]
			return &audit.Problem{Seq: seq, Kind: audit.EventMalformed, Detail: err.Error(), Err: err}
		}
		c.recs[i].Event, start = e, c.ends[i]
	}
	return nil
}

func (p *logPass) openScratch() error {
	// Nobody else opens the scratch file (it has no name once open): it is
	// held open for the whole refold rather than reopened for every chunk
	// (fold releases the pages each chunk mapped, as closing the file did).
	var err error
	if p.scratch, err = boltstore.OpenScratch(p.v.opts.ScratchDir, "logbook-verify-", ".db"); err != nil {
		return err
	}
	return p.scratch.Update(projections.Reset)
}

func (p *logPass) closeScratch() {
	if p.scratch != nil {
		p.scratch.Close()
	}
}

// run checks the log and reads it for the root and the refold. A problem of
// the log (a *ledger.IntegrityError, lowest seq first) comes before one of
// the refold (an *audit.Problem): the whole log is checked even when an
// event does not decode or fold.
func (p *logPass) run(ctx context.Context) (boltstore.VerifyReport, error) {
	opts := boltstore.VerifyOptions{Chunk: p.v.opts.Chunk, Progress: p.v.opts.Progress}
	// A chunk read goes to read, is prepared (projections.Prepare) on a
	// goroutine of its own and goes to chunks, and is folded while the
	// next ones are read and prepared: the reading goroutine also checks
	// every event and node, and prepared there it was the slower of the
	// two (with two cores the three share them).
	read := make(chan foldChunk)
	chunks := make(chan foldChunk, 1)
	// The chunks' buffers go round: one being filled, one being
	// prepared, one waiting, one being folded, and the one folded before
	// it (prev).
	free := make(chan foldChunk, 5)
	for range cap(free) {
		free <- foldChunk{}
	}
	// The events' bytes go round apart: one being filled, one being
	// decoded (and one spare): kept no longer, they add little to the
	// live heap, which the collector's work grows with.
	freeBytes := make(chan eventBytes, 3)
	for range cap(freeBytes) {
		freeBytes <- eventBytes{}
	}
	if p.recompute {
		opts.Each = p.each
		opts.Group = p.tree.group
	}
	if p.scratch != nil {
		p.pending = <-free
		p.pending.eventBytes = <-freeBytes
		opts.Chunked = func(uint64) error {
			c := p.pending
			if len(c.recs) == 0 || p.failed.Load() || p.bad.Load() {
				p.pending = c.reuse()
				p.pending.eventBytes = eventBytes{c.raw[:0], c.ends[:0]}
				return nil
			}
			select {
			case read <- c:
			case <-ctx.Done():
				return ctx.Err()
			}
			p.pending = <-free
			p.pending.eventBytes = <-freeBytes
			return nil
		}
	}
	type result struct {
		rep boltstore.VerifyReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer close(read)
		rep, err := p.v.l.Verify(ctx, opts)
		p.checked = time.Now()
		done <- result{rep, err}
	}()
	go func() {
		defer close(chunks)
		var dec ledger.EventDecoder
		for c := range read {
			if p.badFold == nil {
				if pe := c.decode(&dec); pe != nil {
					// The events before it are still folded.
					p.badFold = pe
					p.bad.Store(true)
				}
			}
			freeBytes <- eventBytes{c.raw[:0], c.ends[:0]}
			c.eventBytes = eventBytes{}
			if len(c.recs) == 0 {
				free <- c.reuse()
				continue
			}
			c.pre = projections.PrepareInto(c.pre, c.recs)
			chunks <- c // the fold takes every chunk, even once failed
		}
	}()
	var prev foldChunk // the chunk of p.prev
	for c := range chunks {
		if !p.failed.Load() {
			if err := p.fold(c); err != nil {
				p.foldErr = err
				p.failed.Store(true)
			}
		}
		// The chunk is kept until the next is folded (the index may read
		// its events back); nothing of the events is kept longer.
		if p.prev != nil {
			free <- prev.reuse()
		}
		p.prev, prev = c.recs, c
	}
	clear(p.prev)
	p.prev = nil
	r := <-done
	switch {
	case r.err != nil:
		return r.rep, r.err
	case p.tree.err != nil:
		return r.rep, p.tree.err
	case p.foldErr != nil: // of an event before any that does not decode
		return r.rep, p.foldErr
	case p.badFold != nil:
		return r.rep, p.badFold
	case p.badEvent != nil:
		return r.rep, p.badEvent
	}
	if p.folded < p.foldTo {
		// The log verified is shorter than the projections' applied seq
		// was (it can only be if the file changed between the two reads):
		// the refold goes on from where the pass ended.
		p.foldTree = p.tree.Frontier()
	}
	return r.rep, nil
}

// each takes one checked event: into the tree, and decoded into the
// chunk to fold if it is one of the events to fold.
func (p *logPass) each(seq uint64, raw []byte, h ledger.Hash) error {
	p.tree.Append(h)
	if seq == p.cpSize {
		p.cpRoot = p.tree.Root()
	}
	if seq == p.foldTo {
		p.foldTree = p.tree.Frontier()
	}
	if p.badEvent != nil || p.failed.Load() || p.bad.Load() {
		return nil
	}
	if seq > p.foldTo || p.scratch == nil {
		// Not to fold: decoded here, only to report it if it does not.
		if _, err := ledger.DecodeEvent(raw); err != nil {
			p.badEvent = &audit.Problem{Seq: seq, Kind: audit.EventMalformed, Detail: err.Error(), Err: err}
		}
		return nil
	}
	// To fold: copied, and decoded by the preparing goroutine; only a
	// session.finalized event is told apart here, for the root it asks
	// for (one whose type does not read does not decode either).
	if typ, ok := ledger.TypeOf(raw); ok && typ == events.TypeSessionFinalized {
		if p.pending.roots == nil {
			p.pending.roots = map[uint64]ledger.Hash{}
		}
		p.pending.roots[seq] = p.tree.Root()
	}
	c := &p.pending
	c.raw = append(c.raw, raw...)
	c.ends = append(c.ends, len(c.raw))
	c.recs = append(c.recs, ledger.Record{Event: ledger.Event{Seq: seq}, Hash: h})
	return nil
}

// scan reads events [begin, last] of tx in order, for a refold that
// catches up past the events the pass read: into foldTree, and the roots a
// fold of them asks for into roots.
func (p *logPass) scan(tx *boltstore.Tx, begin, last uint64, roots map[uint64]ledger.Hash, fn func(ledger.Record)) error {
	want := begin
	err := tx.Scan(begin, last+1, func(r ledger.Record) error {
		if r.Seq != want {
			return &audit.Problem{Seq: want, Kind: audit.EventMissing}
		}
		want++
		p.foldTree.Append(r.Hash)
		if r.Type == events.TypeSessionFinalized {
			roots[r.Seq] = p.foldTree.Root()
		}
		fn(r)
		return nil
	})
	if err != nil {
		var pe *audit.Problem
		if !errors.As(err, &pe) && errors.Is(err, ledger.ErrMalformed) {
			return &audit.Problem{Seq: want, Kind: audit.EventMalformed, Detail: err.Error(), Err: err}
		}
		return err
	}
	if want != last+1 {
		return &audit.Problem{Seq: want, Kind: audit.EventMissing}
	}
	return nil
}

// fold folds a chunk into the scratch projections in one transaction.
func (p *logPass) fold(c foldChunk) error {
	recs := c.recs
	root := func(size uint64) (ledger.Hash, error) {
		h, ok := c.roots[size]
		if !ok {
			return h, fmt.Errorf("no recomputed root at size %d", size)
		}
		return h, nil
	}
	// An earlier event (the full-text index reads the events a lump covers,
	// and what it takes out from the event that recorded it): from the
	// chunk, whose events are consecutive, or the chunk folded before it
	// (where a lump begun there has its first events), else in a read
	// transaction of its own — one open of the file per event otherwise,
	// for a read-only Store, and a wait for its lock under writers.
	event := func(seq uint64) (r ledger.Record, err error) {
		for _, in := range [][]ledger.Record{recs, p.prev} {
			if n := len(in); n > 0 && seq >= in[0].Seq && seq <= in[n-1].Seq && in[seq-in[0].Seq].Seq == seq {
				return in[seq-in[0].Seq], nil
			}
		}
		err = p.v.l.View(func(tx *boltstore.Tx) error {
			r, err = tx.Event(seq)
			r.Raw = nil // valid only in this transaction
			return err
		})
		return r, err
	}
	pre := c.pre
	if pre == nil {
		pre = &projections.Prepared{Recs: recs}
	}
	err := p.scratch.Update(func(tx *boltstore.Tx) error { return p.refold.Fold(tx, pre, root, event) })
	if err != nil {
		p.refold.Reset() // what it carries did not commit
	}
	var fe error
	if err != nil && p.scratch.Update(func(*boltstore.Tx) error { return nil }) == nil {
		// The scratch file works, so the events do not fold: the log
		// verified, so that is content the projections cannot make sense
		// of. Fold them one by one (rolled back) to name the first.
		fe, err = err, p.scratch.Update(func(tx *boltstore.Tx) error {
			for _, r := range recs {
				if err := projections.Fold(tx, []ledger.Record{r}, root, event); err != nil {
					return &audit.Problem{Seq: r.Seq, Kind: audit.ProjectionFoldFailed, Detail: err.Error(), Err: err}
				}
			}
			return fe
		})
	}
	if err != nil {
		return err
	}
	p.folded = recs[len(recs)-1].Seq
	return p.scratch.ReleaseMapped()
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
func (p *logPass) compare() (*audit.Problem, error) {
	out := p.v.out.Projections
	var cmp projections.Comparison
	began, moved := false, false // a step ran; the refold moved on after it
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
				c := foldChunk{roots: map[uint64]ledger.Hash{}}
				err := p.scan(tx, p.folded+1, applied, c.roots, func(r ledger.Record) { r.Raw = nil; c.recs = append(c.recs, r) })
				if err != nil {
					return err
				}
				if err := p.fold(c); err != nil {
					return err
				}
				moved = moved || began
			}
			began = true
			if err := p.scratch.View(func(stx *boltstore.Tx) error { return cmp.Step(stx, tx, compareStep) }); err != nil {
				return err
			}
			return p.scratch.ReleaseMapped()
		})
		if err != nil {
			var pe *audit.Problem
			if errors.As(err, &pe) {
				return pe, nil
			}
			return nil, err
		}
	}
	out.ComparedKeys = cmp.Keys
	if cmp.Differences == 0 {
		if !moved {
			// The steps read every key of the refold as it stands.
			out.Fingerprint = fmt.Sprintf("%016x", cmp.Fingerprint())
			return nil, nil
		}
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
	pe := &audit.Problem{Seq: out.AppliedSeq, Kind: audit.ProjectionDiffers, Err: d,
		Detail: fmt.Sprintf("%s %s: %s (%d keys differ from a refold of the log)", d.Space, d.Key, d.Problem, cmp.Differences)}
	if d.Seq > 0 {
		pe.Seq = d.Seq
	}
	return pe, nil
}

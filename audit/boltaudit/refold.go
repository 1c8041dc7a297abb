package boltaudit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// logPass reads the log once, in chunks of short read transactions: it
// recomputes the tree root from the events' hashes at the sizes asked for
// in rootAt, and folds the events up to foldTo into scratch projections.
type logPass struct {
	v       *verifier
	rootMu  sync.Mutex             // rootAt is written by the reading goroutine while the fold reads it
	rootAt  map[uint64]ledger.Hash // size → root of the first size events, recomputed
	tree    ledger.Frontier        // over every event read so far
	foldTo  uint64
	folded  uint64
	dir     string
	scratch *boltstore.Store
}

func (p *logPass) openScratch() error {
	dir, err := os.MkdirTemp(p.v.opts.ScratchDir, "logbook-verify-")
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
		for begin := uint64(1); begin <= end; begin += p.v.opts.Chunk {
			last := min(begin+p.v.opts.Chunk-1, end)
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
		p.v.opts.Progress(recs[len(recs)-1].Seq, end)
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
			return &audit.Problem{Seq: want, Kind: audit.EventMissing}
		}
		want++
		p.tree.Append(r.Hash)
		// Only this goroutine writes rootAt: its own read needs no lock.
		if _, ok := p.rootAt[r.Seq]; ok || r.Type == events.TypeSessionFinalized {
			p.setRoot(r.Seq)
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

// setRoot records the recomputed root of the first size events, the tree's
// current size.
func (p *logPass) setRoot(size uint64) {
	p.rootMu.Lock()
	defer p.rootMu.Unlock()
	p.rootAt[size] = p.tree.Root()
}

// fold folds records into the scratch projections in one transaction.
func (p *logPass) fold(recs []ledger.Record) error {
	root := func(size uint64) (ledger.Hash, error) {
		p.rootMu.Lock()
		h, ok := p.rootAt[size]
		p.rootMu.Unlock()
		if !ok {
			return h, fmt.Errorf("no recomputed root at size %d", size)
		}
		return h, nil
	}
	// An earlier event (the full-text index reads what it takes out from
	// the event that recorded it), in a read transaction of its own.
	event := func(seq uint64) (r ledger.Record, err error) {
		err = p.v.l.View(func(tx *boltstore.Tx) error {
			r, err = tx.Event(seq)
			r.Raw = nil // valid only in this transaction
			return err
		})
		return r, err
	}
	err := p.scratch.Update(func(tx *boltstore.Tx) error { return projections.Fold(tx, recs, root, event) })
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
func (p *logPass) compare() (*audit.Problem, error) {
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
			var pe *audit.Problem
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
	pe := &audit.Problem{Seq: out.AppliedSeq, Kind: audit.ProjectionDiffers, Err: d,
		Detail: fmt.Sprintf("%s %s: %s (%d keys differ from a refold of the log)", d.Space, d.Key, d.Problem, cmp.Differences)}
	if d.Seq > 0 {
		pe.Seq = d.Seq
	}
	return pe, nil
}

package projections

import (
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// decodeBatch is how many events scanDecoded hands to its decoder at a time.
const decodeBatch = 512

// scanDecoded is tx.Scan with the decoding (and hashing) of each event,
// and what folding it needs of it alone (Prepare), done by another
// goroutine, one batch ahead of fn: a rebuild folds on one core while the
// next events are decoded on another. The transaction is used by the
// calling goroutine only; the decoder gets copies of the stored bytes. fn
// sees the records in order, exactly as tx.Scan would give them, a batch
// at a time.
func scanDecoded(tx *boltstore.Tx, begin, end uint64, fn func(*Prepared) error) error {
	type decoded struct {
		recs []ledger.Record
		err  error
		pre  *Prepared
	}
	in := make(chan [][]byte)
	out := make(chan decoded, 1)
	go func() {
		defer close(out)
		for raws := range in {
			d := decoded{recs: make([]ledger.Record, 0, len(raws))}
			for _, raw := range raws {
				r, err := ledger.DecodeRecord(raw)
				if err != nil {
					d.err = err
					break
				}
				d.recs = append(d.recs, r)
			}
			d.pre = Prepare(d.recs)
			out <- d
		}
	}()
	// Each batch sent is decoded while the one before it is folded.
	inflight := false
	want := begin
	apply := func() error {
		d := <-out
		inflight = false
		for i, r := range d.recs {
			if r.Seq != want {
				d.pre.Recs = d.recs[:i]
				if err := fn(d.pre); err != nil {
					return err
				}
				return fmt.Errorf("event %d: stored at %d: %w", r.Seq, want, ledger.ErrMalformed)
			}
			want++
		}
		if err := fn(d.pre); err != nil {
			return err
		}
		if d.err != nil {
			return fmt.Errorf("event %d: %w", want, d.err)
		}
		return nil
	}
	// The copies of a batch's events go many to an allocation (slab).
	var batch [][]byte
	var slab []byte
	send := func() error {
		in <- batch
		batch = make([][]byte, 0, decodeBatch)
		if inflight {
			if err := apply(); err != nil {
				return err
			}
		}
		inflight = true
		return nil
	}
	err := tx.ScanRaw(begin, end, func(_ uint64, raw []byte) error {
		if cap(slab)-len(slab) < len(raw) {
			slab = make([]byte, 0, max(slabSize, len(raw)))
		}
		slab = append(slab, raw...)
		batch = append(batch, slab[len(slab)-len(raw):len(slab):len(slab)])
		if len(batch) == decodeBatch {
			return send()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = send()
	}
	if err == nil && inflight {
		err = apply()
	}
	close(in)
	for range out { // let the decoder finish after an error
	}
	return err
}

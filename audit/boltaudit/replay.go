package boltaudit

import (
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// Replayer reads a ledger's events in seq order, in chunks of one short
// read transaction each, and checks every link as it reads, including the
// link into the first event read: what it hands on is a chain, or it stops.
// It can be called again as the log grows (replay --follow).
type Replayer struct {
	l     *boltstore.Store
	chunk uint64
	next  uint64      // the next seq to read
	prev  ledger.Hash // hash of event next-1, once known
	known bool        // prev is known
}

// NewReplayer reads l from seq from (>= 1), chunk (> 0) events per read
// transaction.
func NewReplayer(l *boltstore.Store, from, chunk uint64) *Replayer {
	return &Replayer{l: l, chunk: chunk, next: from}
}

// Next is the next seq to read.
func (rp *Replayer) Next() uint64 { return rp.next }

// ReadChunk reads events Next()..min(Next()+chunk-1, end) in one read
// transaction and calls fn for each, in order; fn's error stops it and is
// returned. A missing event or a broken link is a *ledger.IntegrityError
// at the first bad seq, and an event that does not decode an error wrapping
// ledger.ErrMalformed (Next() is then its seq).
func (rp *Replayer) ReadChunk(end uint64, fn func(ledger.Record) error) error {
	last := min(rp.next+rp.chunk-1, end)
	err := rp.l.View(func(tx *boltstore.Tx) error {
		if !rp.known && rp.next > 1 {
			r, err := tx.Event(rp.next - 1)
			if err != nil {
				return err
			}
			rp.prev, rp.known = r.Hash, true
		}
		return tx.Scan(rp.next, last+1, func(r ledger.Record) error {
			if r.Seq != rp.next {
				return &ledger.IntegrityError{Seq: rp.next, Problem: ledger.ProblemGap}
			}
			if rp.next > 1 && r.Prev != rp.prev {
				return &ledger.IntegrityError{Seq: r.Seq, Problem: ledger.ProblemLink, Want: rp.prev, Got: r.Prev}
			}
			rp.prev, rp.known, rp.next = r.Hash, true, r.Seq+1
			return fn(r)
		})
	})
	if err == nil && rp.next <= last {
		err = &ledger.IntegrityError{Seq: rp.next, Problem: ledger.ProblemGap}
	}
	return err
}

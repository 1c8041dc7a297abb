package projections

import (
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/search"
)

// Prepared is a run of consecutive records with what folding them needs of
// each record alone, worked out ahead: the payloads of the hot types
// decoded, and a thought's terms counted for the full-text index. A batch
// fold (a rebuild, a verifier's refold) prepares the next records on
// another goroutine while it folds these, so the fold, which must run on
// one, does less. The fold takes what is prepared exactly as it would have
// worked it out itself (the same decoders and counts), so the projections
// are the same bytes either way.
type Prepared struct {
	Recs []ledger.Record
	pre  []prepared // pre[i] is Recs[i]'s
	// The arrays the payloads and counts are decoded into, kept for
	// PrepareInto.
	thoughts []events.ThoughtRecorded
	counts   []search.Counts
	created  []events.TaskCreated
	updated  []events.TaskUpdated
	// counter counts the thoughts' terms, into arrays PrepareInto reuses
	// (a chunk's terms were a tenth of the bytes a rebuild allocated).
	counter search.Counter
}

// prepared is what Prepare works out of one record.
type prepared struct {
	// payload is the payload decoded for the fold (*events.ThoughtRecorded
	// as decodeForFold gives it, *events.TaskCreated, *events.TaskUpdated);
	// nil for the other types and for one that does not decode (the fold
	// decodes it again and reports why).
	payload any
	counts  *search.Counts // a thought's: its index document's terms
}

// Prepare works out what folding recs needs of each record alone. It reads
// nothing but the records, so it may run on any goroutine; recs must be
// consecutive (seq order, none skipped), as they are folded.
func Prepare(recs []ledger.Record) *Prepared { return PrepareInto(nil, recs) }

// PrepareInto is Prepare into p's memory (p nil: new), which a pass that
// prepares chunk after chunk reuses once it no longer reads what was
// prepared in it: the payloads' structs are written over (what they held
// is not: a fold copies what it keeps of them).
func PrepareInto(p *Prepared, recs []ledger.Record) *Prepared {
	if p == nil {
		p = new(Prepared)
	}
	p.Recs, p.pre = recs, emptied(p.pre, len(recs))[:len(recs)]
	// The payloads and counts go many to an allocation.
	var nThoughts, nCreated, nUpdated int
	for _, r := range recs {
		switch r.Type {
		case events.TypeThoughtRecorded:
			nThoughts++
		case events.TypeTaskCreated:
			nCreated++
		case events.TypeTaskUpdated:
			nUpdated++
		}
	}
	thoughts := emptied(p.thoughts, nThoughts)
	counts := emptied(p.counts, nThoughts)
	created := emptied(p.created, nCreated)
	updated := emptied(p.updated, nUpdated)
	p.thoughts, p.counts, p.created, p.updated = thoughts, counts, created, updated
	counter := &p.counter
	counter.Reuse()
	for i, r := range recs {
		switch r.Type {
		case events.TypeThoughtRecorded:
			thoughts = thoughts[:len(thoughts)+1]
			t := &thoughts[len(thoughts)-1]
			if decodeForFold(r, t) == nil {
				counts = append(counts, counter.Count(thoughtTexts(t)))
				p.pre[i] = prepared{payload: t, counts: &counts[len(counts)-1]}
			}
		case events.TypeTaskCreated:
			created = created[:len(created)+1]
			if c := &created[len(created)-1]; decode(r, c) == nil {
				p.pre[i].payload = c
			}
		case events.TypeTaskUpdated:
			updated = updated[:len(updated)+1]
			if u := &updated[len(updated)-1]; decode(r, u) == nil {
				p.pre[i].payload = u
			}
		}
	}
	return p
}

// Release lets go of what was prepared in p, which PrepareInto may then
// reuse: p keeps nothing it held alive. p may be nil.
func (p *Prepared) Release() {
	if p == nil {
		return
	}
	p.Recs = nil
	clear(p.pre[:cap(p.pre)])
	clear(p.thoughts[:cap(p.thoughts)])
	clear(p.counts[:cap(p.counts)])
	clear(p.created[:cap(p.created)])
	clear(p.updated[:cap(p.updated)])
}

// emptied is s emptied, every element zeroed, with room for n: s's array
// if it has room (appending up to n then never moves it), else a new one.
func emptied[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	clear(s[:cap(s)])
	return s[:0]
}

// at is what was prepared of the record at seq, nil if nothing was.
func (p *Prepared) at(seq uint64) *prepared {
	if p == nil || len(p.Recs) == 0 || seq < p.Recs[0].Seq {
		return nil
	}
	if i := seq - p.Recs[0].Seq; i < uint64(min(len(p.pre), len(p.Recs))) && p.Recs[i].Seq == seq {
		return &p.pre[i]
	}
	return nil
}

// prepared is what was prepared of the record at seq: from the records
// being folded, or the run before them (a lump of the index begun there);
// nil if neither holds it.
func (f *folder) prepared(seq uint64) *prepared {
	if pr := f.pre.at(seq); pr != nil {
		return pr
	}
	return f.prePrev.at(seq)
}

// payloadOf is r's payload decoded with dec, or what was prepared of r
// (dec's result, worked out ahead), shared: the caller only reads it.
func payloadOf[T any](f *folder, r ledger.Record, dec func(ledger.Record, *T) error) (*T, error) {
	if pr := f.prepared(r.Seq); pr != nil {
		if v, ok := pr.payload.(*T); ok {
			return v, nil
		}
	}
	p := new(T)
	return p, dec(r, p)
}

// decodeAny is decode for payloadOf.
func decodeAny[T any](r ledger.Record, p *T) error { return decode(r, p) }

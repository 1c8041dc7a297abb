package search

import (
	"maps"
	"slices"
)

// Batch keeps what a bulk fold changes of the index's per-term entries and
// stats, decoded, from one document to the next, and writes each once at
// Flush. Why: a rebuild's chunk indexes thousands of documents in one
// transaction, and the common terms are in most of them; reading, decoding,
// re-encoding and writing a term's entry (its open block of postings
// included) for every document was most of the index's cost. The values
// Flush writes are those the writes of an unbatched Index would have left,
// so a batched fold and a document-by-document one store the same bytes.
// Sealed blocks and ids are written through as they change; the document
// table's blocks are kept like the entries.
type Batch struct {
	terms map[string]*termEntry // every entry read, all to be written
	st    *stats                // nil until read
	docs  map[uint64]*docBlock  // the document table's blocks read, the dirty ones to be written
	// The project numbers read or assigned (written through as assigned):
	// a project's number never changes.
	projects map[string]uint64

	// A document's term counts, reused from one document to the next.
	counts Counts
	all    []string
	words  wordCache
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	return &Batch{terms: map[string]*termEntry{}, docs: map[uint64]*docBlock{}, projects: map[string]uint64{}}
}

// Batched returns the index kept in sp, whose documents docs reads, with
// its term entries and stats kept in b until b.Flush.
func Batched(sp Space, docs Docs, b *Batch) *Index { return &Index{sp: sp, docs: docs, batch: b} }

// Flush writes the batch's term entries, in key order, the blocks of the
// document table it changed and stats to sp, and empties the batch.
func (b *Batch) Flush(sp Space) error {
	if b == nil {
		return nil
	}
	ix := &Index{sp: sp}
	for _, t := range slices.Sorted(maps.Keys(b.terms)) {
		if err := ix.putTerm(t, *b.terms[t]); err != nil {
			return err
		}
	}
	clear(b.terms)
	for _, n := range slices.Sorted(maps.Keys(b.docs)) {
		if db := b.docs[n]; db.dirty {
			if err := sp.Put(docKey(n), db.v); err != nil {
				return err
			}
		}
	}
	clear(b.docs)
	clear(b.projects)
	if b.st != nil {
		if err := ix.putStats(*b.st); err != nil {
			return err
		}
		b.st = nil
	}
	return nil
}

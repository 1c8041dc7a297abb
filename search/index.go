package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Space is the key/value area the index lives in. *boltstore.Space (a
// projection space of the ledger file) satisfies it; the tests use an
// in-memory one. Values returned by Get and passed to Scan are only read
// before the next call, never kept.
type Space interface {
	Get(key []byte) []byte
	Put(key, value []byte) error
	Delete(key []byte) error
	// Scan calls fn for each key with the prefix, in byte order (reversed if
	// reverse), until fn returns false or an error.
	Scan(prefix []byte, reverse bool, fn func(k, v []byte) (bool, error)) error
}

// Kind is the sort of knowledge a document holds.
type Kind uint8

// The kinds of documents. Zero is not a kind.
const (
	Thought Kind = iota + 1
	Finding
	Learning
	Memory
)

var kindNames = [...]string{Thought: "thought", Finding: "finding", Learning: "learning", Memory: "memory"}

func (k Kind) String() string {
	if k >= Thought && k <= Memory {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind returns the kind named s (thought, finding, learning, memory).
func ParseKind(s string) (Kind, error) {
	for k := Thought; k <= Memory; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("kind %q: %w", s, ErrInvalid)
}

// Field is one named text of a document (a summary, details, a pattern…).
type Field struct {
	Name, Text string
}

// Doc is one piece of knowledge as the index sees it. Seq and Hash name the
// ledger event that recorded it, so a hit can be proven.
type Doc struct {
	ID      string // Θ-0001, F-0001, L-0001, M-…
	Kind    Kind
	Project string // "" when the knowledge belongs to no project
	Author  string
	Seq     uint64
	Hash    [32]byte
	Fields  []Field
	// Counts, if set, are CountTerms(Fields), counted ahead by the
	// caller; Add counts them itself otherwise.
	Counts *Counts
}

// Docs returns the document recorded by the ledger event at seq, as it was
// added. The index keeps no text of its own: it reads a hit's document (for
// its snippet) and a removed document's terms from the event, through Docs.
type Docs func(seq uint64) (Doc, error)

// Errors returned by the index.
var (
	ErrInvalid   = errors.New("invalid document")
	ErrDuplicate = errors.New("document already indexed")
	ErrNotFound  = errors.New("document not indexed")
	ErrCorrupt   = errors.New("search index corrupt")
)

// Key prefixes; see the package doc for the layout.
const (
	keyStats   = 's'
	keyDF      = 't'
	keyPosting = 'p'
	keyID      = 'i'
	keyProject = 'j'
	keyDoc     = 'd'
)

// blockBytes is the size past which a term's last block of postings is
// left as it is and the next posting starts a new one: large enough that
// the key of a block costs little beside its postings, small enough that
// appending to it (read, append, write) stays cheap.
const blockBytes = 256

// Index is the full-text index in one Space. It holds no state of its own, so
// an Index is as cheap as the Space it wraps and as valid as its transaction.
type Index struct {
	sp    Space
	docs  Docs
	batch *Batch // nil: every write goes to sp at once
}

// New returns the index kept in sp, whose documents docs reads.
func New(sp Space, docs Docs) *Index { return &Index{sp: sp, docs: docs} }

// stats are the collection-wide figures BM25 needs, kept incrementally.
type stats struct {
	docs, totalLen, nextDoc, nextProject uint64
}

func (ix *Index) stats() (stats, error) {
	if ix.batch != nil && ix.batch.st != nil {
		return *ix.batch.st, nil
	}
	var s stats
	v := ix.sp.Get([]byte{keyStats})
	if v == nil {
		return s, nil
	}
	var err error
	for _, p := range []*uint64{&s.docs, &s.totalLen, &s.nextDoc, &s.nextProject} {
		if *p, v, err = uvarint(v); err != nil {
			return s, fmt.Errorf("stats: %w", err)
		}
	}
	return s, nil
}

func (ix *Index) putStats(s stats) error {
	if ix.batch != nil {
		if ix.batch.st == nil {
			ix.batch.st = new(stats)
		}
		*ix.batch.st = s
		return nil
	}
	b := binary.AppendUvarint(nil, s.docs)
	b = binary.AppendUvarint(b, s.totalLen)
	b = binary.AppendUvarint(b, s.nextDoc)
	b = binary.AppendUvarint(b, s.nextProject)
	return ix.sp.Put([]byte{keyStats}, b)
}

// Counts are a document's terms counted, as Add counts them: its distinct
// terms in byte order (so the writes, and their bytes, do not depend on
// map order), how often each occurs, and its length in terms. A caller
// that prepares documents ahead of adding them (on another goroutine than
// the one writing the index) counts them with CountTerms and hands them to
// Add in Doc.Counts.
type Counts struct {
	Terms  []string
	Freqs  []uint64 // Freqs[i]: occurrences of Terms[i]
	Length uint64
}

// CountTerms counts the terms of fields, as Add does.
func CountTerms(fields []Field) *Counts {
	var c Counter
	counts := c.Count(fields)
	return &counts
}

// A Counter counts the terms of one document after another, as Add does,
// into arrays it allocates many documents at a time: the Counts it returns
// stay valid (it never writes over them) until Reuse.
type Counter struct {
	all     []string // every term of the document, in order of appearance
	scratch []uint64 // the document's Freqs while counted
	words   wordCache
	terms   []string // room for the next documents' Terms
	freqs   []uint64 // and Freqs
	// The arrays counted into so far (terms, freqs: the last), from the
	// first, and how many of them have been reused since Reuse.
	slabs  []counterSlab
	reused int
}

// counterSlab is one pair of a Counter's arrays.
type counterSlab struct {
	terms []string
	freqs []uint64
}

// counterSlabLen is how many terms a Counter's arrays take at a time.
const counterSlabLen = 4096

// Count counts the terms of fields.
func (c *Counter) Count(fields []Field) Counts {
	out := Counts{Freqs: c.scratch[:0]}
	c.all = countInto(&out, fields, c.all, &c.words)
	c.scratch = out.Freqs
	n := len(out.Terms)
	if cap(c.terms)-len(c.terms) < n {
		c.nextSlab(n)
	}
	i := len(c.terms)
	c.terms, c.freqs = append(c.terms, out.Terms...), append(c.freqs, out.Freqs...)
	out.Terms, out.Freqs = c.terms[i:i+n:i+n], c.freqs[i:i+n:i+n]
	return out
}

// nextSlab makes room for n terms: the next array counted into before
// Reuse if it is big enough, else a new one.
func (c *Counter) nextSlab(n int) {
	for c.reused < len(c.slabs) {
		sl := c.slabs[c.reused]
		c.reused++
		if cap(sl.terms) >= n {
			c.terms, c.freqs = sl.terms[:0], sl.freqs[:0]
			return
		}
	}
	c.terms = make([]string, 0, max(counterSlabLen, n))
	c.freqs = make([]uint64, 0, max(counterSlabLen, n))
	c.slabs = append(c.slabs, counterSlab{c.terms, c.freqs})
	c.reused = len(c.slabs)
}

// Reuse has c count the next documents into the arrays it counted the
// ones before into, for a caller that no longer reads any Counts c
// returned (a pass that counts batch after batch of documents): fewer
// bytes allocated. c keeps what it learnt of the words it has seen.
func (c *Counter) Reuse() {
	for _, sl := range c.slabs {
		clear(sl.terms[:cap(sl.terms)]) // (the terms are garbage to it now)
	}
	c.terms, c.freqs, c.reused = nil, nil, 0
}

// countInto fills c with the counts of fields, reusing c's slices, and all,
// a scratch slice for every term in order of appearance, which it returns.
// c's slices are c.Terms[:0]'s array reused, so a Counter copies them out.
func countInto(c *Counts, fields []Field, all []string, words *wordCache) []string {
	all = all[:0]
	for _, f := range fields {
		tokenize(f.Text, words, true, func(t string, _, _, _ int) { all = append(all, t) })
	}
	c.Length = uint64(len(all))
	slices.Sort(all)
	// The distinct terms go to the front of all, their counts to Freqs.
	c.Freqs = c.Freqs[:0]
	d := 0
	for i, t := range all {
		if i > 0 && t == all[d-1] {
			c.Freqs[d-1]++
			continue
		}
		all[d] = t
		c.Freqs = append(c.Freqs, 1)
		d++
	}
	c.Terms = all[:d]
	return all
}

// counts returns the counts of doc's fields: doc.Counts if the caller
// counted them, else counted now (in a batch, into the batch's own, valid
// until the next call).
func (ix *Index) counts(doc *Doc) *Counts {
	if doc.Counts != nil {
		return doc.Counts
	}
	if b := ix.batch; b != nil {
		b.all = countInto(&b.counts, doc.Fields, b.all, &b.words)
		return &b.counts
	}
	return CountTerms(doc.Fields)
}

// Add indexes doc. It fails with ErrInvalid for a document without an id or
// with an unknown kind, or whose seq is below the last document's (the
// index is folded in log order: documents are numbered in the order of
// their seqs, which a search as of a seq counts on), and with ErrDuplicate
// when the id is already indexed. Docs must return doc for doc.Seq from
// then on.
//
// A thought gets no id entry (one per thought would be a fifth of the
// index): thoughts are not removed by id, so Has, Remove and ErrDuplicate
// know nothing of them, and a caller that replaces one removes it by its
// seq (RemoveAt).
func (ix *Index) Add(doc Doc) error {
	if doc.ID == "" || doc.Kind < Thought || doc.Kind > Memory {
		return fmt.Errorf("add %q (%s): %w", doc.ID, doc.Kind, ErrInvalid)
	}
	var key []byte // the id's key: thoughts have none (Remove, Has)
	if doc.Kind != Thought {
		if key = idKey(doc.ID); ix.sp.Get(key) != nil {
			return fmt.Errorf("add %s: %w", doc.ID, ErrDuplicate)
		}
	}
	s, err := ix.stats()
	if err != nil {
		return err
	}
	if s.nextDoc > 0 {
		last, err := ix.docAt(s.nextDoc - 1)
		if err != nil {
			return err
		}
		if doc.Seq < last.seq {
			return fmt.Errorf("add %s at seq %d, after a document at seq %d: %w", doc.ID, doc.Seq, last.seq, ErrInvalid)
		}
	}
	project, err := ix.projectNumber(doc.Project, &s)
	if err != nil {
		return err
	}
	num := s.nextDoc
	s.nextDoc++
	c := ix.counts(&doc)
	length := c.Length
	for i, t := range c.Terms {
		if b := ix.batch; b != nil {
			// The batch's own entry, changed in place: one lookup.
			e, ok := b.terms[t]
			if !ok {
				loaded, err := ix.term(t)
				if err != nil {
					return err
				}
				e = &loaded
				b.terms[t] = e
			}
			if err := ix.appendPosting(t, e, num, c.Freqs[i]); err != nil {
				return fmt.Errorf("add %s: %w", doc.ID, err)
			}
			e.df++
			continue
		}
		e, err := ix.term(t)
		if err != nil {
			return err
		}
		if err := ix.appendPosting(t, &e, num, c.Freqs[i]); err != nil {
			return fmt.Errorf("add %s: %w", doc.ID, err)
		}
		e.df++
		if err := ix.putTerm(t, e); err != nil {
			return err
		}
	}
	if err := ix.addDoc(num, docInfo{seq: doc.Seq, length: length, kind: doc.Kind, project: project}); err != nil {
		return fmt.Errorf("add %s: %w", doc.ID, err)
	}
	if key != nil {
		if err := ix.sp.Put(key, binary.AppendUvarint(nil, num)); err != nil {
			return err
		}
	}
	s.docs++
	s.totalLen += length
	return ix.putStats(s)
}

// Remove takes the document with this id out of the index, so it stops
// matching. It fails with ErrNotFound when the id is not indexed.
func (ix *Index) Remove(id string) error {
	idKey := idKey(id)
	v := ix.sp.Get(idKey)
	if v == nil {
		return fmt.Errorf("remove %s: %w", id, ErrNotFound)
	}
	num, _, err := uvarint(v)
	if err != nil {
		return fmt.Errorf("remove %s: doc number: %w", id, err)
	}
	d, err := ix.docAt(num)
	if err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	doc, err := ix.doc(d.seq, id)
	if err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	if err := ix.removeDoc(doc, num); err != nil {
		return err
	}
	return ix.sp.Delete(idKey)
}

// RemoveAt takes the thought recorded at seq out of the index (a thought
// has no id entry for Remove to find it by). It fails with ErrNotFound if
// no document recorded at seq is indexed, or if it is not a thought.
func (ix *Index) RemoveAt(seq uint64) error {
	doc, err := ix.doc(seq, "")
	if err != nil {
		return fmt.Errorf("remove seq %d: %w", seq, err)
	}
	if doc.Kind != Thought {
		return fmt.Errorf("remove seq %d: a %s, not a thought: %w", seq, doc.Kind, ErrNotFound)
	}
	num, err := ix.docBySeq(seq)
	if err != nil {
		return fmt.Errorf("remove seq %d: %w", seq, err)
	}
	return ix.removeDoc(doc, num)
}

// removeDoc takes doc, indexed as doc number num, out: its postings, its
// entry in the document table (marked removed) and the statistics.
func (ix *Index) removeDoc(doc Doc, num uint64) error {
	s, err := ix.stats()
	if err != nil {
		return err
	}
	c := ix.counts(&doc)
	length := c.Length
	for _, t := range c.Terms {
		e, err := ix.term(t)
		if err != nil {
			return err
		}
		if e.df == 0 {
			return fmt.Errorf("remove %s: term %q not indexed: %w", doc.ID, t, ErrCorrupt)
		}
		if err := ix.removePosting(t, &e, num); err != nil {
			return fmt.Errorf("remove %s: %w", doc.ID, err)
		}
		e.df--
		if err := ix.putTerm(t, e); err != nil {
			return err
		}
	}
	if err := ix.markRemoved(num); err != nil {
		return fmt.Errorf("remove %s: %w", doc.ID, err)
	}
	s.docs--
	s.totalLen -= length
	return ix.putStats(s)
}

// doc reads the document recorded at seq, which must be id's.
func (ix *Index) doc(seq uint64, id string) (Doc, error) {
	d, err := ix.docs(seq)
	if err != nil {
		return Doc{}, fmt.Errorf("document at seq %d: %w", seq, err)
	}
	if id != "" && d.ID != id {
		return Doc{}, fmt.Errorf("seq %d records %q, not %q: %w", seq, d.ID, id, ErrCorrupt)
	}
	return d, nil
}

// Has reports whether a document with this id is indexed (never a
// thought's: Add).
func (ix *Index) Has(id string) bool {
	return ix.sp.Get(idKey(id)) != nil
}

// projectNumber returns the number of project, assigning the next one (and
// counting it in s) the first time a project is seen. Numbers keep postings
// short and are never reused, so a rebuild assigns the same ones.
func (ix *Index) projectNumber(project string, s *stats) (uint64, error) {
	if ix.batch != nil {
		if n, ok := ix.batch.projects[project]; ok {
			return n, nil
		}
	}
	key := append([]byte{keyProject}, project...)
	n := s.nextProject
	if v := ix.sp.Get(key); v != nil {
		var err error
		if n, _, err = uvarint(v); err != nil {
			return 0, err
		}
	} else {
		s.nextProject++
		if err := ix.sp.Put(key, binary.AppendUvarint(nil, n)); err != nil {
			return 0, err
		}
	}
	if ix.batch != nil {
		ix.batch.projects[project] = n
	}
	return n, nil
}

// dfKey and idKey put the length of the term or id before it: these keys
// are only ever read by Get, and in (length, bytes) order the numbered ids
// (Θ-9999, Θ-10000…) and numbers in the text are inserted in key order, at
// the end of their run, rather than into pages already full, which bbolt
// splits into a full page and a nearly empty one.
func dfKey(term string) []byte { return lengthKey(keyDF, term) }

func idKey(id string) []byte { return lengthKey(keyID, id) }

func lengthKey(prefix byte, s string) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(s))
	b = binary.AppendUvarint(append(b, prefix), uint64(len(s)))
	return append(b, s...)
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, ErrCorrupt
	}
	return v, b[n:], nil
}

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
}

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
	keyDoc     = 'd'
	keyID      = 'i'
	keyProject = 'j'
)

// Index is the full-text index in one Space. It holds no state of its own, so
// an Index is as cheap as the Space it wraps and as valid as its transaction.
type Index struct{ sp Space }

// New returns the index kept in sp.
func New(sp Space) *Index { return &Index{sp: sp} }

// stats are the collection-wide figures BM25 needs, kept incrementally.
type stats struct {
	docs, totalLen, nextDoc, nextProject uint64
}

func (ix *Index) stats() (stats, error) {
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
	b := binary.AppendUvarint(nil, s.docs)
	b = binary.AppendUvarint(b, s.totalLen)
	b = binary.AppendUvarint(b, s.nextDoc)
	b = binary.AppendUvarint(b, s.nextProject)
	return ix.sp.Put([]byte{keyStats}, b)
}

// termFreqs counts the terms of a document's fields and returns them in byte
// order (so the writes, and their bytes, do not depend on map order) with the
// document's length in terms.
func termFreqs(fields []Field) (terms []string, tf map[string]uint64, length uint64) {
	tf = map[string]uint64{}
	for _, f := range fields {
		tokenize(f.Text, func(t string, _, _, _ int) {
			if tf[t] == 0 {
				terms = append(terms, t)
			}
			tf[t]++
			length++
		})
	}
	slices.Sort(terms)
	return terms, tf, length
}

// Add indexes doc. It fails with ErrInvalid for a document without an id or
// with an unknown kind, and with ErrDuplicate when the id is already indexed.
func (ix *Index) Add(doc Doc) error {
	if doc.ID == "" || doc.Kind < Thought || doc.Kind > Memory {
		return fmt.Errorf("add %q (%s): %w", doc.ID, doc.Kind, ErrInvalid)
	}
	idKey := append([]byte{keyID}, doc.ID...)
	if ix.sp.Get(idKey) != nil {
		return fmt.Errorf("add %s: %w", doc.ID, ErrDuplicate)
	}
	s, err := ix.stats()
	if err != nil {
		return err
	}
	project, err := ix.projectNumber(doc.Project, &s)
	if err != nil {
		return err
	}
	num := s.nextDoc
	s.nextDoc++
	terms, tf, length := termFreqs(doc.Fields)
	for _, t := range terms {
		df, err := ix.df(t)
		if err != nil {
			return err
		}
		if err := ix.sp.Put(dfKey(t), binary.AppendUvarint(nil, df+1)); err != nil {
			return err
		}
		v := binary.AppendUvarint(nil, tf[t])
		v = binary.AppendUvarint(v, length)
		v = append(v, byte(doc.Kind))
		v = binary.AppendUvarint(v, doc.Seq)
		v = binary.AppendUvarint(v, project)
		if err := ix.sp.Put(postingKey(t, num), v); err != nil {
			return err
		}
	}
	if err := ix.sp.Put(docKey(num), encodeDoc(doc)); err != nil {
		return err
	}
	if err := ix.sp.Put(idKey, binary.BigEndian.AppendUint64(nil, num)); err != nil {
		return err
	}
	s.docs++
	s.totalLen += length
	return ix.putStats(s)
}

// Remove takes the document with this id out of the index, so it stops
// matching. It fails with ErrNotFound when the id is not indexed.
func (ix *Index) Remove(id string) error {
	idKey := append([]byte{keyID}, id...)
	v := ix.sp.Get(idKey)
	if v == nil {
		return fmt.Errorf("remove %s: %w", id, ErrNotFound)
	}
	if len(v) != 8 {
		return fmt.Errorf("remove %s: doc number: %w", id, ErrCorrupt)
	}
	num := binary.BigEndian.Uint64(v)
	doc, err := decodeDoc(ix.sp.Get(docKey(num)))
	if err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	s, err := ix.stats()
	if err != nil {
		return err
	}
	terms, _, length := termFreqs(doc.Fields)
	for _, t := range terms {
		df, err := ix.df(t)
		if err != nil {
			return err
		}
		if df <= 1 {
			err = ix.sp.Delete(dfKey(t))
		} else {
			err = ix.sp.Put(dfKey(t), binary.AppendUvarint(nil, df-1))
		}
		if err != nil {
			return err
		}
		if err := ix.sp.Delete(postingKey(t, num)); err != nil {
			return err
		}
	}
	if err := ix.sp.Delete(docKey(num)); err != nil {
		return err
	}
	if err := ix.sp.Delete(idKey); err != nil {
		return err
	}
	s.docs--
	s.totalLen -= length
	return ix.putStats(s)
}

// Has reports whether a document with this id is indexed.
func (ix *Index) Has(id string) bool {
	return ix.sp.Get(append([]byte{keyID}, id...)) != nil
}

func (ix *Index) df(term string) (uint64, error) {
	v := ix.sp.Get(dfKey(term))
	if v == nil {
		return 0, nil
	}
	df, _, err := uvarint(v)
	if err != nil {
		return 0, fmt.Errorf("df %q: %w", term, err)
	}
	return df, nil
}

// projectNumber returns the number of project, assigning the next one (and
// counting it in s) the first time a project is seen. Numbers keep postings
// short and are never reused, so a rebuild assigns the same ones.
func (ix *Index) projectNumber(project string, s *stats) (uint64, error) {
	key := append([]byte{keyProject}, project...)
	if v := ix.sp.Get(key); v != nil {
		n, _, err := uvarint(v)
		return n, err
	}
	n := s.nextProject
	s.nextProject++
	return n, ix.sp.Put(key, binary.AppendUvarint(nil, n))
}

func dfKey(term string) []byte { return append([]byte{keyDF}, term...) }

func postingPrefix(term string) []byte {
	b := make([]byte, 0, len(term)+10)
	b = append(b, keyPosting)
	b = append(b, term...)
	return append(b, 0)
}

func postingKey(term string, num uint64) []byte {
	return binary.BigEndian.AppendUint64(postingPrefix(term), num)
}

func docKey(num uint64) []byte { return binary.BigEndian.AppendUint64([]byte{keyDoc}, num) }

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, ErrCorrupt
	}
	return v, b[n:], nil
}

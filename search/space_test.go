package search_test

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

// The ledger's spaces (ledger/boltstore) are what the index lives in for real.
var _ search.Space = (*boltstore.Space)(nil)

// memSpace is a sorted map: values in a map, and a sorted copy of the pairs
// made lazily when a Scan follows writes, so building 100k documents does not
// cost an insertion sort and a Scan costs no lookups.
type memSpace struct {
	vals   map[string][]byte
	pairs  []pair
	sorted bool
}

type pair struct{ k, v []byte }

func newMemSpace() *memSpace { return &memSpace{vals: map[string][]byte{}, sorted: true} }

func (m *memSpace) Get(key []byte) []byte { return m.vals[string(key)] }

func (m *memSpace) Put(key, value []byte) error {
	m.vals[string(key)] = bytes.Clone(value)
	m.sorted = false
	return nil
}

func (m *memSpace) Delete(key []byte) error {
	if _, ok := m.vals[string(key)]; ok {
		delete(m.vals, string(key))
		m.sorted = false
	}
	return nil
}

func (m *memSpace) Scan(prefix []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	if !m.sorted {
		m.pairs = m.pairs[:0]
		for k, v := range m.vals {
			m.pairs = append(m.pairs, pair{[]byte(k), v})
		}
		slices.SortFunc(m.pairs, func(a, b pair) int { return bytes.Compare(a.k, b.k) })
		m.sorted = true
	}
	lo, _ := slices.BinarySearchFunc(m.pairs, prefix, func(p pair, t []byte) int { return bytes.Compare(p.k, t) })
	hi := lo
	for hi < len(m.pairs) && bytes.HasPrefix(m.pairs[hi].k, prefix) {
		hi++
	}
	for i := range hi - lo {
		j := lo + i
		if reverse {
			j = hi - 1 - i
		}
		if more, err := fn(m.pairs[j].k, m.pairs[j].v); err != nil || !more {
			return err
		}
	}
	return nil
}

// fingerprint hashes every key and value of sp in key order.
func fingerprint(sp search.Space) (uint64, int) {
	h := xxhash.New()
	n := 0
	sp.Scan(nil, false, func(k, v []byte) (bool, error) {
		h.Write([]byte{byte(len(k) >> 8), byte(len(k))})
		h.Write(k)
		h.Write([]byte{byte(len(v) >> 8), byte(len(v))})
		h.Write(v)
		n++
		return true, nil
	})
	return h.Sum64(), n
}

// docsOf stands in for the ledger the documents are recorded in: it
// returns the one of docs with the seq asked for.
func docsOf(docs []search.Doc) search.Docs {
	bySeq := make(map[uint64]search.Doc, len(docs))
	for _, d := range docs {
		bySeq[d.Seq] = d
	}
	return func(seq uint64) (search.Doc, error) {
		d, ok := bySeq[seq]
		if !ok {
			return d, fmt.Errorf("no document at seq %d", seq)
		}
		return d, nil
	}
}

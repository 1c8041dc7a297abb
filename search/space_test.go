package search_test

import (
	"bytes"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/search"
)

// The ledger's spaces are what the index lives in for real.
var _ search.Space = (*ledger.Space)(nil)

// memSpace is a sorted map: values in a map, keys sorted lazily when a Scan
// follows writes, so building 100k documents does not cost an insertion sort.
type memSpace struct {
	vals   map[string][]byte
	keys   []string
	sorted bool
}

func newMemSpace() *memSpace { return &memSpace{vals: map[string][]byte{}, sorted: true} }

func (m *memSpace) Get(key []byte) []byte { return m.vals[string(key)] }

func (m *memSpace) Put(key, value []byte) error {
	if _, ok := m.vals[string(key)]; !ok {
		m.sorted = false
	}
	m.vals[string(key)] = bytes.Clone(value)
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
		m.keys = m.keys[:0]
		for k := range m.vals {
			m.keys = append(m.keys, k)
		}
		slices.Sort(m.keys)
		m.sorted = true
	}
	p := string(prefix)
	lo, _ := slices.BinarySearch(m.keys, p)
	hi := lo
	for hi < len(m.keys) && strings.HasPrefix(m.keys[hi], p) {
		hi++
	}
	for i := range hi - lo {
		j := lo + i
		if reverse {
			j = hi - 1 - i
		}
		if more, err := fn([]byte(m.keys[j]), m.vals[m.keys[j]]); err != nil || !more {
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

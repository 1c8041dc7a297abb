package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A term's postings are kept in blocks, in doc-number order. A block counts
// its doc numbers from a base (its first posting's, when it was started) and
// its seqs from the seq its value starts with, then holds one posting after
// another:
//
//	uvarint doc - base, uvarint tf, uvarint doc length, kind byte,
//	varint seq - base seq, uvarint project number
//
// Doc numbers only grow, so a posting goes into the term's open block, kept
// in the term's own key beside its document frequency; once that block
// holds blockBytes it is sealed under a key of its own (the term and its
// base) and the next posting opens a new one. A posting takes 6 to 9 bytes
// rather than a key of its own, and a rare term's postings take no key but
// the term's.

// posting is one document's entry in a term's postings.
type posting struct {
	tf, length, seq, project uint64
	kind                     Kind
}

// termEntry is a term's "t" value: its document frequency, then its open
// block, if it has one.
type termEntry struct {
	df, base uint64
	open     []byte // nil: no open block
}

// term returns the entry of term (zero for a term no document holds). Its
// open block is a copy, or in a batch the batch's own, which only putTerm
// may then change.
func (ix *Index) term(term string) (termEntry, error) {
	if ix.batch != nil {
		if e, ok := ix.batch.terms[term]; ok {
			return *e, nil
		}
	}
	var e termEntry
	v := ix.sp.Get(dfKey(term))
	if v == nil {
		return e, nil
	}
	var err error
	if e.df, v, err = uvarint(v); err == nil && len(v) > 0 {
		if e.base, v, err = uvarint(v); err == nil {
			e.open = bytes.Clone(v)
		}
	}
	if err != nil {
		return e, fmt.Errorf("df %q: %w", term, err)
	}
	return e, nil
}

// putTerm stores e as term's entry, or deletes it when no document holds
// the term any more.
func (ix *Index) putTerm(term string, e termEntry) error {
	if ix.batch != nil {
		if p, ok := ix.batch.terms[term]; ok {
			*p = e
		} else {
			ix.batch.terms[term] = &e
		}
		return nil
	}
	if e.df == 0 {
		return ix.sp.Delete(dfKey(term))
	}
	v := binary.AppendUvarint(nil, e.df)
	if e.open != nil {
		v = append(binary.AppendUvarint(v, e.base), e.open...)
	}
	return ix.sp.Put(dfKey(term), v)
}

func postingPrefix(term string) []byte {
	b := make([]byte, 0, len(term)+10)
	b = append(b, keyPosting)
	b = append(b, term...)
	return append(b, 0)
}

func blockKey(term string, base uint64) []byte {
	return binary.BigEndian.AppendUint64(postingPrefix(term), base)
}

// keyBase is the base of the sealed block stored at key.
func keyBase(key []byte) (uint64, error) {
	if len(key) < 8 {
		return 0, ErrCorrupt
	}
	return binary.BigEndian.Uint64(key[len(key)-8:]), nil
}

// appendPosting adds doc num's posting of term to e's open block, num being
// above every doc number the term's postings hold, sealing the open block
// first if it is full. It reads and writes by key only, never scans: a
// batch fold buffers its writes, which a scan would have to flush.
func (ix *Index) appendPosting(term string, e *termEntry, num uint64, p posting) error {
	if len(e.open) >= blockBytes {
		if err := ix.sp.Put(blockKey(term, e.base), e.open); err != nil {
			return err
		}
		e.open = nil
	}
	if e.open == nil {
		e.base, e.open = num, binary.AppendUvarint(nil, p.seq)
	}
	baseSeq, _, err := uvarint(e.open)
	if err != nil || num < e.base {
		return fmt.Errorf("postings of %q: %w", term, ErrCorrupt)
	}
	b := binary.AppendUvarint(e.open, num-e.base)
	b = binary.AppendUvarint(b, p.tf)
	b = binary.AppendUvarint(b, p.length)
	b = append(b, byte(p.kind))
	b = binary.AppendVarint(b, int64(p.seq-baseSeq))
	e.open = binary.AppendUvarint(b, p.project)
	return nil
}

// removePosting takes doc num's posting out of term's postings: out of e's
// open block, or out of the sealed block holding it (deleted if left empty).
func (ix *Index) removePosting(term string, e *termEntry, num uint64) error {
	if e.open != nil && num >= e.base {
		block, found, err := cutPosting(e.base, e.open, num)
		switch {
		case err != nil:
			return fmt.Errorf("postings of %q: %w", term, err)
		case !found:
			return fmt.Errorf("postings of %q: doc %d missing: %w", term, num, ErrCorrupt)
		}
		e.open = block
		return nil
	}
	// The sealed block holding num is the last whose base is at most num:
	// walk the keys back from the newest (a removed document is usually a
	// recent one) and decode only that block.
	var key, block []byte
	err := ix.sp.Scan(postingPrefix(term), true, func(k, v []byte) (bool, error) {
		base, err := keyBase(k)
		if err != nil || base > num {
			return err == nil, err
		}
		cut, found, err := cutPosting(base, v, num)
		if found {
			key, block = bytes.Clone(k), cut
		}
		return false, err
	})
	switch {
	case err != nil:
		return fmt.Errorf("postings of %q: %w", term, err)
	case key == nil:
		return fmt.Errorf("postings of %q: doc %d missing: %w", term, num, ErrCorrupt)
	case block == nil:
		return ix.sp.Delete(key)
	}
	return ix.sp.Put(key, block)
}

// cutPosting returns a copy of block without doc num's posting (nil if no
// posting is left), and whether it held one.
func cutPosting(base uint64, block []byte, num uint64) (cut []byte, found bool, err error) {
	err = eachPosting(base, block, func(n uint64, _ posting, start, end int) bool {
		if n != num {
			return true
		}
		found = true
		if _, rest, _ := uvarint(block); start == len(block)-len(rest) && end == len(block) {
			return false // the only posting
		}
		cut = append(append([]byte(nil), block[:start]...), block[end:]...)
		return false
	})
	return cut, found, err
}

// eachPosting calls fn with each posting of a block whose doc numbers count
// from base, in order, with the bytes [start, end) of the block it takes,
// until fn returns false. It returns ErrCorrupt for a block that does not
// decode.
func eachPosting(base uint64, block []byte, fn func(num uint64, p posting, start, end int) bool) error {
	baseSeq, v, err := uvarint(block)
	if err != nil {
		return err
	}
	for len(v) > 0 {
		start := len(block) - len(v)
		var off uint64
		var p posting
		if off, v, err = uvarint(v); err != nil {
			return err
		}
		if p.tf, v, err = uvarint(v); err != nil {
			return err
		}
		if p.length, v, err = uvarint(v); err != nil {
			return err
		}
		if len(v) == 0 {
			return ErrCorrupt
		}
		p.kind, v = Kind(v[0]), v[1:]
		dseq, n := binary.Varint(v)
		if n <= 0 {
			return ErrCorrupt
		}
		v = v[n:]
		p.seq = baseSeq + uint64(dseq)
		if p.project, v, err = uvarint(v); err != nil {
			return err
		}
		if !fn(base+off, p, start, len(block)-len(v)) {
			return nil
		}
	}
	return nil
}

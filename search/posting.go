package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A term's postings are kept in blocks, in doc-number order. A block counts
// its first doc number from a base (its first posting's, when it was
// started), and each posting after it from the posting before:
//
//	uvarint doc gap<<1 | tf == 1, [uvarint tf, if tf > 1]
//
// What a document has whatever the term (kind, project, length, seq) is in
// the document table (doctable.go), once per document. The usual posting
// (a gap below 64, the term once) is one byte.
//
// Doc numbers only grow, so a posting goes into the term's open block, kept
// in the term's own key beside its document frequency; once that block
// holds blockBytes it is sealed under a key of its own (the term and its
// base) and the next posting opens a new one. A posting takes a few bytes
// rather than a key of its own, and a rare term's postings take no key but
// the term's.

// termEntry is a term's "t" value: its document frequency, then its open
// block, if it has one. last is the doc number of the open block's last
// posting, which the next one is coded against: worked out from the block
// when first needed (lastOK), then kept up to date, so a batch decodes each
// block once.
type termEntry struct {
	df, base uint64
	open     []byte // nil: no open block
	last     uint64
	lastOK   bool
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
			kept := e // a copy: e itself stays on the stack
			ix.batch.terms[term] = &kept
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

// appendPosting adds doc num's posting of term, with term frequency tf,
// to e's open block, num being above every doc number the term's postings
// hold, sealing the open block first if it is full. It reads and writes by
// key only, never scans: a batch fold buffers its writes, which a scan
// would have to flush.
func (ix *Index) appendPosting(term string, e *termEntry, num, tf uint64) error {
	if len(e.open) >= blockBytes {
		if err := ix.sp.Put(blockKey(term, e.base), e.open); err != nil {
			return err
		}
		e.open = nil
	}
	if e.open == nil {
		e.base, e.lastOK = num, false
	} else if !e.lastOK {
		err := eachPosting(e.base, e.open, func(n, _ uint64) bool {
			e.last = n
			return true
		})
		if err != nil {
			return fmt.Errorf("postings of %q: %w", term, err)
		}
		e.lastOK = true
	}
	if e.open != nil && num <= e.last || num < e.base {
		return fmt.Errorf("postings of %q: doc %d after %d: %w", term, num, e.last, ErrCorrupt)
	}
	prev := e.base
	if e.open != nil {
		prev = e.last
	}
	e.open = encodePosting(e.open, num-prev, tf)
	e.last, e.lastOK = num, true
	return nil
}

// encodePosting appends a posting to block: its doc number's gap from the
// posting before (from the block's base for its first) and tf.
func encodePosting(block []byte, gap, tf uint64) []byte {
	if tf == 1 {
		return binary.AppendUvarint(block, gap<<1|1)
	}
	return binary.AppendUvarint(binary.AppendUvarint(block, gap<<1), tf)
}

// removePosting takes doc num's posting out of term's postings: out of e's
// open block, or out of the newest sealed block whose base is not past num
// (deleted if left empty).
func (ix *Index) removePosting(term string, e *termEntry, num uint64) error {
	if e.open != nil && e.base <= num {
		block, found, err := cutPosting(e.base, e.open, num)
		switch {
		case err != nil:
			return fmt.Errorf("postings of %q: %w", term, err)
		case found:
			e.open, e.lastOK = block, false
			return nil
		}
	}
	// Walk the keys back from the newest (a removed document is usually a
	// recent one) to the block holding num: the newest with a base not past
	// it.
	var key, block []byte
	found := false
	err := ix.sp.Scan(postingPrefix(term), true, func(k, v []byte) (bool, error) {
		base, err := keyBase(k)
		if err != nil || base > num {
			return err == nil, err
		}
		cut, ok, err := cutPosting(base, v, num)
		key, block, found = bytes.Clone(k), cut, ok
		return false, err
	})
	switch {
	case err != nil:
		return fmt.Errorf("postings of %q: %w", term, err)
	case !found:
		return fmt.Errorf("postings of %q: doc %d missing: %w", term, num, ErrCorrupt)
	case block == nil:
		return ix.sp.Delete(key)
	}
	return ix.sp.Put(key, block)
}

// cutPosting returns block, whose doc numbers count from base, coded again
// without doc num's posting (nil if no posting is left), and whether it
// held one.
func cutPosting(base uint64, block []byte, num uint64) (cut []byte, found bool, err error) {
	prev := base
	err = eachPosting(base, block, func(n, tf uint64) bool {
		if n == num {
			found = true
			return true
		}
		cut = encodePosting(cut, n-prev, tf)
		prev = n
		return true
	})
	return cut, found, err
}

// eachPosting calls fn with the doc number and tf of each posting of a
// block whose doc numbers count from base, in order, until fn returns
// false. It returns ErrCorrupt for a block that does not decode.
func eachPosting(base uint64, block []byte, fn func(num, tf uint64) bool) error {
	v := block
	num := base
	for first := true; len(v) > 0; first = false {
		head, n := binary.Uvarint(v)
		if n <= 0 {
			return ErrCorrupt
		}
		v = v[n:]
		tf := uint64(1)
		if head&1 == 0 {
			if tf, n = binary.Uvarint(v); n <= 0 || tf < 2 {
				return ErrCorrupt
			}
			v = v[n:]
		}
		gap := head >> 1
		if !first && gap == 0 {
			return ErrCorrupt
		}
		num += gap
		if num < gap {
			return ErrCorrupt
		}
		if !fn(num, tf) {
			return nil
		}
	}
	return nil
}

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
//	uvarint doc gap, uvarint tf<<3 | (kind-1)<<1 | new project,
//	[uvarint project number, if new project], uvarint doc length,
//	seq: uvarint for a block's first posting, then the zigzag varint
//	of seq - the previous posting's seq
//
// A block's first posting always carries its project. In the usual posting
// (a small gap and tf, the project of the one before, a seq a few events
// on) that is 4 bytes, where the per-document fields cost most.
//
// Doc numbers only grow, so a posting goes into the term's open block, kept
// in the term's own key beside its document frequency; once that block
// holds blockBytes it is sealed under a key of its own (the term and its
// base) and the next posting opens a new one. A posting takes a few bytes
// rather than a key of its own, and a rare term's postings take no key but
// the term's.

// posting is one document's entry in a term's postings.
type posting struct {
	tf, length, seq, project uint64
	kind                     Kind
}

// termEntry is a term's "t" value: its document frequency, then its open
// block, if it has one. last is the open block's last posting, which the
// next one is coded against: worked out from the block when first needed
// (lastOK), then kept up to date, so a batch decodes each block once.
type termEntry struct {
	df, base uint64
	open     []byte // nil: no open block
	last     postingRef
	lastOK   bool
}

// postingRef is what a posting is coded against: the posting before it.
type postingRef struct{ num, seq, project uint64 }

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
		e.base, e.lastOK = num, false
	} else if !e.lastOK {
		err := eachPosting(e.base, e.open, func(n uint64, q posting) bool {
			e.last = postingRef{n, q.seq, q.project}
			return true
		})
		if err != nil {
			return fmt.Errorf("postings of %q: %w", term, err)
		}
		e.lastOK = true
	}
	if e.open != nil && num <= e.last.num || num < e.base {
		return fmt.Errorf("postings of %q: doc %d after %d: %w", term, num, e.last.num, ErrCorrupt)
	}
	var prev *postingRef
	if e.open != nil {
		prev = &e.last
	}
	e.open = encodePosting(e.open, e.base, prev, num, p)
	e.last, e.lastOK = postingRef{num, p.seq, p.project}, true
	return nil
}

// encodePosting appends doc num's posting to block, after prev (nil for a
// block's first posting, whose doc number counts from base).
func encodePosting(block []byte, base uint64, prev *postingRef, num uint64, p posting) []byte {
	head := p.tf<<3 | uint64(p.kind-1)<<1
	if prev == nil {
		block = binary.AppendUvarint(block, num-base)
		block = binary.AppendUvarint(block, head|1)
		block = binary.AppendUvarint(block, p.project)
		block = binary.AppendUvarint(block, p.length)
		return binary.AppendUvarint(block, p.seq)
	}
	block = binary.AppendUvarint(block, num-prev.num)
	if p.project != prev.project {
		block = binary.AppendUvarint(block, head|1)
		block = binary.AppendUvarint(block, p.project)
	} else {
		block = binary.AppendUvarint(block, head)
	}
	block = binary.AppendUvarint(block, p.length)
	return binary.AppendVarint(block, int64(p.seq-prev.seq))
}

// removePosting takes doc num's posting out of term's postings: out of e's
// open block, or out of the sealed block holding it (deleted if left empty).
func (ix *Index) removePosting(term string, e *termEntry, num uint64) error {
	return ix.cutFrom(term, e, fmt.Sprintf("doc %d", num), func(base uint64) bool { return base <= num },
		func(n uint64, _ posting) bool { return n == num })
}

// removePostingAt takes the posting of the document recorded at seq out of
// term's postings, as removePosting does, for a document found by its seq
// (a thought: no id entry gives its number). Doc numbers tell nothing of
// seqs, so it decodes the sealed blocks back from the newest until one
// holds it.
func (ix *Index) removePostingAt(term string, e *termEntry, seq uint64) error {
	return ix.cutFrom(term, e, fmt.Sprintf("seq %d", seq), func(uint64) bool { return true },
		func(_ uint64, p posting) bool { return p.seq == seq })
}

// cutFrom takes the posting is picks out of term's postings: out of e's
// open block if it is there, else out of the newest sealed block whose base
// may hold it (maybe) and that does (deleted if left empty). what names the
// posting in errors.
func (ix *Index) cutFrom(term string, e *termEntry, what string, maybe func(base uint64) bool, is func(num uint64, p posting) bool) error {
	if e.open != nil && maybe(e.base) {
		block, found, err := cutPosting(e.base, e.open, is)
		switch {
		case err != nil:
			return fmt.Errorf("postings of %q: %w", term, err)
		case found:
			e.open, e.lastOK = block, false
			return nil
		}
	}
	// Walk the keys back from the newest (a removed document is usually a
	// recent one) and decode only the blocks that may hold the posting.
	var key, block []byte
	err := ix.sp.Scan(postingPrefix(term), true, func(k, v []byte) (bool, error) {
		base, err := keyBase(k)
		if err != nil || !maybe(base) {
			return err == nil, err
		}
		cut, found, err := cutPosting(base, v, is)
		if found {
			key, block = bytes.Clone(k), cut
		}
		return !found && err == nil, err
	})
	switch {
	case err != nil:
		return fmt.Errorf("postings of %q: %w", term, err)
	case key == nil:
		return fmt.Errorf("postings of %q: %s missing: %w", term, what, ErrCorrupt)
	case block == nil:
		return ix.sp.Delete(key)
	}
	return ix.sp.Put(key, block)
}

// cutPosting returns block, whose doc numbers count from base, coded again
// without the posting is picks out (nil if no posting is left), and whether it
// held one.
func cutPosting(base uint64, block []byte, is func(num uint64, p posting) bool) (cut []byte, found bool, err error) {
	var prev *postingRef
	var last postingRef
	err = eachPosting(base, block, func(n uint64, p posting) bool {
		if !found && is(n, p) {
			found = true
			return true
		}
		cut = encodePosting(cut, base, prev, n, p)
		last, prev = postingRef{n, p.seq, p.project}, &last
		return true
	})
	return cut, found, err
}

// eachPosting calls fn with each posting of a block whose doc numbers count
// from base, in order, until fn returns false. It returns ErrCorrupt for a
// block that does not decode.
func eachPosting(base uint64, block []byte, fn func(num uint64, p posting) bool) error {
	v := block
	var prev postingRef
	for first := true; len(v) > 0; first = false {
		var gap, head uint64
		var p posting
		var err error
		if gap, v, err = uvarint(v); err != nil {
			return err
		}
		if head, v, err = uvarint(v); err != nil {
			return err
		}
		p.tf, p.kind, p.project = head>>3, Kind(head>>1&3+1), prev.project
		if head&1 != 0 {
			if p.project, v, err = uvarint(v); err != nil {
				return err
			}
		} else if first {
			return ErrCorrupt
		}
		if p.length, v, err = uvarint(v); err != nil {
			return err
		}
		num := prev.num + gap
		if first {
			num = base + gap
			if p.seq, v, err = uvarint(v); err != nil {
				return err
			}
		} else {
			d, n := binary.Varint(v)
			if n <= 0 {
				return ErrCorrupt
			}
			v, p.seq = v[n:], prev.seq+uint64(d)
		}
		if num < prev.num || (!first && num == prev.num) {
			return ErrCorrupt
		}
		prev = postingRef{num, p.seq, p.project}
		if !fn(num, p) {
			return nil
		}
	}
	return nil
}

package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A term's postings are kept in blocks, in doc-number order: the key of a
// block is the term and the doc number its offsets count from (its first
// posting's, when it was started), its value the seq its seq offsets count
// from, then one posting after another:
//
//	uvarint doc - base, uvarint tf, uvarint doc length, kind byte,
//	varint seq - base seq, uvarint project number
//
// Doc numbers only grow, so a posting is appended to the term's last block
// (or starts a new one once that one holds blockBytes; the term's document
// frequency key names its last block), and a block's
// offsets stay small: a posting takes 6 to 9 bytes, rather than a key of
// its own of the term and the doc.

// posting is one document's entry in a term's postings.
type posting struct {
	tf, length, seq, project uint64
	kind                     Kind
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

// appendPosting adds doc num's posting of term, num being above every doc
// number the term's postings hold, to the block at base last (if df > 0:
// the term has postings) unless that one is full, and returns the base of
// the block it went to. It reads by key only, never scans: a batch fold
// buffers its writes, which a scan would have to flush.
func (ix *Index) appendPosting(term string, df, last, num uint64, p posting) (uint64, error) {
	var block []byte
	if df > 0 {
		if v := ix.sp.Get(blockKey(term, last)); len(v) < blockBytes {
			block = bytes.Clone(v)
		}
	}
	if block == nil {
		last, block = num, binary.AppendUvarint(nil, p.seq)
	}
	baseSeq, _, err := uvarint(block)
	if err != nil || num < last {
		return 0, fmt.Errorf("postings of %q: %w", term, ErrCorrupt)
	}
	block = binary.AppendUvarint(block, num-last)
	block = binary.AppendUvarint(block, p.tf)
	block = binary.AppendUvarint(block, p.length)
	block = append(block, byte(p.kind))
	block = binary.AppendVarint(block, int64(p.seq-baseSeq))
	block = binary.AppendUvarint(block, p.project)
	return last, ix.sp.Put(blockKey(term, last), block)
}

// removePosting takes doc num's posting out of term's postings; a block
// left empty is deleted.
func (ix *Index) removePosting(term string, num uint64) error {
	var key, block []byte
	var start, end int
	err := ix.sp.Scan(postingPrefix(term), false, func(k, v []byte) (bool, error) {
		base, _, _, err := blockBase(k, v)
		if err != nil || base > num {
			return false, err
		}
		return true, eachPosting(k, v, func(n uint64, _ posting, s, e int) bool {
			if n != num {
				return true
			}
			key, block, start, end = bytes.Clone(k), bytes.Clone(v), s, e
			return false
		})
	})
	switch {
	case err != nil:
		return fmt.Errorf("postings of %q: %w", term, err)
	case key == nil:
		return fmt.Errorf("postings of %q: doc %d missing: %w", term, num, ErrCorrupt)
	}
	_, _, header, _ := blockBase(key, block)
	block = append(block[:start], block[end:]...)
	if len(block) == header {
		return ix.sp.Delete(key)
	}
	return ix.sp.Put(key, block)
}

// blockBase decodes a block's base doc number and seq, and the length of
// its header (where its postings start).
func blockBase(key, block []byte) (base, baseSeq uint64, header int, err error) {
	if len(key) < 8 {
		return 0, 0, 0, ErrCorrupt
	}
	baseSeq, rest, err := uvarint(block)
	return binary.BigEndian.Uint64(key[len(key)-8:]), baseSeq, len(block) - len(rest), err
}

// eachPosting calls fn with each posting of the block stored at key, in
// order, with the bytes [start, end) of the block it takes, until fn
// returns false. It returns ErrCorrupt for a block that does not decode.
func eachPosting(key, block []byte, fn func(num uint64, p posting, start, end int) bool) error {
	base, baseSeq, header, err := blockBase(key, block)
	if err != nil {
		return err
	}
	for v := block[header:]; len(v) > 0; {
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

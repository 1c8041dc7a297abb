package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The document table holds what the index knows of each document as a
// whole: its kind, project, length in terms and seq. A posting then holds
// only what is the term's own (doc number and tf): the per-document fields
// were most of a posting's bytes, and a thought's twenty-odd terms each
// repeated them.
//
// The table is kept in blocks of 1<<docBlockBits consecutive doc numbers,
// under "d" and the block number (8 bytes, big-endian), each entry coded
// against the one before it:
//
//	uvarint head: (kind-1) | removed<<2 | new project<<3,
//	[uvarint project number, if new project], uvarint doc length,
//	seq: uvarint for a block's first entry, then the zigzag varint of
//	seq - the previous entry's seq
//
// A block's first entry always carries its project. Every doc number gets
// an entry, in order (Add), so entry i of block b is doc b<<docBlockBits + i.
// A removed document keeps its entry, marked removed: its number is never
// reused, and RemoveAt, which finds a thought by its seq, skips it.
const docBlockBits = 7

const (
	docRemoved    = 1 << 2
	docNewProject = 1 << 3
)

// docInfo is one document's entry in the document table.
type docInfo struct {
	seq, length, project uint64
	kind                 Kind
	removed              bool
}

// docBlock is a block of the document table, with its entry count and its
// last entry (the one the next is coded against) worked out.
type docBlock struct {
	v     []byte
	n     int
	last  docInfo
	dirty bool // in a batch: changed, to be written at Flush
}

func docKey(block uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{keyDoc}, block)
}

// encodeDoc appends d's entry to a block after prev (nil for a block's
// first entry).
func encodeDoc(block []byte, prev *docInfo, d docInfo) []byte {
	head := uint64(d.kind - 1)
	if d.removed {
		head |= docRemoved
	}
	newProject := prev == nil || prev.project != d.project
	if newProject {
		head |= docNewProject
	}
	block = binary.AppendUvarint(block, head)
	if newProject {
		block = binary.AppendUvarint(block, d.project)
	}
	block = binary.AppendUvarint(block, d.length)
	if prev == nil {
		return binary.AppendUvarint(block, d.seq)
	}
	return binary.AppendVarint(block, int64(d.seq-prev.seq))
}

// eachDoc calls fn with each entry of a block of the document table, in
// order, until fn returns false. It returns ErrCorrupt for a block that
// does not decode.
func eachDoc(block []byte, fn func(i int, d docInfo) bool) error {
	v := block
	var prev docInfo
	for i := 0; len(v) > 0; i++ {
		var head uint64
		var d docInfo
		var err error
		if head, v, err = uvarint(v); err != nil {
			return err
		}
		if head >= docNewProject<<1 {
			return ErrCorrupt
		}
		d.kind, d.removed, d.project = Kind(head&3+1), head&docRemoved != 0, prev.project
		if head&docNewProject != 0 {
			if d.project, v, err = uvarint(v); err != nil {
				return err
			}
		} else if i == 0 {
			return ErrCorrupt
		}
		if d.length, v, err = uvarint(v); err != nil {
			return err
		}
		if i == 0 {
			if d.seq, v, err = uvarint(v); err != nil {
				return err
			}
		} else {
			delta, n := binary.Varint(v)
			if n <= 0 {
				return ErrCorrupt
			}
			v, d.seq = v[n:], prev.seq+uint64(delta)
		}
		prev = d
		if !fn(i, d) {
			return nil
		}
	}
	return nil
}

// docBlock returns block b of the document table (empty if it has no
// entry yet): in a batch, the batch's own copy, which only it may change;
// else a copy of the stored block.
func (ix *Index) docBlock(b uint64) (*docBlock, error) {
	if ix.batch != nil {
		if db, ok := ix.batch.docs[b]; ok {
			return db, nil
		}
	}
	db := &docBlock{v: bytes.Clone(ix.sp.Get(docKey(b)))}
	if err := eachDoc(db.v, func(i int, d docInfo) bool { db.n, db.last = i+1, d; return true }); err != nil {
		return nil, fmt.Errorf("documents %d…: %w", b<<docBlockBits, err)
	}
	if ix.batch != nil {
		ix.batch.docs[b] = db
	}
	return db, nil
}

// putDocBlock stores block b, changed: at once, or in a batch at Flush.
func (ix *Index) putDocBlock(b uint64, db *docBlock) error {
	if ix.batch != nil {
		db.dirty = true
		return nil
	}
	return ix.sp.Put(docKey(b), db.v)
}

// addDoc appends doc num's entry to the table: num must be the next doc
// number (stats.nextDoc).
func (ix *Index) addDoc(num uint64, d docInfo) error {
	b := num >> docBlockBits
	db, err := ix.docBlock(b)
	if err != nil {
		return err
	}
	if uint64(db.n) != num&(1<<docBlockBits-1) {
		return fmt.Errorf("document table: doc %d after %d entries of block %d: %w", num, db.n, b, ErrCorrupt)
	}
	var prev *docInfo
	if db.n > 0 {
		prev = &db.last
	}
	db.v = encodeDoc(db.v, prev, d)
	db.n, db.last = db.n+1, d
	return ix.putDocBlock(b, db)
}

// docAt returns doc num's entry.
func (ix *Index) docAt(num uint64) (docInfo, error) {
	db, err := ix.docBlock(num >> docBlockBits)
	if err != nil {
		return docInfo{}, err
	}
	var d docInfo
	found := false
	err = eachDoc(db.v, func(i int, e docInfo) bool {
		if uint64(i) == num&(1<<docBlockBits-1) {
			d, found = e, true
			return false
		}
		return true
	})
	if err == nil && !found {
		err = fmt.Errorf("document table: doc %d has no entry: %w", num, ErrCorrupt)
	}
	return d, err
}

// markRemoved marks doc num's entry removed.
func (ix *Index) markRemoved(num uint64) error {
	b := num >> docBlockBits
	db, err := ix.docBlock(b)
	if err != nil {
		return err
	}
	var out []byte
	var prev *docInfo
	var last docInfo
	found := false
	err = eachDoc(db.v, func(i int, d docInfo) bool {
		if uint64(i) == num&(1<<docBlockBits-1) {
			d.removed, found = true, true
		}
		out = encodeDoc(out, prev, d)
		last, prev = d, &last
		return true
	})
	switch {
	case err != nil:
		return fmt.Errorf("documents %d…: %w", b<<docBlockBits, err)
	case !found:
		return fmt.Errorf("document table: doc %d has no entry: %w", num, ErrCorrupt)
	}
	db.v, db.last = out, last
	return ix.putDocBlock(b, db)
}

// docBySeq returns the number of the document recorded at seq that is
// still indexed, walking the table back from the newest block (a document
// removed by its seq is usually a recent one).
func (ix *Index) docBySeq(seq uint64) (uint64, error) {
	s, err := ix.stats()
	if err != nil {
		return 0, err
	}
	for b := int64(s.nextDoc>>docBlockBits) + 1; b > 0; b-- {
		db, err := ix.docBlock(uint64(b - 1))
		if err != nil {
			return 0, err
		}
		num, found := uint64(0), false
		err = eachDoc(db.v, func(i int, d docInfo) bool {
			if d.seq == seq && !d.removed {
				num, found = uint64(b-1)<<docBlockBits+uint64(i), true
			}
			return true
		})
		if err != nil {
			return 0, fmt.Errorf("documents %d…: %w", uint64(b-1)<<docBlockBits, err)
		}
		if found {
			return num, nil
		}
	}
	return 0, fmt.Errorf("no document at seq %d: %w", seq, ErrNotFound)
}

// docReader reads the document table for one search, each block decoded
// once.
type docReader struct {
	ix     *Index
	blocks [][]docInfo // by block number; nil: not read yet
}

func newDocReader(ix *Index, nextDoc uint64) *docReader {
	return &docReader{ix: ix, blocks: make([][]docInfo, nextDoc>>docBlockBits+1)}
}

// get returns doc num's entry.
func (r *docReader) get(num uint64) (docInfo, error) {
	b := num >> docBlockBits
	if b >= uint64(len(r.blocks)) {
		return docInfo{}, fmt.Errorf("doc %d past the table: %w", num, ErrCorrupt)
	}
	ds := r.blocks[b]
	if ds == nil {
		v := r.ix.sp.Get(docKey(b))
		if r.ix.batch != nil {
			if db, ok := r.ix.batch.docs[b]; ok {
				v = db.v
			}
		}
		ds = make([]docInfo, 0, 1<<docBlockBits)
		if err := eachDoc(v, func(_ int, d docInfo) bool { ds = append(ds, d); return true }); err != nil {
			return docInfo{}, fmt.Errorf("documents %d…: %w", b<<docBlockBits, err)
		}
		r.blocks[b] = ds
	}
	i := num & (1<<docBlockBits - 1)
	if i >= uint64(len(ds)) {
		return docInfo{}, fmt.Errorf("document table: doc %d has no entry: %w", num, ErrCorrupt)
	}
	return ds[i], nil
}

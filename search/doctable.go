package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
)

// The document table holds what the index knows of each document as a
// whole: its kind, project, length in terms and seq. A posting then holds
// only what is the term's own (doc number and tf): the per-document fields
// were most of a posting's bytes, and a thought's twenty-odd terms each
// repeated them.
//
// The table is kept in blocks of 1<<docBlockBits consecutive doc numbers,
// under "d" and the block number (8 bytes, big-endian). A block is a header
// and one record per document, all of one size, so a search reads any
// document's record without decoding the others (a query's rare terms
// land on documents all over the table):
//
//	header: 1 byte each: the widths in bytes (1 to 8) of project, length
//	        and seq offset; uvarint base: the least seq of the block
//	record: 1 byte (kind-1) | removed<<2; project, length and seq - base,
//	        each little-endian in its width
//
// The widths are the least that hold every record of the block: a block
// is coded again, wider, when a record does not fit, so the bytes depend
// only on the records. Every doc number gets a record, in order (Add), so
// record i of block b is doc b<<docBlockBits + i. A removed document keeps
// its record, marked removed: its number is never reused, and RemoveAt,
// which finds a thought by its seq, skips it.
//
// A block holds 64 documents (about 350 bytes), not 256 (1.3 KB): the last
// block grows by a record with each document, and bbolt, when a page
// overflows by one growing value, moves it and the two keys before it to
// a new page, so pages of 1.3 KB blocks kept two (64% full) while the
// index was written live; of 350-byte blocks, nine to eleven.
const docBlockBits = 6

const docRemoved = 1 << 2

// docInfo is one document's record in the document table.
type docInfo struct {
	seq, length, project uint64
	kind                 Kind
	removed              bool
}

// docLayout is a block's header: its records' widths and seq base, where
// they start, and their size.
type docLayout struct {
	projW, lenW, seqW int
	base              uint64
	start, size       int
}

// width is the number of bytes v takes, at least 1.
func width(v uint64) int { return max(1, (bits.Len64(v)+7)/8) }

// fits reports whether d's record fits the layout.
func (l *docLayout) fits(d docInfo) bool {
	return d.seq >= l.base && width(d.project) <= l.projW && width(d.length) <= l.lenW && width(d.seq-l.base) <= l.seqW
}

// layoutOf is the least layout that holds every record of entries.
func layoutOf(entries []docInfo) docLayout {
	l := docLayout{projW: 1, lenW: 1, seqW: 1}
	for i, d := range entries {
		if i == 0 || d.seq < l.base {
			l.base = d.seq
		}
	}
	for _, d := range entries {
		l.projW, l.lenW, l.seqW = max(l.projW, width(d.project)), max(l.lenW, width(d.length)), max(l.seqW, width(d.seq-l.base))
	}
	l.size = 1 + l.projW + l.lenW + l.seqW
	l.start = len(l.header(nil))
	return l
}

// header appends the layout's header to b.
func (l *docLayout) header(b []byte) []byte {
	return binary.AppendUvarint(append(b, byte(l.projW), byte(l.lenW), byte(l.seqW)), l.base)
}

// parseLayout reads a block's header. It returns ErrCorrupt for a header
// out of range or records that do not fill the rest of the block.
func parseLayout(block []byte) (docLayout, int, error) {
	var l docLayout
	if len(block) < 4 {
		return l, 0, ErrCorrupt
	}
	l.projW, l.lenW, l.seqW = int(block[0]), int(block[1]), int(block[2])
	base, n := binary.Uvarint(block[3:])
	if n <= 0 || l.projW < 1 || l.projW > 8 || l.lenW < 1 || l.lenW > 8 || l.seqW < 1 || l.seqW > 8 {
		return l, 0, ErrCorrupt
	}
	l.base, l.start, l.size = base, 3+n, 1+l.projW+l.lenW+l.seqW
	if (len(block)-l.start)%l.size != 0 {
		return l, 0, ErrCorrupt
	}
	return l, (len(block) - l.start) / l.size, nil
}

// PutLE appends v's w low bytes to b, least significant first: the
// fixed-width fields of the document table and of the thoughts blocks
// (projections).
func PutLE(b []byte, v uint64, w int) []byte {
	for i := range w {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// LE reads what PutLE wrote, len(b) bytes of it.
func LE(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// record appends d's record to b.
func (l *docLayout) record(b []byte, d docInfo) []byte {
	flags := byte(d.kind - 1)
	if d.removed {
		flags |= docRemoved
	}
	b = PutLE(append(b, flags), d.project, l.projW)
	b = PutLE(b, d.length, l.lenW)
	return PutLE(b, d.seq-l.base, l.seqW)
}

// at reads record i of block (parsed as l). It returns ErrCorrupt for a
// flags byte out of range, or a seq past 64 bits.
func (l *docLayout) at(block []byte, i int) (docInfo, error) {
	r := block[l.start+i*l.size : l.start+(i+1)*l.size]
	if r[0] > docRemoved|3 {
		return docInfo{}, ErrCorrupt
	}
	d := docInfo{kind: Kind(r[0]&3 + 1), removed: r[0]&docRemoved != 0}
	d.project = LE(r[1 : 1+l.projW])
	d.length = LE(r[1+l.projW : 1+l.projW+l.lenW])
	off := LE(r[1+l.projW+l.lenW:])
	d.seq = l.base + off
	if d.seq < off {
		return docInfo{}, ErrCorrupt
	}
	return d, nil
}

// encodeBlock codes entries as a block.
func encodeBlock(entries []docInfo) []byte {
	l := layoutOf(entries)
	b := l.header(make([]byte, 0, 3+binary.MaxVarintLen64+len(entries)*l.size))
	for _, d := range entries {
		b = l.record(b, d)
	}
	return b
}

// eachDoc calls fn with each record of a block, in order, with its index
// in the block. It returns ErrCorrupt for a block that does not decode.
func eachDoc(block []byte, fn func(i int, d docInfo)) error {
	if len(block) == 0 {
		return nil
	}
	l, n, err := parseLayout(block)
	if err != nil {
		return err
	}
	for i := range n {
		d, err := l.at(block, i)
		if err != nil {
			return err
		}
		fn(i, d)
	}
	return nil
}

// docBlock is a block of the document table being written.
type docBlock struct {
	v     []byte
	l     docLayout
	n     int
	dirty bool // in a batch: changed, to be written at Flush
}

func docKey(block uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{keyDoc}, block)
}

// docBlock returns block b of the document table (empty if it has no
// record yet): in a batch, the batch's own copy, which only it may change;
// else a copy of the stored block.
func (ix *Index) docBlock(b uint64) (*docBlock, error) {
	if ix.batch != nil {
		if db, ok := ix.batch.docs[b]; ok {
			return db, nil
		}
	}
	db := &docBlock{v: bytes.Clone(ix.sp.Get(docKey(b)))}
	if len(db.v) > 0 {
		var err error
		if db.l, db.n, err = parseLayout(db.v); err != nil {
			return nil, fmt.Errorf("documents %d…: %w", b<<docBlockBits, err)
		}
	}
	if ix.batch != nil {
		ix.batch.docs[b] = db
	}
	return db, nil
}

// entries decodes every record of db.
func (db *docBlock) entries() ([]docInfo, error) {
	out := make([]docInfo, 0, db.n+1)
	err := eachDoc(db.v, func(_ int, d docInfo) { out = append(out, d) })
	return out, err
}

// docBlockBytes is block b of the document table as stored (in a batch,
// the batch's own), to read before the next call to the index's space:
// not a copy, as docBlock makes to write it.
func (ix *Index) docBlockBytes(b uint64) []byte {
	if ix.batch != nil {
		if db, ok := ix.batch.docs[b]; ok {
			return db.v
		}
	}
	return ix.sp.Get(docKey(b))
}

// putDocBlock stores block b, changed: at once, or in a batch at Flush.
func (ix *Index) putDocBlock(b uint64, db *docBlock) error {
	if ix.batch != nil {
		db.dirty = true
		return nil
	}
	return ix.sp.Put(docKey(b), db.v)
}

// addDoc appends doc num's record to the table: num must be the next doc
// number (stats.nextDoc).
func (ix *Index) addDoc(num uint64, d docInfo) error {
	b := num >> docBlockBits
	db, err := ix.docBlock(b)
	if err != nil {
		return err
	}
	if uint64(db.n) != num&(1<<docBlockBits-1) {
		return fmt.Errorf("document table: doc %d after %d records of block %d: %w", num, db.n, b, ErrCorrupt)
	}
	if db.n > 0 && db.l.fits(d) {
		db.v = db.l.record(db.v, d)
	} else { // the first record, or one that needs a wider layout
		entries, err := db.entries()
		if err != nil {
			return fmt.Errorf("documents %d…: %w", b<<docBlockBits, err)
		}
		db.v = encodeBlock(append(entries, d))
		db.l = layoutOf(append(entries, d))
	}
	db.n++
	return ix.putDocBlock(b, db)
}

// docAt returns doc num's record.
func (ix *Index) docAt(num uint64) (docInfo, error) {
	db, err := ix.docBlock(num >> docBlockBits)
	if err != nil {
		return docInfo{}, err
	}
	i := int(num & (1<<docBlockBits - 1))
	if i >= db.n {
		return docInfo{}, fmt.Errorf("document table: doc %d has no record: %w", num, ErrCorrupt)
	}
	return db.l.at(db.v, i)
}

// markRemoved marks doc num's record removed.
func (ix *Index) markRemoved(num uint64) error {
	b := num >> docBlockBits
	db, err := ix.docBlock(b)
	if err != nil {
		return err
	}
	i := int(num & (1<<docBlockBits - 1))
	if i >= db.n {
		return fmt.Errorf("document table: doc %d has no record: %w", num, ErrCorrupt)
	}
	db.v[db.l.start+i*db.l.size] |= docRemoved
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
	for b := s.nextDoc>>docBlockBits + 1; b > 0; b-- {
		db, err := ix.docBlock(b - 1)
		if err != nil {
			return 0, err
		}
		num, found := uint64(0), false
		err = eachDoc(db.v, func(i int, d docInfo) {
			if d.seq == seq && !d.removed {
				num, found = (b-1)<<docBlockBits+uint64(i), true
			}
		})
		if err != nil {
			return 0, fmt.Errorf("documents %d…: %w", (b-1)<<docBlockBits, err)
		}
		if found {
			return num, nil
		}
	}
	return 0, fmt.Errorf("no document at seq %d: %w", seq, ErrNotFound)
}

// docReader reads the document table for one search. Its memory is reused
// from one search to the next (readers).
type docReader struct {
	ix     *Index
	blocks []int32     // by block number: 1 + the block's index in read; 0: not read yet
	read   []readBlock // the blocks read
	raw    []byte      // their bytes (a Space's values are not kept past the next call)
}

// readBlock is a block as a search reads it: its layout and records, and
// where it lies in raw.
type readBlock struct {
	l   docLayout
	n   int
	off int
}

var readers = sync.Pool{New: func() any { return new(docReader) }}

func newDocReader(ix *Index, nextDoc uint64) *docReader {
	r := readers.Get().(*docReader)
	r.ix = ix
	n := int(nextDoc>>docBlockBits + 1)
	if cap(r.blocks) < n {
		r.blocks = make([]int32, n)
	}
	r.blocks = r.blocks[:n]
	return r
}

// release hands r's memory to the next search.
func (r *docReader) release() {
	clear(r.blocks)
	r.ix, r.read, r.raw = nil, r.read[:0], r.raw[:0]
	readers.Put(r)
}

// get returns doc num's record.
func (r *docReader) get(num uint64) (docInfo, error) {
	b := num >> docBlockBits
	if b >= uint64(len(r.blocks)) {
		return docInfo{}, fmt.Errorf("doc %d past the table: %w", num, ErrCorrupt)
	}
	if r.blocks[b] == 0 {
		if err := r.load(b); err != nil {
			return docInfo{}, err
		}
	}
	rb := &r.read[r.blocks[b]-1]
	i := int(num & (1<<docBlockBits - 1))
	if i >= rb.n {
		return docInfo{}, fmt.Errorf("document table: doc %d has no record: %w", num, ErrCorrupt)
	}
	return rb.l.at(r.raw[rb.off:], i)
}

// load reads block b.
func (r *docReader) load(b uint64) error {
	v := r.ix.docBlockBytes(b)
	rb := readBlock{off: len(r.raw)}
	if len(v) > 0 {
		var err error
		if rb.l, rb.n, err = parseLayout(v); err != nil {
			return fmt.Errorf("documents %d…: %w", b<<docBlockBits, err)
		}
	}
	r.raw = append(r.raw, v...)
	r.read = append(r.read, rb)
	r.blocks[b] = int32(len(r.read))
	return nil
}

package boltstore

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
)

// A writer's bolt.Open reads the freelist before anything of logbook's can
// look at the file, and trusts it: a freelist page whose flags are damaged
// panics there (outside any recover), a count of 0xFFFF whose first id is
// huge makes it allocate until the process dies, and a listed meta page is
// handed out to a tree, which the next commit's meta page then overwrites.
// So a writer's open first checks the freelist page the meta page bbolt
// will use names (checkFreelistPage): it is a freelist inside the file,
// and lists pages inside the file, no meta page, none of its own, none
// twice. Whether a tree uses a listed page is verify's to check
// (rangeWalk.freelist): it needs every page of every tree.

const (
	metaMagic       = 0xED0CDAED
	metaVersion     = 2
	metaPageSize    = 24 // a meta page's page size field
	metaPgidField   = 56 // its high-water mark, in pages
	metaSumField    = 72 // its checksum: FNV-1a 64 of the meta's fields before it
	metaFieldsStart = pageHeaderSize
)

// validMeta reports whether m (a meta page's first 80 bytes) is one bbolt
// accepts: its magic, version and checksum.
func validMeta(m []byte) bool {
	if binary.LittleEndian.Uint32(m[16:]) != metaMagic || binary.LittleEndian.Uint32(m[20:]) != metaVersion {
		return false
	}
	h := fnv.New64a()
	h.Write(m[metaFieldsStart:metaSumField])
	return h.Sum64() == binary.LittleEndian.Uint64(m[metaSumField:])
}

// checkFreelistPage checks the freelist of the file f as a writer's
// bolt.Open is about to read it. A file whose meta pages bbolt would
// refuse is left to bbolt.
func checkFreelistPage(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var metas [2][80]byte
	if _, err := f.ReadAt(metas[0][:], 0); err != nil {
		return nil // new, or too short: bbolt's to tell
	}
	ps := uint64(os.Getpagesize())
	if validMeta(metas[0][:]) {
		ps = uint64(binary.LittleEndian.Uint32(metas[0][metaPageSize:]))
	}
	if ps < 1024 {
		return nil
	}
	if _, err := f.ReadAt(metas[1][:], int64(ps)); err != nil {
		return nil
	}
	// bbolt's choice: the newer meta page if valid, else the other.
	a, b := metas[0][:], metas[1][:]
	if binary.LittleEndian.Uint64(b[metaTxidField:]) > binary.LittleEndian.Uint64(a[metaTxidField:]) {
		a, b = b, a
	}
	m := a
	if !validMeta(m) {
		if m = b; !validMeta(m) {
			return nil
		}
	}
	id := binary.LittleEndian.Uint64(m[metaFreeField:])
	if id == noFreelist {
		return nil
	}
	high := binary.LittleEndian.Uint64(m[metaPgidField:])
	end := min(high, uint64(fi.Size())/ps)
	const name = "the freelist"
	if id < 2 || id >= end {
		return outside(name, id, end)
	}
	var h [pageHeaderSize]byte
	if _, err := f.ReadAt(h[:], int64(id*ps)); err != nil {
		return fmt.Errorf("read page %d: %w", id, err)
	}
	if got := binary.LittleEndian.Uint64(h[:]); got != id {
		return fmt.Errorf("%w: the meta page points at freelist page %d, which says it is page %d", ErrDamaged, id, got)
	}
	if flags := binary.LittleEndian.Uint16(h[8:]); flags != freePageFlag {
		return fmt.Errorf("%w: the meta page points at page %d as the freelist, which is not one (flags %#x)", ErrDamaged, id, flags)
	}
	last := id + uint64(binary.LittleEndian.Uint32(h[12:]))
	if last >= end {
		return fmt.Errorf("%w: the freelist's page %d runs past the file's end", ErrDamaged, id)
	}
	p := make([]byte, (last-id+1)*ps)
	if _, err := f.ReadAt(p, int64(id*ps)); err != nil {
		return fmt.Errorf("read page %d: %w", id, err)
	}
	raw := p[pageHeaderSize:]
	n := uint64(binary.LittleEndian.Uint16(p[10:]))
	if n == 0xFFFF {
		n, raw = binary.LittleEndian.Uint64(raw), raw[8:]
	}
	if n > uint64(len(raw))/8 {
		return fmt.Errorf("%w: the freelist counts %d pages, more than its page %d holds", ErrDamaged, n, id)
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = binary.LittleEndian.Uint64(raw[i*8:])
	}
	slices.Sort(ids)
	for i, pg := range ids {
		switch {
		case pg < 2:
			return fmt.Errorf("%w: the freelist lists meta page %d", ErrDamaged, pg)
		case pg >= high:
			return fmt.Errorf("%w: the freelist lists page %d, outside the file's %d pages", ErrDamaged, pg, high)
		case i > 0 && ids[i-1] == pg:
			return fmt.Errorf("%w: the freelist lists page %d twice", ErrDamaged, pg)
		case pg >= id && pg <= last:
			return fmt.Errorf("%w: the freelist lists page %d, its own", ErrDamaged, pg)
		}
	}
	return nil
}

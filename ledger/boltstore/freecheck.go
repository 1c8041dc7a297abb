package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
)

// A writer's bolt.Open reads the freelist before anything of logbook's can
// look at the file, and trusts it: a freelist page whose flags are damaged
// panics there (outside any recover), a count of 0xFFFF whose first id is
// huge makes it allocate until the process dies, and a listed meta page is
// handed out to a tree, which the next commit's meta page then overwrites.
// So a writer's open first checks the freelist page the meta page bbolt
// will use names (checkFreelistPage, readFreelist): it is a freelist
// inside the file, and lists pages inside the file, no meta page, none of
// its own, none twice. Whether a tree uses a listed page is checked after
// bbolt's open, against the pages checkTrees meets at every Store open
// (treeWalk.freelist) and against every page in verify
// (rangeWalk.freelist).

// bbolt's meta page fields (offsets in the page) and freelist page: its
// ids (8 bytes each) follow the header; a count of 0xFFFF means the first
// of them is the count.
const (
	freePageFlag    = 0x10
	noFreelist      = ^uint64(0) // a meta's freelist when bbolt keeps none on disk
	metaFreeField   = 48         // the freelist page id
	metaTxidField   = 64
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

// checkMetaPages refuses, as ErrDamaged, the file f whose two meta pages
// are not both ones bbolt accepts. bbolt reads a file as of its newer valid
// meta page and says nothing of the other: one byte changed in the newer
// one, and the file read as of the commit before, the last commit's events
// gone from every read and verify saying ok on the shorter log. A writer
// leaves both whole (a commit's single page write, on a file no reader
// holds the lock of meanwhile), so a reader, under the file's lock, finds
// one failing only in a file damaged, edited, or torn by a machine that
// stopped while a commit synced without the journal; a writer's open
// follows bbolt (its next commit rewrites the slot). A file that ends
// before its second meta page while its first holds is cut short:
// ErrDamaged too, as are two meta pages of transactions further apart
// than a writer leaves them. A file neither of whose meta pages holds is
// left to bbolt (ErrChecksum, or ErrInvalid for some other file).
func checkMetaPages(f *os.File) error {
	var metas [2][metaLen]byte
	if _, err := f.ReadAt(metas[0][:], 0); err != nil {
		return nil // too short: bbolt's to tell
	}
	ps := uint64(os.Getpagesize())
	if validMeta(metas[0][:]) {
		ps = uint64(binary.LittleEndian.Uint32(metas[0][metaPageSize:]))
	}
	if ps < 1024 {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if uint64(fi.Size()) < 2*ps {
		if !validMeta(metas[0][:]) {
			return nil
		}
		// A ledger's first page, and the file ends before the end of
		// its second meta page: cut short, as one cut past it is
		// (checkSize).
		return fmt.Errorf("%w: the file is %d bytes, shorter than its two meta pages (truncated)", ErrDamaged, fi.Size())
	}
	if _, err := f.ReadAt(metas[1][:], int64(ps)); err != nil {
		return nil
	}
	ok0, ok1 := validMeta(metas[0][:]), validMeta(metas[1][:])
	if !ok0 && !ok1 {
		return nil
	}
	// A writer puts transaction T's meta page, which says it is page
	// T%2, in slot T%2 (a recovery puts T in both, each saying its
	// slot): one elsewhere was swapped or copied there, and the next
	// commit would write over the newer one, not the older.
	// Bolt's own copy (Tx.WriteTo, its way to back a file up) writes T in
	// slot 0 and, in slot 1, the same meta page with T-1: both name the
	// same tree, so no commit can write over a newer one. A file copied so
	// at an odd T is a valid file.
	t := [2]uint64{metaTxid(metas[0][:]), metaTxid(metas[1][:])}
	sameTree := bytes.Equal(metas[0][8:metaTxidField], metas[1][8:metaTxidField])
	for slot, ok := range []bool{ok0, ok1} {
		if !ok {
			continue
		}
		if id := binary.LittleEndian.Uint64(metas[slot][:]); id != uint64(slot) {
			return fmt.Errorf("%w: meta page %d says it is page %d", ErrDamaged, slot, id)
		}
		if ok0 && ok1 && t[0] != t[1] && !sameTree && t[slot]%2 != uint64(slot) {
			return fmt.Errorf("%w: meta page %d holds transaction %d, which a writer puts in slot %d: the meta pages were swapped, or one copied in", ErrDamaged, slot, t[slot], t[slot]%2)
		}
	}
	if ok0 && ok1 {
		// Each commit writes transaction T+1 into the slot of T-1, so a
		// writer leaves T-1 and T (or T twice, once a recovery wrote T's
		// meta page into both slots): two further apart are a meta page
		// copied in from elsewhere (another ledger, an old copy), and
		// bbolt would read the file as of the newer of the two.
		t0, t1 := t[0], t[1]
		if max(t0, t1)-min(t0, t1) > 1 {
			return fmt.Errorf("%w: the meta pages hold transactions %d and %d, not consecutive ones as a writer leaves them: one was copied in from elsewhere", ErrDamaged, t0, t1)
		}
		return nil
	}
	bad, good := 0, metas[1][:]
	if !ok1 {
		bad, good = 1, metas[0][:]
	}
	return fmt.Errorf("%w: meta page %d fails its checksum (bbolt would read the file as of transaction %d, the other meta page's, and drop any commit after it)",
		ErrDamaged, bad, binary.LittleEndian.Uint64(good[metaTxidField:]))
}

// checkFreelistPage checks the freelist of the file f as a writer's
// bolt.Open is about to read it. A file whose meta pages bbolt would
// refuse is left to bbolt.
func checkFreelistPage(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var metas [2][metaLen]byte
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
	_, err = readFreelist(f, m, ps, uint64(fi.Size())/ps)
	return err
}

// metaOfTx is the meta page of transaction txid in the file r of page size
// ps, if one of the two slots holds it whole (checksum and all): a writer
// of this process may have written the slot over since the transaction
// began, or be writing it while it is read (its txid seen old, its
// freelist new, which lists the pages of later commits).
func metaOfTx(r io.ReaderAt, ps, txid uint64) (m []byte, ok bool) {
	for slot := range uint64(2) {
		m := make([]byte, metaLen)
		if _, err := r.ReadAt(m, int64(slot*ps)); err == nil && validMeta(m) && binary.LittleEndian.Uint64(m[metaTxidField:]) == txid {
			return m, true
		}
	}
	return nil, false
}

// freelist is what a meta page's freelist holds: its own pages, first to
// last, and the pages it lists, sorted.
type freelist struct {
	first, last uint64
	ids         []uint64
}

// own reports whether page pg is one of the freelist's own.
func (fl *freelist) own(pg uint64) bool { return pg >= fl.first && pg <= fl.last }

// readFreelist reads the freelist that meta page m names in the file r of
// page size ps, whose first size pages are on disk, and checks its form:
// a freelist page inside the file, listing pages inside the file, no meta
// page, none of its own, none twice. nil if m names none (bbolt keeps it in
// memory only). Whether a tree uses a listed page is the caller's to
// check.
func readFreelist(r io.ReaderAt, m []byte, ps, size uint64) (*freelist, error) {
	id := binary.LittleEndian.Uint64(m[metaFreeField:])
	if id == noFreelist {
		return nil, nil
	}
	end := min(binary.LittleEndian.Uint64(m[metaPgidField:]), size)
	const name = "the freelist"
	if id < 2 || id >= end {
		return nil, outside(name, id, end)
	}
	var h [pageHeaderSize]byte
	if _, err := r.ReadAt(h[:], int64(id*ps)); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	if got := binary.LittleEndian.Uint64(h[:]); got != id {
		return nil, fmt.Errorf("%w: the meta page points at freelist page %d, which says it is page %d", ErrDamaged, id, got)
	}
	if flags := binary.LittleEndian.Uint16(h[8:]); flags != freePageFlag {
		return nil, fmt.Errorf("%w: the meta page points at page %d as the freelist, which is not one (flags %#x)", ErrDamaged, id, flags)
	}
	fl := &freelist{first: id, last: id + uint64(binary.LittleEndian.Uint32(h[12:]))}
	if fl.last >= end {
		return nil, fmt.Errorf("%w: the freelist's page %d runs past the file's end", ErrDamaged, id)
	}
	// Only what the count needs is read, in steps, each id checked as it
	// comes: a page's overflow may claim more pages than it fills (bbolt
	// allocates it so), and in a damaged file every page of the file, holes
	// of a sparse one too.
	n, at := uint64(binary.LittleEndian.Uint16(h[10:])), id*ps+pageHeaderSize
	if n == 0xFFFF {
		var c [8]byte
		if _, err := r.ReadAt(c[:], int64(at)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", id, err)
		}
		n, at = binary.LittleEndian.Uint64(c[:]), at+8
	}
	if n > ((fl.last+1)*ps-at)/8 {
		return nil, fmt.Errorf("%w: the freelist counts %d pages, more than its page %d holds", ErrDamaged, n, id)
	}
	const step = 1 << 17 // ids a read
	buf := make([]byte, min(n, step)*8)
	fl.ids = make([]uint64, 0, min(n, step))
	for left := n; left > 0; {
		k := min(left, step)
		if _, err := r.ReadAt(buf[:k*8], int64(at)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", id, err)
		}
		for i := range k {
			pg := binary.LittleEndian.Uint64(buf[i*8:])
			switch {
			case pg < 2:
				return nil, fmt.Errorf("%w: the freelist lists meta page %d", ErrDamaged, pg)
			case pg >= end:
				return nil, fmt.Errorf("%w: the freelist lists page %d, outside the file's %d pages", ErrDamaged, pg, end)
			case fl.own(pg):
				return nil, fmt.Errorf("%w: the freelist lists page %d, its own", ErrDamaged, pg)
			}
			fl.ids = append(fl.ids, pg)
		}
		left, at = left-k, at+k*8
	}
	slices.Sort(fl.ids)
	for i := 1; i < len(fl.ids); i++ {
		if fl.ids[i-1] == fl.ids[i] {
			return nil, fmt.Errorf("%w: the freelist lists page %d twice", ErrDamaged, fl.ids[i])
		}
	}
	return fl, nil
}

// inUse is the error for page pg of the freelist fl (listed, or its own)
// that a tree uses: the next commit would write over it.
func (fl *freelist) inUse(tree string, pg uint64) error {
	if fl.own(pg) {
		return fmt.Errorf("%w: the freelist's page %d is a page of %s too", ErrDamaged, pg, tree)
	}
	return fmt.Errorf("%w: the freelist lists page %d, which %s uses: the next commit would write over it", ErrDamaged, pg, tree)
}

// has reports whether fl lists page pg or is it.
func (fl *freelist) has(pg uint64) bool {
	_, listed := slices.BinarySearch(fl.ids, pg)
	return listed || fl.own(pg)
}

// metaRootField is a meta page's root bucket: the page id of the tree
// whose keys are the file's top-level buckets.
const metaRootField = 32

// ledgerBehindBadMagic explains why the file f, which bbolt refuses as
// no bbolt file at all (ErrInvalid: neither meta page holds its magic
// and version), is a ledger damaged rather than another program's file:
// a meta page names as its root a leaf page that holds at least two of
// the ledger's top-level buckets (meta, events, merkle), as checkFormat
// counts a ledger's marks. Some other file (random bytes, text, another
// program's bbolt file whatever its damage) has no such page where its
// meta page's root field points: "" then. The meta page is read at
// offset 0 and at the page size its page size field says, or the
// system's, which is what a ledger is created with.
func ledgerBehindBadMagic(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	var first [metaLen]byte
	if _, err := f.ReadAt(first[:], 0); err != nil {
		return ""
	}
	sizes := []uint64{uint64(os.Getpagesize())}
	if ps := uint64(binary.LittleEndian.Uint32(first[metaPageSize:])); ps >= 1024 && ps <= 1<<16 && ps&(ps-1) == 0 && ps != sizes[0] {
		sizes = append(sizes, ps)
	}
	for _, ps := range sizes {
		for slot := range uint64(2) {
			var m [metaLen]byte
			if _, err := f.ReadAt(m[:], int64(slot*ps)); err != nil {
				continue
			}
			root := binary.LittleEndian.Uint64(m[metaRootField:])
			if root < 2 || root >= uint64(fi.Size())/ps {
				continue
			}
			page := make([]byte, ps)
			if _, err := f.ReadAt(page, int64(root*ps)); err != nil {
				continue
			}
			if n := bucketMarks(page, root); n >= 2 {
				return fmt.Sprintf("neither meta page holds bbolt's magic and version, but meta page %d's root (page %d of %d bytes) holds %d of a ledger's buckets (meta, events, merkle)", slot, root, ps, n)
			}
		}
	}
	return ""
}

// bucketMarks counts the ledger's top-level buckets (meta, events,
// merkle) among the buckets of page, if it is the leaf page id.
func bucketMarks(page []byte, id uint64) int {
	if binary.LittleEndian.Uint64(page) != id || binary.LittleEndian.Uint16(page[8:])&leafFlag == 0 {
		return 0
	}
	n, err := elemCount("the root", id, page)
	if err != nil {
		return 0
	}
	marks := 0
	for i := range n {
		e := page[pageHeaderSize+i*elemSize:]
		const bucketFlag = 0x01 // the element is a bucket
		pos, ksize := uint64(binary.LittleEndian.Uint32(e[4:])), uint64(binary.LittleEndian.Uint32(e[8:]))
		at := uint64(pageHeaderSize+i*elemSize) + pos
		if binary.LittleEndian.Uint32(e)&bucketFlag == 0 || at+ksize > uint64(len(page)) {
			continue
		}
		if key := page[at : at+ksize]; slices.ContainsFunc([][]byte{bucketMeta, bucketEvents, bucketMerkle}, func(b []byte) bool { return string(b) == string(key) }) {
			marks++
		}
	}
	return marks
}

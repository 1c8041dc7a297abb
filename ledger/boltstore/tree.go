package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// The B+trees of a damaged file can send bbolt astray where no page check
// of its own sees it: a child pointer that leads back to a page above it
// sends lookups down the loop until the goroutine's stack overflows (a
// fatal error no recover catches) and walks round it for ever, and a
// branch key changed within its neighbours' range sends lookups of some
// keys to the wrong child, while walks, which never read branch keys, still
// find them. Open checks for loops (checkTrees), cheaply; verify checks
// every page and key range (checkKeyRanges).

// forEachTree calls fn with the root page of each tree logbook reads (0 for
// an inline bucket): the root bucket's, the top-level buckets', and those
// of the buckets that hold spaces: spaces/<space>, and what an older
// binary may have left, staging/<space> (dropped by DropSpaces) and
// trash/<batch>/<space> (emptied a little by every commit). A bucket's tree
// is passed to fn before the bucket is iterated for the trees it holds.
func forEachTree(btx *bolt.Tx, fn func(name string, root uint64) error) error {
	root := btx.Cursor().Bucket()
	if err := fn("the root bucket", uint64(root.Root())); err != nil {
		return err
	}
	var holders [][]byte
	err := root.ForEachBucket(func(name []byte) error {
		switch string(name) {
		case string(bucketSpaces), string(bucketStaging), string(bucketTrash):
			holders = append(holders, name)
		}
		b, err := lookUp(root, name, "the root bucket")
		if err != nil {
			return err
		}
		return fn(fmt.Sprintf("bucket %q", name), uint64(b.Root()))
	})
	if err != nil {
		return err
	}
	// nested calls fn with the trees of the buckets b holds, and with
	// theirs down to depth more levels.
	var nested func(b *bolt.Bucket, path string, depth int) error
	nested = func(b *bolt.Bucket, path string, depth int) error {
		return b.ForEachBucket(func(name []byte) error {
			sub, err := lookUp(b, name, "bucket "+path)
			if err != nil {
				return err
			}
			at := fmt.Sprintf("%s/%q", path, name)
			if err := fn("bucket "+at, uint64(sub.Root())); err != nil || depth == 0 {
				return err
			}
			return nested(sub, at, depth-1)
		})
	}
	for _, name := range holders {
		depth := 0
		if string(name) == string(bucketTrash) {
			depth = 1 // batches, then spaces
		}
		if err := nested(root.Bucket(name), string(name), depth); err != nil {
			return err
		}
	}
	return nil
}

// lookUp is the bucket name in b, which a walk of b (in) listed: a lookup
// that does not find it went down the wrong child of a branch page, or
// through a leaf whose keys are out of order (a key changed), which walks
// never read.
func lookUp(b *bolt.Bucket, name []byte, in string) (*bolt.Bucket, error) {
	if sub := b.Bucket(name); sub != nil {
		return sub, nil
	}
	return nil, fmt.Errorf("%w: %s lists bucket %q, which a lookup by its name does not find: a key of one of its pages changed (its keys out of order)", ErrDamaged, in, name)
}

// checkTrees makes sure that no tree in btx loops, shares a page with
// another, or is on the freelist. It reads the branch pages only (362 of
// the 59,000 pages of a million-event ledger: 1.3-1.7 ms on the machine of
// session 7, 2.4-3.7 ms on session 10's), the header of each one's first
// child, and the freelist.
//
// The walk goes down every branch page whose first child is a branch page;
// the children of the others are leaves in a sound tree (bbolt keeps every
// leaf at one depth), and must not be any branch page the walk met. A loop
// needs a pointer back to a page above it, so it is always caught; a
// pointer to some other page is left to what reads it (checkKeyRanges,
// bbolt's page checks).
//
// A tree's root must be no other tree's page either: a bucket whose root is
// its parent's leaf (one changed byte of a bucket's header) holds itself,
// and a walk of the buckets in it recurses until memory runs out. So no
// root is another's, nor a branch page walked, nor a child of one. And the
// freelist lists none of these pages (freelist): a writer would write over
// it.
//
// A writer (shared) also makes sure no leaf is the child of two branch
// pages: a pointer changed to another tree's leaf, which the first commit
// changing either tree frees while the other still reads it — and then
// writes over it, after which the freelist lists a page in use and no
// command opens the file. A reader leaves that to verify: it frees
// nothing, and snapshot can still copy the file.
func checkTrees(btx *bolt.Tx, file *os.File, pageSize int, shared bool) error {
	w := treeWalk{file: file, pageSize: pageSize, end: uint64(btx.Size()) / uint64(pageSize), branches: map[uint64]bool{}}
	roots := map[uint64]string{}
	err := forEachTree(btx, func(name string, root uint64) error {
		if root == 0 {
			return nil
		}
		if other, ok := roots[root]; ok {
			return fmt.Errorf("%w: %s and %s have the same root page %d", ErrDamaged, other, name, root)
		}
		roots[root] = name
		from := len(w.lowest)
		if err := w.branch(name, root, 0); err != nil {
			return err
		}
		// The tree is checked before anything iterates it.
		for _, low := range w.lowest[from:] {
			for _, k := range low.kids {
				if w.branches[k] {
					return fmt.Errorf("%w: %s's branch page %d points at page %d, a branch page above it: a loop", ErrDamaged, low.tree, low.page, k)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, low := range w.lowest {
		for _, k := range low.kids {
			if other, ok := roots[k]; ok {
				return fmt.Errorf("%w: %s's branch page %d points at page %d, the root of %s", ErrDamaged, low.tree, low.page, k, other)
			}
			// (Its own tree's branch pages were checked as it was
			// walked: this is a tree walked later.)
			if w.branches[k] {
				return fmt.Errorf("%w: %s's branch page %d points at page %d, a branch page of another tree", ErrDamaged, low.tree, low.page, k)
			}
		}
	}
	if shared {
		if err := w.sharedLeaf(); err != nil {
			return err
		}
	}
	return w.freelist(btx, roots)
}

// sharedLeaf finds a leaf that two branch pages point at.
func (w *treeWalk) sharedLeaf() error {
	n := 0
	for _, low := range w.lowest {
		n += len(low.kids)
	}
	parent := make(map[uint64]int, n) // the leaf's branch, an index in w.lowest
	for i, low := range w.lowest {
		for _, k := range low.kids {
			if j, ok := parent[k]; ok {
				other := w.lowest[j]
				return fmt.Errorf("%w: %s's branch page %d and %s's branch page %d both point at page %d: a commit changing either tree would free it while the other still uses it", ErrDamaged, other.tree, other.page, low.tree, low.page, k)
			}
			parent[k] = i
		}
	}
	return nil
}

// freelist checks the freelist of btx's meta page (readFreelist), and that
// it neither lists nor is a page the walk met: a root, a branch page, or a
// leaf under one. A writer's next commit would write over it. Pages past
// a leaf's first (a value on overflow pages) are not met here: verify's
// checkKeyRanges reads every leaf.
func (w *treeWalk) freelist(btx *bolt.Tx, roots map[uint64]string) error {
	// The freelist of the meta page the transaction began from: a write
	// transaction's id is already the next one's.
	txid := uint64(btx.ID())
	if btx.Writable() {
		txid--
	}
	m, ok := metaOfTx(w.file, uint64(w.pageSize), txid)
	if !ok {
		return nil
	}
	fl, err := readFreelist(w.file, m, uint64(w.pageSize), w.end)
	if err != nil || fl == nil {
		return err
	}
	for pg, name := range roots {
		if fl.has(pg) {
			return fl.inUse(name, pg)
		}
	}
	for pg := range w.branches {
		if fl.has(pg) {
			return fl.inUse("a tree", pg)
		}
	}
	for _, low := range w.lowest {
		for _, pg := range low.kids {
			if fl.has(pg) {
				return fl.inUse(low.tree, pg)
			}
		}
	}
	return nil
}

type treeWalk struct {
	file     *os.File
	pageSize int
	end      uint64          // the file's high-water mark, in pages
	branches map[uint64]bool // the branch pages walked
	lowest   []lowBranch     // the branch pages whose children are leaves
	buf      []byte
}

// lowBranch is a branch page whose first child is a leaf, as all its
// children are in a sound tree.
type lowBranch struct {
	tree string
	page uint64
	kids []uint64
}

// maxTreeDepth is deeper than any bbolt tree gets (each branch page holds
// two children or more).
const maxTreeDepth = 64

// branch walks page id, depth levels below the root of tree name.
func (w *treeWalk) branch(name string, id uint64, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%w: %s is more than %d pages deep: a loop", ErrDamaged, name, maxTreeDepth)
	}
	if w.branches[id] {
		return fmt.Errorf("%w: %s reaches page %d twice: a loop", ErrDamaged, name, id)
	}
	flags, kids, err := w.read(name, id)
	if err != nil || flags&branchFlag == 0 {
		return err // a leaf
	}
	w.branches[id] = true
	if len(kids) == 0 {
		return fmt.Errorf("%w: %s has an empty branch page %d", ErrDamaged, name, id)
	}
	first, _, err := w.header(name, kids[0])
	if err != nil {
		return err
	}
	if first&branchFlag == 0 {
		w.lowest = append(w.lowest, lowBranch{name, id, kids})
		return nil
	}
	for _, k := range kids {
		if err := w.branch(name, k, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// bbolt's page layout: a header of id (8 bytes), flags (2), count (2),
// overflow (4); a branch page's elements of pos (4), key size (4), child
// page id (8); a leaf page's of flags (4), pos (4), key size (4), value size
// (4). An element's key is at pos bytes from the element.
const (
	pageHeaderSize = 16
	elemSize       = 16
	branchFlag     = 0x01
	leafFlag       = 0x02
)

// header reads page id's flags and overflow count.
func (w *treeWalk) header(name string, id uint64) (flags uint16, overflow uint32, err error) {
	if id < 2 || id >= w.end {
		return 0, 0, outside(name, id, w.end)
	}
	var h [pageHeaderSize]byte
	if _, err := w.file.ReadAt(h[:], int64(id)*int64(w.pageSize)); err != nil {
		return 0, 0, fmt.Errorf("read page %d: %w", id, err)
	}
	return pageHead(name, id, h[:])
}

// read reads page id and, if it is a branch page, its children.
func (w *treeWalk) read(name string, id uint64) (flags uint16, kids []uint64, err error) {
	flags, overflow, err := w.header(name, id)
	if err != nil || flags&branchFlag == 0 {
		return flags, nil, err
	}
	if id+uint64(overflow) >= w.end {
		return 0, nil, fmt.Errorf("%w: %s's page %d runs past the file's end", ErrDamaged, name, id)
	}
	// What its elements can fill (a count of 16 bits), not every page an
	// overflow count claims: in a damaged file, the holes of a sparse one.
	size := min((uint64(overflow)+1)*uint64(w.pageSize), pageHeaderSize+0xFFFF*elemSize)
	if uint64(cap(w.buf)) < size {
		w.buf = make([]byte, size)
	}
	p := w.buf[:size]
	if _, err := w.file.ReadAt(p, int64(id)*int64(w.pageSize)); err != nil {
		return 0, nil, fmt.Errorf("read page %d: %w", id, err)
	}
	n, err := elemCount(name, id, p)
	if err != nil {
		return 0, nil, err
	}
	kids = make([]uint64, n)
	for i := range kids {
		kids[i] = binary.LittleEndian.Uint64(p[pageHeaderSize+i*elemSize+8:])
	}
	return flags, kids, nil
}

func outside(name string, id, end uint64) error {
	return fmt.Errorf("%w: %s points at page %d, outside the file's %d pages", ErrDamaged, name, id, end)
}

// pageHead checks the header h of page id of tree name: it names the page,
// which is a branch or a leaf.
func pageHead(name string, id uint64, h []byte) (flags uint16, overflow uint32, err error) {
	if got := binary.LittleEndian.Uint64(h); got != id {
		return 0, 0, fmt.Errorf("%w: %s points at page %d, which says it is page %d", ErrDamaged, name, id, got)
	}
	flags = binary.LittleEndian.Uint16(h[8:])
	if flags&(branchFlag|leafFlag) == 0 {
		return 0, 0, fmt.Errorf("%w: %s points at page %d, neither a branch nor a leaf (flags %#x)", ErrDamaged, name, id, flags)
	}
	return flags, binary.LittleEndian.Uint32(h[12:]), nil
}

// elemCount is page p's element count, if its elements fit in it.
func elemCount(name string, id uint64, p []byte) (int, error) {
	n := int(binary.LittleEndian.Uint16(p[10:]))
	if pageHeaderSize+n*elemSize > len(p) {
		return 0, fmt.Errorf("%w: %s's page %d counts %d elements, more than it holds", ErrDamaged, name, id, n)
	}
	return n, nil
}

// checkKeyRanges is verify's look at the trees of btx: every page of them
// is reached once, and the keys of each lie in the range its parent's keys
// send lookups to: [key i, key i+1) for the child of element i, as bbolt's
// own Tx.Check has it, and the freelist lists no page in use (freelist).
// Keys in order within a page are the walks' to check.
// Every leaf element's key and value must lie inside its page (bbolt reads
// them unchecked). It reads through a mapping of its own, touching each
// page's header, its elements' headers and its first and last keys, and
// unmapping what it touched every rangeRelease
// pages (as releaseMapped does bbolt's). 43-48 ms at a million events, most
// of it a page fault a page: reading the file in order first, to walk the
// trees from what it kept, cost as much.
func checkKeyRanges(btx *bolt.Tx, file *os.File, pageSize int) error {
	size := btx.Size()
	if size <= 0 {
		return nil
	}
	data, err := unix.Mmap(int(file.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map ledger: %w", err)
	}
	defer unix.Munmap(data)
	end := uint64(size) / uint64(pageSize)
	w := rangeWalk{data: data, pageSize: uint64(pageSize), end: end, seen: make([]uint64, (end+63)/64)}
	err = forEachTree(btx, func(name string, root uint64) error {
		if root == 0 {
			return nil
		}
		return w.walk(name, root, nil, nil, 0)
	})
	if err != nil {
		return err
	}
	// The names once the root bucket's pages are checked: bbolt reads
	// them where the pages say.
	if err := checkBucketNames(btx); err != nil {
		return err
	}
	return w.freelist(file, uint64(btx.ID()))
}

// freelist checks the freelist of transaction txid in file, once the trees
// are walked: its form (readFreelist), and that no tree uses its pages or a
// page it lists. A writer allocates what the freelist lists: a tree page in
// it would be written over by the next commit, which verify must not call
// sound. When a writer of this process has since reused txid's meta page
// (the read transaction keeps its pages, not its meta page), there is no
// freelist to check.
func (w *rangeWalk) freelist(file io.ReaderAt, txid uint64) error {
	m, ok := metaOfTx(file, w.pageSize, txid)
	if !ok {
		return nil
	}
	fl, err := readFreelist(file, m, w.pageSize, w.end)
	if err != nil || fl == nil {
		return err
	}
	for pg := fl.first; pg <= fl.last; pg++ {
		if w.reached(pg) {
			return fl.inUse("a tree", pg)
		}
	}
	for _, pg := range fl.ids {
		if w.reached(pg) {
			return fl.inUse("a tree", pg)
		}
	}
	return nil
}

// reached reports whether the walk reached page pg.
func (w *rangeWalk) reached(pg uint64) bool { return w.seen[pg/64]&(1<<(pg%64)) != 0 }

// rangeRelease is how many pages rangeWalk reads between releases of what
// it has mapped (each fault maps up to 16 pages around the one read):
// 512 keeps a walk of a million-event ledger's pages under 30 MB resident.
const rangeRelease = 512

type rangeWalk struct {
	data     []byte
	pageSize uint64
	end      uint64   // pages
	seen     []uint64 // a bit per page reached
	walked   int
}

// walk checks page id of tree name and the pages under it: every key of
// the subtree is at least lo and below hi (nil: no bound).
func (w *rangeWalk) walk(name string, id uint64, lo, hi []byte, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%w: %s is more than %d pages deep: a loop", ErrDamaged, name, maxTreeDepth)
	}
	if id < 2 || id >= w.end {
		return outside(name, id, w.end)
	}
	if w.walked++; w.walked%rangeRelease == 0 {
		unix.Madvise(w.data, unix.MADV_DONTNEED)
	}
	flags, overflow, err := pageHead(name, id, w.data[id*w.pageSize:])
	if err != nil {
		return err
	}
	last := id + uint64(overflow)
	if last >= w.end {
		return fmt.Errorf("%w: %s's page %d runs past the file's end", ErrDamaged, name, id)
	}
	for pg := id; pg <= last; pg++ {
		if w.reached(pg) {
			return fmt.Errorf("%w: %s reaches page %d, which another pointer reaches too", ErrDamaged, name, pg)
		}
		w.seen[pg/64] |= 1 << (pg % 64)
	}
	p := w.data[id*w.pageSize : (last+1)*w.pageSize]
	n, err := elemCount(name, id, p)
	if err != nil || n == 0 {
		return err
	}
	branch := flags&branchFlag != 0
	keyAt := func(i int) ([]byte, error) {
		e := pageHeaderSize + i*elemSize
		pos, ksize := uint64(binary.LittleEndian.Uint32(p[e+4:])), uint64(binary.LittleEndian.Uint32(p[e+8:]))
		if branch {
			pos, ksize = uint64(binary.LittleEndian.Uint32(p[e:])), uint64(binary.LittleEndian.Uint32(p[e+4:]))
		}
		if at := uint64(e) + pos; at+ksize <= uint64(len(p)) {
			return p[at : at+ksize], nil
		}
		return nil, fmt.Errorf("%w: %s's page %d has a key past its end", ErrDamaged, name, id)
	}
	inRange := func(k []byte) error {
		if (lo != nil && bytes.Compare(k, lo) < 0) || (hi != nil && bytes.Compare(k, hi) >= 0) {
			return fmt.Errorf("%w: %s's page %d holds key %x outside the range [%x, %x) its parent sends lookups to: a lookup would miss it", ErrDamaged, name, id, k, lo, hi)
		}
		return nil
	}
	if !branch { // a leaf: every element's key and value in the page, and its first and last keys in range
		// bbolt reads an element's key and value at the offset and sizes
		// it gives, unchecked: one past the page read whatever memory lay
		// there (a fault on one run, the process's own bytes on the next).
		for i := range n {
			e := pageHeaderSize + i*elemSize
			pos := uint64(binary.LittleEndian.Uint32(p[e+4:]))
			ksize, vsize := uint64(binary.LittleEndian.Uint32(p[e+8:])), uint64(binary.LittleEndian.Uint32(p[e+12:]))
			if uint64(e)+pos+ksize+vsize > uint64(len(p)) {
				return fmt.Errorf("%w: %s's page %d has a key or value past its end (element %d)", ErrDamaged, name, id, i)
			}
		}
		for _, i := range []int{0, n - 1} {
			k, err := keyAt(i)
			if err != nil {
				return err
			}
			if err := inRange(k); err != nil {
				return err
			}
		}
		return nil
	}
	k, err := keyAt(0)
	if err != nil {
		return err
	}
	for i := range n {
		if err := inRange(k); err != nil {
			return err
		}
		next := hi
		if i+1 < n {
			if next, err = keyAt(i + 1); err != nil {
				return err
			}
			if bytes.Compare(next, k) <= 0 {
				return fmt.Errorf("%w: %s's branch page %d has keys out of order (%x after %x)", ErrDamaged, name, id, next, k)
			}
		}
		child := binary.LittleEndian.Uint64(p[pageHeaderSize+i*elemSize+8:])
		if err := w.walk(name, child, k, next, depth+1); err != nil {
			return err
		}
		k = next
	}
	return nil
}

// checkBucketNames: the file's top level holds only the buckets logbook
// writes (verify). A name changed by damage — a flipped byte in "spaces" —
// otherwise passed: the projections were then absent, "not compared", and
// the next open folded them anew beside the stray bucket.
func checkBucketNames(btx *bolt.Tx) error {
	return btx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		switch string(name) {
		case string(bucketMeta), string(bucketEvents), string(bucketMerkle), string(bucketSpaces), string(bucketStaging), string(bucketTrash):
			return nil
		}
		return fmt.Errorf("%w: its top level holds a bucket %q that logbook never writes (a damaged name, or another program's)", ErrDamaged, clipName(name))
	})
}

// clipName is a bucket name as an error quotes it: at most 64 bytes.
func clipName(name []byte) string {
	if len(name) > 64 {
		return string(name[:64]) + "…"
	}
	return string(name)
}

package boltstore

import (
	"encoding/binary"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// checkTrees makes sure that no bucket's B+tree in btx loops: a damaged
// child pointer that leads back to a page above it would send bbolt's
// lookups down the loop until the goroutine's stack overflows, a fatal
// error that no recover catches (and its walks would go round for ever).
// Open checks it once, before anything looks a key up, reading the branch
// pages only (362 of the 59,000 pages of a million-event ledger) and the
// header of each one's first child.
//
// A page may be referenced once. The walk goes down every branch page
// whose first child is a branch page; the children of the others are
// leaves in a sound tree (bbolt keeps every leaf at one depth), and must
// not be any branch page the walk met. A loop needs a pointer back to a page
// above it, so it is always caught; a pointer to some other page is left to
// what reads it (verify's key-order checks, bbolt's page checks).
//
// The trees checked are the root bucket's, the top-level buckets', and those
// of the spaces bucket's buckets: the only buckets logbook opens.
func checkTrees(btx *bolt.Tx, file *os.File, pageSize int) error {
	w := treeWalk{file: file, pageSize: pageSize, end: uint64(btx.Size()) / uint64(pageSize), branches: map[uint64]bool{}}
	root := btx.Cursor().Bucket()
	if err := w.tree("the root bucket", uint64(root.Root())); err != nil {
		return err
	}
	var spaces *bolt.Bucket
	err := root.ForEachBucket(func(name []byte) error {
		b := root.Bucket(name)
		if string(name) == string(bucketSpaces) {
			spaces = b
		}
		return w.tree(fmt.Sprintf("bucket %q", name), uint64(b.Root()))
	})
	if err != nil {
		return err
	}
	if spaces != nil {
		err = spaces.ForEachBucket(func(name []byte) error {
			return w.tree(fmt.Sprintf("space %q", name), uint64(spaces.Bucket(name).Root()))
		})
		if err != nil {
			return err
		}
	}
	for _, low := range w.lowest {
		for _, k := range low.kids {
			if w.branches[k] {
				return fmt.Errorf("%w: %s's branch page %d points at page %d, a branch page above it: a loop", ErrDamaged, low.tree, low.page, k)
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

// tree walks the tree with root page id (0: an inline bucket, in its
// parent's leaf).
func (w *treeWalk) tree(name string, id uint64) error {
	if id == 0 {
		return nil
	}
	return w.branch(name, id, 0)
}

// branch walks page id, depth levels below the root of tree name.
func (w *treeWalk) branch(name string, id uint64, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%w: %s is more than %d pages deep: a loop", ErrDamaged, name, maxTreeDepth)
	}
	if w.branches[id] {
		return fmt.Errorf("%w: %s reaches page %d twice: a loop", ErrDamaged, name, id)
	}
	flags, kids, err := w.read(name, id)
	if err != nil || flags&0x01 == 0 {
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
	if first&0x01 == 0 {
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

// pageHeaderSize and branchElemSize are bbolt's page layout: a header of
// id (8 bytes), flags (2), count (2), overflow (4); a branch page's
// elements of pos (4), key size (4), child page id (8).
const (
	pageHeaderSize = 16
	branchElemSize = 16
)

// header reads page id's flags and overflow count.
func (w *treeWalk) header(name string, id uint64) (flags uint16, overflow uint32, err error) {
	if id < 2 || id >= w.end {
		return 0, 0, fmt.Errorf("%w: %s points at page %d, outside the file's %d pages", ErrDamaged, name, id, w.end)
	}
	var h [pageHeaderSize]byte
	if _, err := w.file.ReadAt(h[:], int64(id)*int64(w.pageSize)); err != nil {
		return 0, 0, fmt.Errorf("read page %d: %w", id, err)
	}
	if got := binary.LittleEndian.Uint64(h[:]); got != id {
		return 0, 0, fmt.Errorf("%w: %s points at page %d, which says it is page %d", ErrDamaged, name, id, got)
	}
	flags = binary.LittleEndian.Uint16(h[8:])
	if flags&0x03 == 0 {
		return 0, 0, fmt.Errorf("%w: %s points at page %d, neither a branch nor a leaf (flags %#x)", ErrDamaged, name, id, flags)
	}
	return flags, binary.LittleEndian.Uint32(h[12:]), nil
}

// read reads page id and, if it is a branch page, its children.
func (w *treeWalk) read(name string, id uint64) (flags uint16, kids []uint64, err error) {
	flags, overflow, err := w.header(name, id)
	if err != nil || flags&0x01 == 0 {
		return flags, nil, err
	}
	size := (uint64(overflow) + 1) * uint64(w.pageSize)
	if id+uint64(overflow) >= w.end {
		return 0, nil, fmt.Errorf("%w: %s's branch page %d runs past the file's end", ErrDamaged, name, id)
	}
	if uint64(cap(w.buf)) < size {
		w.buf = make([]byte, size)
	}
	p := w.buf[:size]
	if _, err := w.file.ReadAt(p, int64(id)*int64(w.pageSize)); err != nil {
		return 0, nil, fmt.Errorf("read page %d: %w", id, err)
	}
	n := int(binary.LittleEndian.Uint16(p[10:]))
	if pageHeaderSize+n*branchElemSize > len(p) {
		return 0, nil, fmt.Errorf("%w: %s's branch page %d counts %d elements, more than it holds", ErrDamaged, name, id, n)
	}
	kids = make([]uint64, n)
	for i := range kids {
		kids[i] = binary.LittleEndian.Uint64(p[pageHeaderSize+i*branchElemSize+8:])
	}
	return flags, kids, nil
}

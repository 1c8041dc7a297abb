package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A freelist page whose overflow count claims every page of a file whose
// meta page (checksum recomputed) names a high-water mark far past what
// is written, the file extended to it sparse, is refused as damaged
// without reading the claimed pages into memory: every open read them
// all (a file of 64 GiB holes made any reader allocate 64 GiB: killed).
func TestFreelistOverflowNotReadWhole(t *testing.T) {
	l := openTest(t)
	appendN(t, l, 20)
	l.Close()
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, l.Path(), path)
	claimSparseGiB(t, path, func(m []byte) uint64 { return binary.LittleEndian.Uint64(m[metaFreeField:]) })
	opensInLittleMemory(t, path, "a freelist of a few pages")
}

// So with a branch page's overflow: every open reads the branch pages of
// every tree (checkTrees), and read all the pages an edited overflow count
// claimed, holes of a sparse file too.
func TestBranchOverflowNotReadWhole(t *testing.T) {
	l := openTest(t)
	appendN(t, l, 3000)
	l.Close()
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, l.Path(), path)
	// A branch page in use: the root of a bucket.
	var branch uint64
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if b.Stats().Depth > 1 && branch == 0 {
				branch = uint64(b.Root())
			}
			return nil
		})
	})
	db.Close()
	if branch == 0 {
		t.Fatal("no bucket with a branch root")
	}
	claimSparseGiB(t, path, func([]byte) uint64 { return branch })
	opensInLittleMemory(t, path, "a branch page")
}

// claimSparseGiB edits the ledger at path as a damaged (or hostile) file
// may be: its newest meta page (checksum recomputed) names a high-water
// mark of 1 GiB, the file is extended to it sparse, and page(meta)'s
// overflow count claims every page after it.
func claimSparseGiB(t *testing.T, path string, page func(meta []byte) uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var m0, m1 [metaLen]byte
	f.ReadAt(m0[:], 0)
	ps := int64(binary.LittleEndian.Uint32(m0[metaPageSize:]))
	f.ReadAt(m1[:], ps)
	m, slot := m0[:], int64(0)
	if binary.LittleEndian.Uint64(m1[metaTxidField:]) > binary.LittleEndian.Uint64(m0[metaTxidField:]) {
		m, slot = m1[:], 1
	}
	pages := uint64((1 << 30) / ps)
	binary.LittleEndian.PutUint64(m[metaPgidField:], pages)
	h := fnv.New64a()
	h.Write(m[metaFieldsStart:metaSumField])
	binary.LittleEndian.PutUint64(m[metaSumField:], h.Sum64())
	if _, err := f.WriteAt(m, slot*ps); err != nil {
		t.Fatal(err)
	}
	id := page(m)
	var ov [4]byte
	binary.LittleEndian.PutUint32(ov[:], uint32(pages-id-1))
	if _, err := f.WriteAt(ov[:], int64(id)*ps+12); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(pages) * ps); err != nil {
		t.Fatal(err)
	}
}

// opensInLittleMemory opens the ledger at path, read-only and to write:
// each open refuses it as damaged (or takes it), allocating at most 64
// MiB, not the claimed pages.
func opensInLittleMemory(t *testing.T, path, what string) {
	t.Helper()
	for _, opts := range []Options{{ReadOnly: true}, {}} {
		t.Run(fmt.Sprint("read-only=", opts.ReadOnly), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r, err := Open(path, opts)
			runtime.ReadMemStats(&after)
			if err == nil {
				r.Close()
			}
			if err != nil && !errors.Is(err, ErrDamaged) {
				t.Errorf("%v, want ErrDamaged or none", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("open allocated %d MiB for %s", got>>20, what)
			}
		})
	}
}

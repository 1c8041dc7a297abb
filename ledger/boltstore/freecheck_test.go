package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// editFreePage rewrites, in place, the freelist page that the newest meta
// page of the file at path names (a one-page freelist).
func editFreePage(t *testing.T, path string, edit func(page []byte, id, high uint64)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := uint64(binary.LittleEndian.Uint32(b[metaPageSize:]))
	m := b[:80]
	if m1 := b[ps : ps+80]; binary.LittleEndian.Uint64(m1[metaTxidField:]) > binary.LittleEndian.Uint64(m[metaTxidField:]) {
		m = m1
	}
	id, high := binary.LittleEndian.Uint64(m[metaFreeField:]), binary.LittleEndian.Uint64(m[metaPgidField:])
	page := b[id*ps : (id+1)*ps]
	if binary.LittleEndian.Uint16(page[8:]) != freePageFlag || binary.LittleEndian.Uint32(page[12:]) != 0 {
		t.Fatalf("page %d is not a one-page freelist", id)
	}
	edit(page, id, high)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A writer's open of a file whose freelist is damaged is refused as
// damaged, the file left as it was: bbolt's writer read the freelist
// first, and trusted it. A freelist page's flags changed panicked in
// bolt.Open (no recover: the process died), a long count made it allocate
// until the process died, and a meta page listed free was handed to a
// tree, which the next commit's meta page overwrote (the rebuilt
// projections then lost a space's root).
func TestWriterRefusesDamagedFreelist(t *testing.T) {
	l := openTest(t)
	for i := range 30 {
		appendSized(l, 3000+i*200) // overflow pages, some of them freed
	}
	if err := l.Update(func(tx *Tx) error { return tx.DropSpaces() }); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 20)
	l.Close()
	healthy := l.Path()
	put16 := binary.LittleEndian.PutUint16
	put64 := binary.LittleEndian.PutUint64
	count := func(p []byte) int { return int(binary.LittleEndian.Uint16(p[10:])) }
	for _, c := range []struct {
		name string
		edit func(p []byte, id, high uint64)
	}{
		{"not a freelist page", func(p []byte, _, _ uint64) { put16(p[8:], leafFlag) }},
		{"a long count, huge", func(p []byte, _, _ uint64) { put16(p[10:], 0xFFFF); put64(p[16:], 1<<40) }},
		{"a count past its page", func(p []byte, _, _ uint64) { put16(p[10:], 0xFFFF); put64(p[16:], 20000) }},
		{"meta page 0 listed", func(p []byte, _, _ uint64) { put64(p[16:], 0) }},
		{"meta page 1 listed", func(p []byte, _, _ uint64) { put64(p[16+8*(count(p)-1):], 1) }},
		{"a page past the end", func(p []byte, _, high uint64) { put64(p[16:], high+2) }},
		{"a page twice", func(p []byte, _, _ uint64) { put64(p[16+8:], binary.LittleEndian.Uint64(p[16:])) }},
		{"its own page", func(p []byte, id, _ uint64) { put64(p[16:], id) }},
		{"runs past the end", func(p []byte, _, _ uint64) { binary.LittleEndian.PutUint32(p[12:], 1<<20) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			copyFile(t, healthy, path)
			editFreePage(t, path, c.edit)
			before, _ := os.ReadFile(path)
			for _, opts := range []Options{{}, {Hold: true}} {
				l, err := Open(path, opts)
				if err == nil {
					err = l.Update(func(tx *Tx) error { return tx.DropSpaces() })
					l.Close()
				}
				if !errors.Is(err, ErrDamaged) {
					t.Errorf("hold %v: %v, want ErrDamaged", opts.Hold, err)
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("the file changed")
			}
		})
	}
	// The freelist written back as it was is no damage.
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, healthy, path)
	editFreePage(t, path, func([]byte, uint64, uint64) {})
	w := openPath(t, path, Options{Hold: true})
	appendN(t, w, 3)
}

package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file damaged while a Store has it open — after the Store's open
// checked it — is refused by DropSpaces, nothing freed and the file
// unchanged: dropped, the spaces' pages are freed, a page the log still
// uses with them if the damage made it theirs too, and the next commit
// writes over it (review: a rebuild checked the pages when it began, not
// in the hold that drops the projections). Two damages: a space's branch
// page made to point at a leaf of the events tree, and the freelist made
// to list that leaf (a held Store: no reopen checks it meanwhile).
func TestDropSpacesChecksTreesInItsHold(t *testing.T) {
	for _, c := range []struct {
		name string
		hold bool
		edit func(t *testing.T, f *os.File, ps int, spaceRoot, leaf uint64)
		want string
	}{
		{"a space's branch points at an events leaf", false, func(t *testing.T, f *os.File, ps int, spaceRoot, leaf uint64) {
			root := readPage(t, f, spaceRoot, ps)
			count := int(binary.LittleEndian.Uint16(root[10:]))
			if binary.LittleEndian.Uint16(root[8:]) != branchFlag || count < 2 {
				t.Fatalf("the space's root %d is not a branch page", spaceRoot)
			}
			binary.LittleEndian.PutUint64(root[pageHeaderSize+elemSize*(count-1)+8:], leaf)
			writePage(t, f, spaceRoot, ps, root)
		}, "both point at page"},
		{"the freelist lists an events leaf", true, func(t *testing.T, f *os.File, ps int, _, leaf uint64) {
			m0, m1 := readPage(t, f, 0, ps), readPage(t, f, 1, ps)
			m := m0
			if binary.LittleEndian.Uint64(m1[metaTxidField:]) > binary.LittleEndian.Uint64(m0[metaTxidField:]) {
				m = m1
			}
			id := binary.LittleEndian.Uint64(m[metaFreeField:])
			page := readPage(t, f, id, ps)
			if binary.LittleEndian.Uint16(page[8:]) != freePageFlag || binary.LittleEndian.Uint16(page[10:]) == 0 {
				t.Fatalf("page %d is no freelist listing a page", id)
			}
			binary.LittleEndian.PutUint64(page[pageHeaderSize:], leaf) // its first id, the lowest
			writePage(t, f, id, ps, page)
		}, "the freelist lists page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			l, err := Open(path, Options{Create: true, Hold: c.hold})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			appendN(t, l, 300)
			for round := range 2 { // a second round frees pages, for the freelist to list
				err = l.Update(func(tx *Tx) error {
					sp, err := tx.Space("tasks")
					if err != nil {
						return err
					}
					for i := range 2000 {
						if err := sp.Put(fmt.Appendf(nil, "task-%06d", i), make([]byte, 40+round)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// The Store has checked the file (at its open) and has it
			// open; the damage comes now, in place.
			var spaceRoot, eventsRoot uint64
			var ps int
			err = l.View(func(tx *Tx) error {
				spaceRoot = uint64(tx.btx.Bucket(bucketSpaces).Bucket([]byte("tasks")).Root())
				eventsRoot = uint64(tx.btx.Bucket(bucketEvents).Root())
				ps = tx.btx.DB().Info().PageSize
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			leaf := eventsRoot
			for p := readPage(t, f, leaf, ps); binary.LittleEndian.Uint16(p[8:]) == branchFlag; p = readPage(t, f, leaf, ps) {
				leaf = binary.LittleEndian.Uint64(p[pageHeaderSize+8:])
			}
			c.edit(t, f, ps, spaceRoot, leaf)
			before, _ := os.ReadFile(path)

			_, err = l.UpdateSeries(func(tx *Tx) (bool, error) { return true, tx.DropSpaces() })
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("DropSpaces: %v, want ErrDamaged saying %q", err, c.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("DropSpaces refused the file but changed it")
			}
		})
	}
}

func readPage(t *testing.T, f *os.File, id uint64, ps int) []byte {
	t.Helper()
	p := make([]byte, ps)
	if _, err := f.ReadAt(p, int64(id)*int64(ps)); err != nil {
		t.Fatal(err)
	}
	return p
}

func writePage(t *testing.T, f *os.File, id uint64, ps int, p []byte) {
	t.Helper()
	if _, err := f.WriteAt(p, int64(id)*int64(ps)); err != nil {
		t.Fatal(err)
	}
}

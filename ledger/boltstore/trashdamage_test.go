package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// trashedLedger writes a ledger of events events and then what an older
// binary's rebuild left: trash/<batch 1>/big, a space of keys keys, and an
// event; it returns its path and the root page of the trashed space.
func trashedLedger(t *testing.T, events, keys int) (path string, root uint64, pageSize int) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, events)
	err = l.Update(func(tx *Tx) error {
		if _, err := tx.Append(ledger.Event{Type: "x", Version: 1}); err != nil {
			return err
		}
		trash, err := tx.btx.CreateBucket(bucketTrash)
		if err != nil {
			return err
		}
		batch, err := trash.CreateBucket(u64(1))
		if err != nil {
			return err
		}
		sp, err := batch.CreateBucket([]byte("big"))
		if err != nil {
			return err
		}
		for i := range keys {
			if err := sp.Put([]byte(fmt.Sprintf("big-%08d", i)), make([]byte, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(btx *bolt.Tx) error {
		root = uint64(btx.Bucket(bucketTrash).Bucket(u64(1)).Bucket([]byte("big")).Root())
		return nil
	})
	return path, root, db.Info().PageSize
}

// editPage rewrites page id of the file at path with edit.
func editPage(t *testing.T, path string, id uint64, pageSize int, edit func(p []byte)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(b[id*uint64(pageSize) : (id+1)*uint64(pageSize)])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A trashed space's tree whose branch page points back at itself: open
// now finds the loop, as in any other tree (review: checkTrees walked no
// trash, and every commit's emptyTrash walks it).
func TestOpenRefusesTrashLoop(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20)) // fail fast, if it recurses
	path, root, ps := trashedLedger(t, 0, 2000)
	editPage(t, path, root, ps, func(p []byte) {
		if binary.LittleEndian.Uint16(p[8:]) != branchFlag {
			t.Fatalf("the trashed space's root %d is not a branch page", root)
		}
		binary.LittleEndian.PutUint64(p[pageHeaderSize+8:], root) // its first child: itself
	})
	_, err := Open(path, Options{})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "loop") {
		t.Fatalf("open: %v, want ErrDamaged naming a loop", err)
	}
}

// A trashed space that holds a bucket whose root is the space's own leaf
// (one flag bit and a page id changed): emptying the trash deleted it by
// bbolt's recursion until the stack overflowed. It is now ErrDamaged.
func TestEmptyTrashRefusesNestedBucket(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	path, leaf, ps := trashedLedger(t, 0, 20) // one leaf page, not inline
	editPage(t, path, leaf, ps, func(p []byte) {
		if binary.LittleEndian.Uint16(p[8:]) != leafFlag {
			t.Fatalf("the trashed space's root %d is not a leaf", leaf)
		}
		// The first element: flags (4; 1 a bucket), pos, key size, value
		// size; a bucket's value starts with its root page.
		binary.LittleEndian.PutUint32(p[pageHeaderSize:], 1)
		pos, ksize := binary.LittleEndian.Uint32(p[pageHeaderSize+4:]), binary.LittleEndian.Uint32(p[pageHeaderSize+8:])
		binary.LittleEndian.PutUint64(p[pageHeaderSize+pos+ksize:], leaf)
	})
	l := openPath(t, path, Options{})
	err := l.EmptyTrash()
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("EmptyTrash: %v, want ErrDamaged", err)
	}
}

// A bucket holding spaces whose leaf lists a space a lookup by its name
// does not find (a byte of one space's name changed, the keys out of
// order): open walked the buckets, looked the name up, and dereferenced
// what it did not find, so every command said "runtime error: invalid
// memory address or nil pointer dereference" (fuzzing the v1 fixture's
// pages). It is now ErrDamaged naming the bucket and the space.
func TestOpenRefusesBucketLookupMiss(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Update(func(tx *Tx) error {
		for _, name := range []string{"space-aaaa", "space-bbbb"} {
			sp, err := tx.Space(name)
			if err != nil {
				return err
			}
			if err := sp.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("space-aaaa"), []byte("space-zzzz")) // now after space-bbbb
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{ReadOnly: true})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), `bucket spaces lists bucket "space-zzzz"`) || strings.Contains(err.Error(), "runtime error") {
		t.Fatalf("open: %v, want ErrDamaged naming spaces/space-zzzz", err)
	}
}

// A page whose first element's offset points far outside it: bbolt reads
// it unchecked and faults, which every command reported in the Go
// runtime's words ("invalid memory address or nil pointer dereference"),
// naming no page. The fault is now placed by verify's check of the trees'
// pages: the error names the tree and the page, at open (the root bucket's
// page, read by every open) and in a read after it (the events bucket's).
func TestDamagedPageReadNamesPage(t *testing.T) {
	for _, c := range []struct {
		name string
		page func(btx *bolt.Tx) uint64
		want string
	}{
		{"the root bucket", func(btx *bolt.Tx) uint64 { return uint64(btx.Cursor().Bucket().Root()) }, "the root bucket's page %d"},
		{"events", func(btx *bolt.Tx) uint64 { return uint64(btx.Bucket(bucketEvents).Root()) }, `bucket "events"'s page %d`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, _ := tamperLedger(t, 40, FormatVersion)
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			var page uint64
			db.View(func(btx *bolt.Tx) error { page = c.page(btx); return nil })
			ps := db.Info().PageSize
			db.Close()
			for { // down the first children to a leaf
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				p := b[page*uint64(ps):]
				if binary.LittleEndian.Uint16(p[8:]) != branchFlag {
					break
				}
				page = binary.LittleEndian.Uint64(p[pageHeaderSize+8:])
			}
			editPage(t, path, page, ps, func(p []byte) {
				if binary.LittleEndian.Uint16(p[8:]) != leafFlag {
					t.Fatalf("page %d is not a leaf", page)
				}
				binary.LittleEndian.PutUint32(p[pageHeaderSize+4:], 0x7fffff00) // element 0's offset
			})
			err = func() error {
				l, err := Open(path, Options{ReadOnly: true})
				if err != nil {
					return err
				}
				defer l.Close()
				return l.View(func(tx *Tx) error {
					_, err := tx.Event(1)
					return err
				})
			}()
			want := fmt.Sprintf(c.want, page)
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "runtime error") {
				t.Fatalf("read: %v, want ErrDamaged naming %s", err, want)
			}
		})
	}
}

// A tree's lowest branch page pointing at a branch page of a tree walked
// after it — here the events tree's, at one in the middle of a trashed
// space's tree, walked last — is found at open (review: only the branch
// pages of the trees walked before were checked; a writer's commits would
// then free a page another tree still uses).
func TestOpenRefusesLeafPointerIntoLaterBranch(t *testing.T) {
	path, root, ps := trashedLedger(t, 300, 20000)
	var events uint64
	func() {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.View(func(btx *bolt.Tx) error { events = uint64(btx.Bucket(bucketEvents).Root()); return nil })
	}()
	var mid uint64 // the trashed space's root's first child, a branch page
	editPage(t, path, root, ps, func(p []byte) { mid = binary.LittleEndian.Uint64(p[pageHeaderSize+8:]) })
	editPage(t, path, mid, ps, func(p []byte) {
		if binary.LittleEndian.Uint16(p[8:]) != branchFlag {
			t.Fatalf("page %d under the trashed space's root is not a branch page: the tree is not 3 deep", mid)
		}
	})
	editPage(t, path, events, ps, func(p []byte) {
		count := int(binary.LittleEndian.Uint16(p[10:]))
		if binary.LittleEndian.Uint16(p[8:]) != branchFlag || count < 2 {
			t.Fatalf("the events tree's root %d is not a branch page of leaves", events)
		}
		binary.LittleEndian.PutUint64(p[pageHeaderSize+elemSize*(count-1)+8:], mid)
	})
	for _, opts := range []Options{{}, {ReadOnly: true}} {
		if _, err := Open(path, opts); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "a branch page of another tree") {
			t.Errorf("open (read-only %v): %v, want ErrDamaged naming another tree's branch page", opts.ReadOnly, err)
		}
	}
}

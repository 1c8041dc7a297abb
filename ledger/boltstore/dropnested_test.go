package boltstore

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A space holds no bucket, but a damaged file's may: one flag bit of a
// leaf element makes its value a bucket header, whose root page may be the
// leaf itself. DropSpaces (every rebuild, and a server's open after a
// projections version bump) had bbolt delete it by recursion, down the
// space inside itself until the stack overflowed: a fatal error, no
// recover. It is now ErrDamaged, the file untouched.
func TestDropSpacesRefusesNestedBucket(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20)) // fail fast, if it recurses
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3)
	err = l.Update(func(tx *Tx) error {
		sp, err := tx.Space("s")
		if err != nil {
			return err
		}
		for _, k := range []string{"a", "b", "c"} {
			if err := sp.Put([]byte(k), make([]byte, 500)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	var leaf uint64
	var ps int
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ps = db.Info().PageSize
	db.View(func(btx *bolt.Tx) error {
		leaf = uint64(btx.Bucket(bucketSpaces).Bucket([]byte("s")).Root())
		return nil
	})
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := b[leaf*uint64(ps):]
	if binary.LittleEndian.Uint16(p[8:]) != leafFlag {
		t.Fatalf("space s's root %d is not a leaf", leaf)
	}
	// The first element: flags (4), pos (4), key size (4), value size.
	binary.LittleEndian.PutUint32(p[pageHeaderSize:], 1) // a bucket
	pos, ksize := binary.LittleEndian.Uint32(p[pageHeaderSize+4:]), binary.LittleEndian.Uint32(p[pageHeaderSize+8:])
	binary.LittleEndian.PutUint64(p[pageHeaderSize+pos+ksize:], leaf)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w := openPath(t, path, Options{Hold: true})
	err = w.Update(func(tx *Tx) error { return tx.DropSpaces() })
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("DropSpaces: %v, want ErrDamaged", err)
	}
}

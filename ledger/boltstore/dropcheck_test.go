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

	bolt "go.etcd.io/bbolt"
)

// A file damaged while a Store has it open — a space's branch page made to
// point at a leaf of the events tree, after the Store's open checked the
// trees — is refused by DropSpaces, nothing freed and the file unchanged:
// dropped, the space's pages are freed, the events' leaf with them, and the
// next commit writes over it (review: a rebuild checked the pages when it
// began, not in the hold that drops the projections).
func TestDropSpacesChecksTreesInItsHold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, 300)
	err = l.Update(func(tx *Tx) error {
		sp, err := tx.Space("tasks")
		if err != nil {
			return err
		}
		for i := range 2000 {
			if err := sp.Put(fmt.Appendf(nil, "task-%06d", i), make([]byte, 40)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The Store has checked the trees (at its open) and holds the file
	// open; the damage comes now.
	var spaceRoot, eventsRoot uint64
	var pageSize int
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(btx *bolt.Tx) error {
		spaceRoot = uint64(btx.Bucket(bucketSpaces).Bucket([]byte("tasks")).Root())
		eventsRoot = uint64(btx.Bucket(bucketEvents).Root())
		return nil
	})
	pageSize = db.Info().PageSize
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := func(id uint64) []byte { return b[id*uint64(pageSize) : (id+1)*uint64(pageSize)] }
	leaf := eventsRoot
	for binary.LittleEndian.Uint16(page(leaf)[8:]) == branchFlag {
		leaf = binary.LittleEndian.Uint64(page(leaf)[pageHeaderSize+8:])
	}
	root := page(spaceRoot)
	count := int(binary.LittleEndian.Uint16(root[10:]))
	if binary.LittleEndian.Uint16(root[8:]) != branchFlag || count < 2 {
		t.Fatalf("the space's root %d is not a branch page", spaceRoot)
	}
	binary.LittleEndian.PutUint64(root[pageHeaderSize+elemSize*(count-1)+8:], leaf)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	_, err = l.UpdateSeries(func(tx *Tx) (bool, error) { return true, tx.DropSpaces() })
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "both point at page") {
		t.Fatalf("DropSpaces on a space sharing a leaf with the events: %v, want ErrDamaged naming the shared page", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(b, after) {
		t.Errorf("DropSpaces refused the file but changed it")
	}
}

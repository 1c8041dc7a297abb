package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// TestStagingPromote: a staging set of spaces is built beside the live one
// without touching it, swapped in at once, and the old live spaces are
// freed in bounded passes; the file stays a sound ledger throughout (bbolt's
// own consistency check, and Verify).
func TestStagingPromote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fill := func(staging bool, name string, n int) {
		t.Helper()
		err := l.Update(func(tx *Tx) error {
			if _, err := tx.Append(ledger.Event{Type: "x", Version: 1}); err != nil {
				return err
			}
			if staging {
				tx = tx.Staging()
			}
			sp, err := tx.Space(name)
			if err != nil {
				return err
			}
			for i := range n {
				if err := sp.Put([]byte(fmt.Sprintf("%s-%08d", name, i)), make([]byte, i%200)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	get := func(name, key string) (found bool) {
		l.View(func(tx *Tx) error {
			sp, _ := tx.Space(name)
			found = sp.Get([]byte(key)) != nil
			return nil
		})
		return found
	}
	for round := range 3 {
		newName := fmt.Sprintf("new%d", round)
		fill(false, "big", 30000)
		fill(false, "small", 3) // inline in its parent
		fill(false, "keep", 100)
		if err := l.Update(func(tx *Tx) error { return tx.DropStaging() }); err != nil {
			t.Fatal(err)
		}
		fill(true, "keep", 50)
		fill(true, newName, 10)
		if !get("big", "big-00000001") || get(newName, newName+"-00000001") {
			t.Fatalf("round %d: building the staging set changed the live one", round)
		}
		// Written to in the same transaction: bbolt would lose the writes.
		err := l.Update(func(tx *Tx) error {
			sp, _ := tx.Staging().Space(newName)
			sp.Put([]byte("late"), []byte("1"))
			return tx.PromoteStaging()
		})
		if err == nil {
			t.Fatal("promoted a staging set written in the same transaction")
		}
		if err := l.Update(func(tx *Tx) error {
			if _, err := tx.Staging().Append(ledger.Event{Type: "x", Version: 1}); err == nil {
				t.Error("appended through a staging view")
			}
			return tx.PromoteStaging()
		}); err != nil {
			t.Fatal(err)
		}
		if get("big", "big-00000001") || get("small", "small-00000001") || get("keep", "keep-00000099") {
			t.Error("old live spaces still readable after the promotion")
		}
		if !get("keep", "keep-00000049") || !get(newName, newName+"-00000009") {
			t.Error("the promoted spaces are not live")
		}
		l.View(func(tx *Tx) error {
			if tx.btx.Bucket(bucketStaging) != nil {
				t.Error("staging bucket left behind")
			}
			return nil
		})
		passes := 0
		for more := true; more; passes++ {
			err := l.Update(func(tx *Tx) (err error) {
				more, err = tx.emptyTrash(500 << 10)
				return err
			})
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			checkBolt(t, path)
		}
		if passes < 6 {
			t.Errorf("round %d: emptied about 3 MB in %d passes of 500 KB", round, passes)
		}
		l.View(func(tx *Tx) error {
			if tx.btx.Bucket(bucketTrash) != nil {
				t.Error("trash bucket left behind")
			}
			return nil
		})
		// What the next round's live fill adds must not collide.
		if err := l.Update(func(tx *Tx) error { return tx.DropStaging() }); err != nil {
			t.Fatal(err)
		}
		if err := l.Update(func(tx *Tx) error { return tx.PromoteStaging() }); err == nil {
			t.Fatal("promoted a dropped staging set")
		}
	}
	if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkBolt runs bbolt's consistency check on the file.
func checkBolt(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("bbolt check: %v", err)
	}
}

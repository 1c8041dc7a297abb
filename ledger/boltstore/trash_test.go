package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// TestDiscardSpace: a discarded space is gone at once, its keys are freed by
// EmptyTrash a bounded number per transaction, and the file stays a sound
// ledger throughout (bbolt's own consistency check, and Verify).
func TestDiscardSpace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fill := func(name string, n int) {
		t.Helper()
		err := l.Update(func(tx *Tx) error {
			if _, err := tx.Append(ledger.Event{Type: "x", Version: 1}); err != nil {
				return err
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
	for round := range 3 {
		fill("big", 30000)
		fill("small", 3) // inline in its parent
		fill("keep", 100)
		err := l.Update(func(tx *Tx) error {
			for _, name := range []string{"big", "small", "missing"} {
				if err := tx.DiscardSpace(name); err != nil {
					return err
				}
			}
			// A space discarded twice before the trash is emptied.
			sp, _ := tx.Space("big")
			sp.Put([]byte("again"), []byte("1"))
			return tx.DiscardSpace("big")
		})
		if err != nil {
			t.Fatal(err)
		}
		l.View(func(tx *Tx) error {
			sp, _ := tx.Space("big")
			if sp.Get([]byte("big-00000001")) != nil || sp.Get([]byte("again")) != nil {
				t.Error("discarded space still readable")
			}
			return nil
		})
		passes := 0
		for more := true; more; passes++ {
			err := l.Update(func(tx *Tx) (err error) {
				more, err = tx.EmptyTrash(500 << 10)
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
			sp, _ := tx.Space("keep")
			if sp.Get([]byte("keep-00000099")) == nil {
				t.Error("a space that was not discarded lost keys")
			}
			return nil
		})
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

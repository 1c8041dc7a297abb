package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// TestEmptyTrash: spaces an older binary's rebuilds left in the trash (a
// batch per rebuild) are freed in bounded passes, and the staging set such
// a rebuild left unfinished goes with the next DropSpaces; the file stays
// a sound ledger throughout (bbolt's own consistency check, and Verify).
func TestEmptyTrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// What an older binary wrote: trash/<batch>/<space>, staging/<space>.
	err = l.Update(func(tx *Tx) error {
		if _, err := tx.Append(ledger.Event{Type: "x", Version: 1}); err != nil {
			return err
		}
		trash, err := tx.btx.CreateBucket(bucketTrash)
		if err != nil {
			return err
		}
		for batch := range 2 {
			b, err := trash.CreateBucket(u64(uint64(batch + 1)))
			if err != nil {
				return err
			}
			for _, name := range []string{"big", "small"} {
				sp, err := b.CreateBucket([]byte(name))
				if err != nil {
					return err
				}
				n := 3
				if name == "big" {
					n = 15000
				}
				for i := range n {
					if err := sp.Put([]byte(fmt.Sprintf("%s-%08d", name, i)), make([]byte, i%200)); err != nil {
						return err
					}
				}
			}
		}
		staging, err := tx.btx.CreateBucket(bucketStaging)
		if err != nil {
			return err
		}
		sp, err := staging.CreateBucket([]byte("s"))
		if err != nil {
			return err
		}
		return sp.Put([]byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	checkBolt(t, path)
	passes := 0
	for more := true; more; passes++ {
		err := l.Update(func(tx *Tx) (err error) {
			more, err = tx.emptyTrash(500 << 10)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		checkBolt(t, path)
	}
	if passes < 6 {
		t.Errorf("emptied about 3 MB in %d passes of 500 KB", passes)
	}
	if err := l.Update(func(tx *Tx) error { return tx.DropSpaces() }); err != nil {
		t.Fatal(err)
	}
	l.View(func(tx *Tx) error {
		for _, b := range [][]byte{bucketTrash, bucketStaging} {
			if tx.btx.Bucket(b) != nil {
				t.Errorf("bucket %s left behind", b)
			}
		}
		return nil
	})
	checkBolt(t, path)
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

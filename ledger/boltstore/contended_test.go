package boltstore

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// TestContended: inside a commit, a Store alone on its file is not
// contended; once another Store (another process, as the file lock sees
// it) waits for the file, it is; a Store holding its file always is.
func TestContended(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("waiters signal only on Linux; elsewhere Contended is always true")
	}
	l := openTest(t)
	other, err := Open(l.Path(), Options{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var alone bool
	otherDone := make(chan error, 1)
	err = l.Update(func(tx *Tx) error {
		alone = !l.Contended()
		go func() {
			otherDone <- other.Update(func(tx *Tx) error {
				_, err := tx.Append(ledger.Event{Type: "test.other", Version: 1, Actor: "other", Payload: []byte{0x80}})
				return err
			})
		}()
		for deadline := time.Now().Add(time.Minute); !l.Contended(); { // a hang guard, not a timing check
			if time.Now().After(deadline) {
				t.Error("another Store waits for the file, and Contended still says no")
				break
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !alone {
		t.Error("a Store alone on its file is contended")
	}
	if err := <-otherDone; err != nil {
		t.Fatal(err)
	}

	held, err := Open(filepath.Join(t.TempDir(), "held.db"), Options{Create: true, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	held.Update(func(*Tx) error {
		if !held.Contended() {
			t.Error("a Store holding its file is not contended")
		}
		return nil
	})
}

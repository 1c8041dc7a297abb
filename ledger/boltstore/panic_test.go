package boltstore

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// TestPanickingViewLetsTheFileGo: a read whose function panics (a bug in
// the caller, recovered above it, as a server's handler recovers) lets the
// file and its lock go as a read that returns does: a Store that opened
// the file for the read, and one reading through the committer's open
// file. Kept, every writer of every process waited for the lock in vain.
func TestPanickingViewLetsTheFileGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	w, err := Open(path, Options{Create: true, LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	appendN(t, w, 1)
	r, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, l := range []*Store{r, w} {
		func() {
			defer func() {
				if v := recover(); v != "boom" {
					t.Fatalf("recovered %v, want the function's panic", v)
				}
			}()
			l.View(func(*Tx) error { panic("boom") })
		}()
		appendN(t, w, 1) // fails with ErrLocked if the read kept the lock
	}
}

// TestAppendInAReadIsReadOnly: Append or Ingest in a read transaction is
// ErrReadOnly, not a nil clock's panic.
func TestAppendInAReadIsReadOnly(t *testing.T) {
	l := openTest(t)
	appendN(t, l, 1)
	if err := l.View(func(tx *Tx) error {
		raw, err := tx.Event(1)
		if err != nil {
			return err
		}
		if _, err := tx.Append(ledger.Event{Type: "x", Payload: []byte{0x80}}); !errors.Is(err, ErrReadOnly) {
			t.Errorf("Append in a read: %v, want ErrReadOnly", err)
		}
		if _, err := tx.Ingest(raw.Raw); !errors.Is(err, ErrReadOnly) {
			t.Errorf("Ingest in a read: %v, want ErrReadOnly", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

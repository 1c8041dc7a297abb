package boltstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// TestMissingEventIsDamage: an event the head says the log holds but the
// file does not is damage (ErrDamaged) to every read of it — Event, Scan,
// ScanRaw (which skipped it: a fold over the scan went on without the
// event, one short in its count) and Snapshot — never "not found", which
// only a seq past the head is.
func TestMissingEventIsDamage(t *testing.T) {
	eachFormat(t, func(t *testing.T, format uint64) {
		for _, gone := range []uint64{1, 7, 16, 40} { // first, middle, a group's last, the head
			t.Run(fmt.Sprint(gone), func(t *testing.T) {
				path, _ := tamperLedger(t, 40, format)
				editFile(t, path, deleteEvent(gone))
				l := openPath(t, path, Options{ReadOnly: true})
				err := l.View(func(tx *Tx) error {
					if _, err := tx.Event(gone); !errors.Is(err, ErrDamaged) {
						t.Errorf("Event(%d): %v, want ErrDamaged", gone, err)
					}
					if _, err := tx.Event(41); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrDamaged) {
						t.Errorf("Event(41), past the head: %v, want ErrNotFound", err)
					}
					for _, r := range [][2]uint64{{1, 41}, {gone, gone + 1}, {max(gone, 2) - 1, 41}, {0, 100}} {
						n := 0
						err := tx.ScanRaw(r[0], r[1], func(uint64, []byte) error { n++; return nil })
						if !errors.Is(err, ErrDamaged) {
							t.Errorf("ScanRaw(%d, %d): %v after %d events, want ErrDamaged", r[0], r[1], err, n)
						}
						if err := tx.Scan(r[0], r[1], func(ledger.Record) error { return nil }); !errors.Is(err, ErrDamaged) {
							t.Errorf("Scan(%d, %d): %v, want ErrDamaged", r[0], r[1], err)
						}
					}
					// Ranges that do not cover it read as before.
					if gone > 1 {
						if err := tx.ScanRaw(1, gone, func(uint64, []byte) error { return nil }); err != nil {
							t.Errorf("ScanRaw(1, %d): %v", gone, err)
						}
					}
					if err := tx.ScanRaw(41, 100, func(uint64, []byte) error { return nil }); err != nil {
						t.Errorf("ScanRaw past the head: %v", err)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				_, err = l.Snapshot(context.Background(), filepath.Join(t.TempDir(), "copy.db"), SnapshotOptions{Chunk: 8})
				if !errors.Is(err, ErrDamaged) {
					t.Errorf("Snapshot: %v, want ErrDamaged", err)
				}
			})
		}
		// A stored node the events completed, missing: the same.
		path, _ := tamperLedger(t, 40, format)
		editFile(t, path, deleteNode(4, 1))
		l := openPath(t, path, Options{ReadOnly: true})
		_, err := l.Snapshot(context.Background(), filepath.Join(t.TempDir(), "copy.db"), SnapshotOptions{Chunk: 8})
		if !errors.Is(err, ErrDamaged) {
			t.Errorf("Snapshot without node 4/1: %v, want ErrDamaged", err)
		}
	})
}

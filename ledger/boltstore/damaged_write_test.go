package boltstore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// TestDamagedFileWriteIsAnswered: a commit on a file damaged where Open
// did not read (a bbolt page a commit reads or rewrites panics) is
// answered with an error, in both the shared and the held mode — never
// retried forever with the call left waiting.
func TestDamagedFileWriteIsAnswered(t *testing.T) {
	dir := t.TempDir()
	good, raw := goodLedger(t, dir)
	var last []byte
	l, err := Open(good, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.View(func(tx *Tx) error {
		r, err := tx.Event(tx.Head().Seq)
		last = append(last, r.Raw...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// The page holding the last event (which a commit reads to check the
	// log it saw is intact, and rewrites to append), its type made one
	// bbolt panics on; then random damage besides.
	lastPage := append([]byte(nil), raw...)
	for off := 0; ; {
		i := bytes.Index(lastPage[off:], last)
		if i < 0 {
			break
		}
		pg := (off + i) / 4096 * 4096
		lastPage[pg+8], lastPage[pg+9] = 0x7f, 0x7f
		off += i + len(last)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 40 {
		b := append([]byte(nil), raw...)
		if round == 0 {
			b = lastPage
		}
		for range rng.IntN(20) {
			i := 2*4096 + rng.IntN(len(b)-2*4096)
			b[i] ^= byte(1 + rng.IntN(255))
		}
		for _, hold := range []bool{false, true} {
			path := filepath.Join(dir, "damaged.db")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := Open(path, Options{Hold: hold})
			if err != nil {
				continue
			}
			// An Update twice (the second on the file as the first left
			// it), and a series.
			done := make(chan error, 3)
			go func() {
				for range 2 {
					done <- d.Update(func(tx *Tx) error {
						_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Payload: []byte{0x80}})
						return err
					})
				}
				_, err := d.UpdateSeries(func(tx *Tx) (bool, error) { return true, nil })
				done <- err
			}()
			for range 3 {
				select {
				case err := <-done:
					if round == 0 && !errors.Is(err, ErrDamaged) {
						t.Errorf("round 0 (hold %v): %v, want ErrDamaged", hold, err)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("round %d (hold %v): a commit on a damaged file never answered", round, hold)
				}
			}
			d.Close()
		}
	}
}

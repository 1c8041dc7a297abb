package boltstore

import (
	"errors"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// TestUpdateAfterCloseReturnsErrClosed: once Close has returned, Update
// answers ErrClosed at once, every time, and writes nothing. (The committer
// is gone, so a request that still got into the queue would wait forever.)
func TestUpdateAfterCloseReturnsErrClosed(t *testing.T) {
	l := openTest(t)
	appendN(t, l, 1)
	l.Close()
	errs := make(chan error)
	go func() {
		for range 100 {
			errs <- l.Update(func(tx *Tx) error {
				_, err := tx.Append(ledger.Event{Type: "x", Payload: []byte{0xc0}})
				return err
			})
		}
	}()
	deadline := time.After(5 * time.Second) // a hang, not a timing assertion
	for i := range 100 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("Update %d after Close: %v, want ErrClosed", i, err)
			}
		case <-deadline:
			t.Fatalf("Update %d after Close has not returned", i)
		}
	}
	l.View(func(tx *Tx) error {
		if got := tx.Head().Seq; got != 1 {
			t.Errorf("head %d after Updates on a closed ledger, want 1", got)
		}
		return nil
	})
}

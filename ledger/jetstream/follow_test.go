package jetstream

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestFollowKeepsAReaderCaughtUp: a node that only reads sees, through
// Follow, what other nodes append; Follow stops when its context ends.
func TestFollowKeepsAReaderCaughtUp(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	wnc, rnc := c.connect(t, 0, "app"), c.connect(t, 2, "app")
	writer := openNode(t, filepath.Join(dir, "writer.db"), wnc, openReplica(t, wnc, Options{Stream: "followed"}, hooks{}))
	reader := openNode(t, filepath.Join(dir, "reader.db"), rnc, openReplica(t, rnc, Options{Stream: "followed"}, hooks{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var folded atomic.Uint64 // what fold saw: the head after each catch-up
	go func() {
		done <- reader.rep.Follow(ctx, reader.store, 20*time.Millisecond, func(tx *boltstore.Tx) error {
			folded.Store(tx.Head().Seq)
			return nil
		})
	}()
	for i := range 10 {
		if err := writer.appendEvents("w", fmt.Sprintf("f%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, func() error {
		var seq uint64
		reader.store.View(func(tx *boltstore.Tx) error { seq = tx.Head().Seq; return nil })
		if seq != 10 || folded.Load() != 10 {
			return fmt.Errorf("the reader holds %d events, folded up to %d", seq, folded.Load())
		}
		return nil
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Follow ended with %v", err)
	}
}

package jetstream

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go/jetstream"
)

// TestDeletedStream: a stream deleted under running nodes is
// boltstore.ErrLogGone on every path that meets it — a call's catch-up, an
// append sent without one (the writer that appended last skips the read),
// a follower — and is never made again. Before, the catch-up read on for
// its whole timeout (5s) and failed with a generic reason, the append
// resolved its "no responders" for 30s into ErrAppendUnknown, and Follow
// went on asking.
func TestDeletedStream(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	nc := c.connect(t, 0, "app")
	// Long bounds: an answer that waited for one would show as a slow test.
	opts := Options{Stream: "deleted", Timeout: 20 * time.Second, ResolveWithin: time.Minute}
	n := openNode(t, filepath.Join(dir, "node.db"), nc, openReplica(t, nc, opts, hooks{}))
	fnc := c.connect(t, 2, "app")
	follower := openNode(t, filepath.Join(dir, "follower.db"), fnc, openReplica(t, fnc, opts, hooks{}))
	if err := n.appendEvents("n", "a", "b"); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(c.connect(t, 1, "app"))
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(context.Background(), "deleted"); err != nil {
		t.Fatal(err)
	}
	var head uint64
	n.store.View(func(tx *boltstore.Tx) error { head = tx.Head().Seq; return nil })

	// A call's transaction catches up first.
	n.rep.checked.Store(0)
	if err := n.appendEvents("n", "c"); !errors.Is(err, boltstore.ErrLogGone) {
		t.Errorf("a call after the stream was deleted: %v, want boltstore.ErrLogGone", err)
	}
	// An append sent without a catch-up.
	var h ledger.Head
	n.store.View(func(tx *boltstore.Tx) error { h = tx.Head(); return nil })
	if err := n.rep.Append(h, [][]byte{{0x90}}); !errors.Is(err, boltstore.ErrLogGone) {
		t.Errorf("an append after the stream was deleted: %v, want boltstore.ErrLogGone", err)
	}
	// A follower stops following, saying why.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := follower.rep.Follow(ctx, follower.store, 10*time.Millisecond, nil); !errors.Is(err, boltstore.ErrLogGone) {
		t.Errorf("Follow after the stream was deleted: %v, want boltstore.ErrLogGone", err)
	}
	n.store.View(func(tx *boltstore.Tx) error {
		if tx.Head().Seq != head {
			t.Errorf("the node's copy moved from %d to %d", head, tx.Head().Seq)
		}
		return nil
	})
	if _, err := js.Stream(context.Background(), "deleted"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("the deleted stream was made again: %v", err)
	}
}

package jetstream

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// rewrite returns data with the event's actor changed, re-encoded as a
// well-formed event: only the chain can tell.
func rewrite(tb testing.TB, data []byte) []byte {
	e, err := ledger.DecodeEvent(data)
	if err != nil {
		tb.Fatal(err)
	}
	e.Actor = "mallory"
	out, err := e.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// wantIntegrity checks err is an integrity error at one of seqs and that
// the node stored nothing of the catch-up that found it.
func wantIntegrity(t *testing.T, err error, n *node, headBefore uint64, seqs ...uint64) {
	t.Helper()
	var ie *ledger.IntegrityError
	if !errors.As(err, &ie) {
		t.Fatalf("got %v, want an integrity error", err)
	}
	ok := false
	for _, s := range seqs {
		ok = ok || ie.Seq == s
	}
	if !ok {
		t.Errorf("integrity error %v names seq %d, want one of %v", ie, ie.Seq, seqs)
	}
	n.store.View(func(tx *boltstore.Tx) error {
		if tx.Head().Seq != headBefore {
			t.Errorf("the failed catch-up left the head at %d, want %d", tx.Head().Seq, headBefore)
		}
		return nil
	})
}

// TestTamperedStreamIsDetected: a message rewritten between the stream and
// a node, a message deleted from a stream allowing deletes, and a stream
// whose message at a node's head changed are each reported by the node
// ingesting them, naming the seq, and never stored.
func TestTamperedStreamIsDetected(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	nc := c.connect(t, 0, "app")
	writer := openNode(t, filepath.Join(dir, "writer.db"), nc, openReplica(t, nc, Options{Stream: "tampered"}, hooks{}))
	for _, s := range []string{"e1", "e2", "e3", "e4", "e5"} {
		if err := writer.appendEvents("w", s); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("rewritten in transit", func(t *testing.T) {
		nc := c.connect(t, 1, "app")
		reader := openNode(t, filepath.Join(dir, "reader.db"), nc, openReplica(t, nc, Options{Stream: "tampered"}, hooks{
			tamper: func(seq uint64, data []byte) []byte {
				if seq == 3 {
					return rewrite(t, data)
				}
				return data
			}}))
		err := reader.store.Update(func(*boltstore.Tx) error { return nil })
		wantIntegrity(t, err, reader, 0, 3, 4)
	})

	t.Run("head rewritten after ingest", func(t *testing.T) {
		var on atomic.Bool
		nc := c.connect(t, 2, "app")
		reader := openNode(t, filepath.Join(dir, "follower.db"), nc, openReplica(t, nc, Options{Stream: "tampered"}, hooks{
			tamper: func(seq uint64, data []byte) []byte {
				if on.Load() && seq == 5 {
					return rewrite(t, data)
				}
				return data
			}}))
		reader.catchUp(t)
		on.Store(true)
		if err := writer.appendEvents("w", "e6"); err != nil {
			t.Fatal(err)
		}
		err := reader.appendEvents("r", "r1")
		wantIntegrity(t, err, reader, 5, 5)
	})

	t.Run("deleted", func(t *testing.T) {
		// Only a stream allowing deletes can lose a message; Open refuses
		// one, so this one is opened past the check.
		nc := c.connect(t, 0, "app")
		good := openReplica(t, nc, Options{Stream: "unchecked"}, hooks{})
		cfg := good.streamConfig()
		cfg.Name, cfg.Subjects, cfg.DenyDelete = "deletable", []string{Subject("deletable")}, false
		stream, err := good.js.CreateStream(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Stream: "deletable", Timeout: time.Second}
		w := openNode(t, filepath.Join(dir, "deletable-writer.db"), nc, openReplica(t, nc, opts, hooks{lax: true}))
		for _, s := range []string{"d1", "d2", "d3", "d4", "d5"} {
			if err := w.appendEvents("w", s); err != nil {
				t.Fatal(err)
			}
		}
		for _, seq := range []uint64{3, 5} {
			if err := stream.DeleteMsg(context.Background(), seq); err != nil {
				t.Fatal(err)
			}
		}
		rnc := c.connect(t, 1, "app")
		reader := openNode(t, filepath.Join(dir, "deletable-reader.db"), rnc, openReplica(t, rnc, opts, hooks{lax: true}))
		err = reader.store.Update(func(*boltstore.Tx) error { return nil })
		wantIntegrity(t, err, reader, 0, 3)
		// The writer held seq 5, now gone from the stream. It appended it
		// itself: its next catch-up compares its head with the stream
		// once headCheckEvery has passed since its last comparison.
		time.Sleep(headCheckEvery)
		err = w.appendEvents("w", "d6")
		wantIntegrity(t, err, w, 5, 5)
	})
}

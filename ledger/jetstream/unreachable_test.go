package jetstream

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestCatchUpUnreachable: a catch-up whose servers are all down fails,
// once ResolveWithin is over, with boltstore.ErrLogUnreachable, which the
// tools answer as the servers not answering, nothing recorded. (It was
// an error wrapping only "nats: timeout" and "context deadline exceeded":
// the agent was told "the ledger could not commit".)
func TestCatchUpUnreachable(t *testing.T) {
	c := startCluster(t, 1, "always")
	opts := Options{Stream: "unreachable", Replicas: 1, AllowUnreplicated: true, Timeout: 200 * time.Millisecond,
		ResolveWithin: time.Second, LeaderWait: time.Hour}
	dir := t.TempDir()
	anc := c.connect(t, 0, "app")
	a := openNode(t, filepath.Join(dir, "a.db"), anc, openReplica(t, anc, opts, hooks{}))
	if err := a.appendEvents("alice", "before"); err != nil {
		t.Fatal(err)
	}
	// b reads the stream before its first append: it has acknowledged
	// none of its own.
	bnc := c.connect(t, 0, "app")
	b := openNode(t, filepath.Join(dir, "b.db"), bnc, openReplica(t, bnc, opts, hooks{}))
	c.stop(0)
	err := b.appendEvents("bob", "while the servers are down")
	if !errors.Is(err, boltstore.ErrLogUnreachable) || errors.Is(err, boltstore.ErrAppendUnknown) {
		t.Fatalf("append with the servers down: %v; want ErrLogUnreachable (nothing appended)", err)
	}
}

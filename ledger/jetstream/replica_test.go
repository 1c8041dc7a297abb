package jetstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go/jetstream"
)

// streamEvents reads the whole stream through r, independently of any
// node's copy, and checks it is one chain: message i is event i, linking to
// message i-1's hash. It reads up to the last seq the stream's leader
// reports, waiting for the server it reads from if that one lags (e.g.
// just healed from a partition).
func streamEvents(tb testing.TB, r *Replica) []ledger.Event {
	tb.Helper()
	info, err := r.Info(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var events []ledger.Event
	var prev ledger.Hash
	deadline := time.Now().Add(30 * time.Second)
	for uint64(len(events)) < info.State.LastSeq {
		msgs, _, err := r.read(uint64(len(events))+1, readBatch)
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range msgs {
			e, err := ledger.DecodeEvent(m.data)
			if err != nil {
				tb.Fatalf("message %d: %v", m.seq, err)
			}
			if want := uint64(len(events)) + 1; m.seq != want || e.Seq != want || e.Prev != prev {
				tb.Fatalf("message %d (event seq %d) breaks the chain at %d", m.seq, e.Seq, want)
			}
			prev = ledger.LeafHash(m.data)
			events = append(events, e)
		}
		if len(msgs) == 0 {
			if time.Now().After(deadline) {
				tb.Fatalf("read %d of the stream's %d messages: the server read from lags", len(events), info.State.LastSeq)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return events
}

// agents runs perNode appends from each of 3 agents on every node at once:
// an agent's i-th call appends one event, or two for odd i (an atomic
// batch of two). It returns every acknowledged subject.
func agents(t *testing.T, nodes []*node, perAgent int) map[string]bool {
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for n, nd := range nodes {
		for a := range 3 {
			wg.Go(func() {
				for i := range perAgent {
					subjects := []string{fmt.Sprintf("n%d-a%d-%d", n, a, i)}
					if i%2 == 1 {
						subjects = append(subjects, subjects[0]+"b")
					}
					if err := nd.appendEvents(fmt.Sprintf("agent-%d-%d", n, a), subjects...); err != nil {
						t.Errorf("node %d agent %d call %d: %v", n, a, i, err)
						return
					}
					mu.Lock()
					for _, s := range subjects {
						acked[s] = true
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return acked
}

// checkLedger checks the stream and every node against what was
// acknowledged: one unbroken chain, no subject twice, every acknowledged
// subject there, every node's copy at the stream's head with the same root,
// and verifying.
func checkLedger(t *testing.T, nodes []*node, acked map[string]bool, mayHaveMore bool) {
	t.Helper()
	events := streamEvents(t, nodes[0].rep)
	seen := map[string]bool{}
	for _, e := range events {
		if seen[e.Subjects[0]] {
			t.Errorf("%s appended twice", e.Subjects[0])
		}
		seen[e.Subjects[0]] = true
	}
	for s := range acked {
		if !seen[s] {
			t.Errorf("acknowledged %s is not in the stream", s)
		}
	}
	if !mayHaveMore && len(events) != len(acked) {
		t.Errorf("the stream holds %d events, %d were acknowledged", len(events), len(acked))
	}
	var roots []ledger.Hash
	for i, n := range nodes {
		head := n.catchUp(t)
		rep, err := n.store.Verify(context.Background(), boltstore.VerifyOptions{})
		if err != nil || rep.Size != uint64(len(events)) || rep.Head != head.Hash {
			t.Fatalf("node %d: verified %d events (head %v), the stream holds %d: %v", i, rep.Size, rep.Head, len(events), err)
		}
		roots = append(roots, rep.Root)
	}
	for i := range roots {
		if roots[i] != roots[0] {
			t.Errorf("node %d's root %v differs from node 0's %v", i, roots[i], roots[0])
		}
	}
}

// TestNodesShareOneChain: three logbook nodes, each with its own file and
// its own NATS server of a 3-node cluster, append concurrently: one chain,
// every acknowledged append exactly once, the same root everywhere.
func TestNodesShareOneChain(t *testing.T) {
	c := sharedCluster(t)
	sys := c.connect(t, 0, "sys")
	dir := t.TempDir()
	var nodes []*node
	for i := range 3 {
		nc := c.connect(t, i, "app")
		rep := openReplica(t, nc, Options{Stream: "shared", SystemConn: sys}, hooks{})
		nodes = append(nodes, openNode(t, filepath.Join(dir, fmt.Sprintf("node%d.db", i)), nc, rep))
	}
	acked := agents(t, nodes, 20)
	checkLedger(t, nodes, acked, false)
}

// TestUnsyncedCopyAfterAMachineRestart: a node's copy written without
// fsync, found after a machine restart (its marker names another boot), is
// refused as damaged, not used; deleted, it is ingested anew from the
// stream with every acknowledged event.
func TestUnsyncedCopyAfterAMachineRestart(t *testing.T) {
	if !boltstore.NoSyncSupported() {
		t.Skip("no boot id here: copies are always fsynced")
	}
	c := sharedCluster(t)
	nc := c.connect(t, 1, "app")
	rep := openReplica(t, nc, Options{Stream: "restarted"}, hooks{})
	n := openNode(t, filepath.Join(t.TempDir(), "node.db"), nc, rep)
	for i := range 20 {
		if err := n.appendEvents("agent", fmt.Sprintf("s%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// What the disk may hold after the machine stopped: the file as it
	// stands, its marker naming the boot that wrote it.
	img := filepath.Join(t.TempDir(), "node.db")
	b, err := os.ReadFile(n.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(n.path + ".unsynced"); err != nil {
		t.Fatalf("an unsynced copy without its marker: %v", err)
	}
	if err := os.WriteFile(img+".unsynced", []byte("a-boot-before-the-restart\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := boltstore.Options{Create: true, Hold: true, Replica: rep, NoSync: true}
	if _, err := boltstore.Open(img, opts); !errors.Is(err, boltstore.ErrDamaged) {
		t.Fatalf("open a copy left unsynced by a machine restart: %v, want ErrDamaged", err)
	}
	if err := os.Remove(img); err != nil {
		t.Fatal(err)
	}
	again := openNode(t, img, nc, rep)
	head := again.catchUp(t)
	rep2, err := again.store.Verify(context.Background(), boltstore.VerifyOptions{})
	if err != nil || rep2.Size != 20 || rep2.Head != head.Hash {
		t.Errorf("ingested anew: %d events (head %v), %v", rep2.Size, rep2.Head, err)
	}
	seen := map[string]bool{}
	for _, e := range streamEvents(t, rep) {
		seen[e.Subjects[0]] = true
	}
	for i := range 20 {
		if !seen[fmt.Sprintf("s%d", i)] {
			t.Errorf("acknowledged s%d is not in the stream", i)
		}
	}
}

// TestOpenRefusesUnsafeStreams: a stream that could lose or rewrite events,
// or whose sequence is not the ledger's, is refused with the reason.
func TestOpenRefusesUnsafeStreams(t *testing.T) {
	c := sharedCluster(t)
	nc := c.connect(t, 0, "app")
	good := openReplica(t, nc, Options{Stream: "good"}, hooks{})
	cfg := good.streamConfig()
	for _, tc := range []struct {
		name string
		edit func()
	}{
		{"deletes", func() { cfg.DenyDelete = false }},
		{"purges", func() { cfg.DenyPurge = false }},
		{"aged", func() { cfg.MaxAge = 3600e9 }},
		{"capped", func() { cfg.MaxMsgs = 1000 }},
		{"unreplicated", func() { cfg.Replicas = 1 }},
		{"memory", func() { cfg.Storage = 1 }},
		{"not atomic", func() { cfg.AllowAtomicPublish = false }},
		{"sealed", func() { cfg.Sealed = true }},
		{"message size capped", func() { cfg.MaxMsgSize = 1024 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg = good.streamConfig()
			tc.edit()
			if err := good.checkConfig(cfg); !errors.Is(err, ErrStreamConfig) {
				t.Errorf("checkConfig: %v, want ErrStreamConfig", err)
			}
		})
	}
	if _, err := Open(context.Background(), nc, Options{Stream: "absent", Existing: true}); !errors.Is(err, ErrNoStream) {
		t.Errorf("open a stream that does not exist, Existing: %v, want ErrNoStream", err)
	}
	if _, err := Open(context.Background(), nc, Options{Stream: "one", Replicas: 1}); !errors.Is(err, ErrStreamConfig) {
		t.Errorf("1 replica without AllowUnreplicated: %v", err)
	}
	// A stream made by hand without DenyDelete is refused at Open.
	lax := good.streamConfig()
	lax.Name, lax.Subjects, lax.DenyDelete = "lax", []string{Subject("lax")}, false
	if _, err := good.js.CreateStream(context.Background(), lax); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), nc, Options{Stream: "lax"}); !errors.Is(err, ErrStreamConfig) {
		t.Errorf("open a stream allowing deletes: %v, want ErrStreamConfig", err)
	}
	if err := checkState(streamState(2, 5, 4, 0)); !errors.Is(err, ErrStreamConfig) {
		t.Errorf("a stream starting at 2: %v", err)
	}
	if err := checkState(streamState(1, 5, 4, 1)); !errors.Is(err, ErrStreamConfig) {
		t.Errorf("a stream with a gap: %v", err)
	}
	if err := checkState(streamState(1, 5, 5, 0)); err != nil {
		t.Errorf("a whole stream: %v", err)
	}
}

func streamState(first, last, msgs, deleted uint64) jetstream.StreamState {
	return jetstream.StreamState{FirstSeq: first, LastSeq: last, Msgs: msgs, NumDeleted: int(deleted)}
}

// TestOpenOnAFreshCluster: two nodes open the ledger's stream on a cluster
// started a moment before, at the same time, as two logbook servers
// started with their NATS servers do. A cluster electing its JetStream
// leader drops the requests it gets meanwhile (no answer, not an error):
// Open asks again and both open the one stream, where each used to fail
// with "context deadline exceeded" after Timeout.
func TestOpenOnAFreshCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, "always")
	var wg sync.WaitGroup
	reps := make([]*Replica, 2)
	errs := make([]error, 2)
	for i := range reps {
		nc := c.connect(t, i, "app")
		wg.Go(func() {
			reps[i], errs[i] = Open(context.Background(), nc, Options{Stream: "fresh", Logf: t.Logf})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		defer reps[i].Close()
	}
	for i, r := range reps {
		info, err := r.Info(context.Background())
		if err != nil || info.Config.Name != "fresh" || info.Config.Replicas != 3 {
			t.Fatalf("node %d: stream %+v, %v", i, info, err)
		}
	}
}

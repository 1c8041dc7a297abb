package jetstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go"
)

// liveNode is a logbook node that the test closes and reopens while its
// agents run: they hold it shared for each call, the reopen exclusively.
type liveNode struct {
	mu   sync.RWMutex
	n    *node
	opts Options
}

func (l *liveNode) reopen(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.n.store.Close(); err != nil {
		t.Fatal(err)
	}
	l.n = openNode(t, l.n.path, l.n.nc, l.n.rep)
}

// writers runs agents on every node until stop is closed, counting the
// acknowledged appends; an agent whose call fails (a server down past the
// timeouts) goes on with its next call.
type writers struct {
	mu     sync.Mutex
	hist   *history
	acked  map[string]bool
	count  atomic.Int64
	failed atomic.Int64
	byNode []atomic.Int64 // acknowledged appends per node
	wg     sync.WaitGroup
	stop   chan struct{}
	once   sync.Once
}

func startWriters(t *testing.T, nodes []*liveNode, perNode int) *writers {
	w := &writers{hist: newHistory(), acked: map[string]bool{}, stop: make(chan struct{}), byNode: make([]atomic.Int64, len(nodes))}
	for n, l := range nodes {
		for a := range perNode {
			w.wg.Go(func() {
				var lastRead uint64
				for i := 0; ; i++ {
					select {
					case <-w.stop:
						return
					default:
					}
					subjects := []string{fmt.Sprintf("n%d-a%d-%d", n, a, i)}
					if i%3 == 2 {
						subjects = append(subjects, subjects[0]+"b", subjects[0]+"c")
					}
					l.mu.RLock()
					c := call{client: n*perNode + a, subjects: subjects, start: time.Now()}
					c.seq, c.err = l.n.appendSeq(fmt.Sprintf("agent-%d-%d", n, a), subjects...)
					c.end = time.Now()
					var head uint64
					l.n.store.View(func(tx *boltstore.Tx) error { head = tx.Head().Seq; return nil })
					l.mu.RUnlock()
					w.hist.add(c)
					if c.err != nil {
						w.failed.Add(1)
						t.Logf("node %d agent %d call %d: %v", n, a, i, c.err)
						continue
					}
					// The node's copy holds what it acknowledged, and its head
					// never goes back.
					if last := c.seq + uint64(len(subjects)) - 1; head < last || head < lastRead {
						t.Errorf("node %d agent %d read head %d after appending up to %d (read %d before)", n, a, head, last, lastRead)
					}
					lastRead = head
					w.mu.Lock()
					for _, s := range subjects {
						w.acked[s] = true
					}
					w.mu.Unlock()
					w.count.Add(1)
					w.byNode[n].Add(1)
				}
			})
		}
	}
	// A test that fails stops its agents before its nodes close.
	t.Cleanup(w.halt)
	return w
}

// halt stops the agents and waits for them; it may be called again.
func (w *writers) halt() {
	w.once.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// await waits until more appends than now+n were acknowledged, saying
// where the stream's leadership stands if they do not come.
func (w *writers) await(t *testing.T, n int64, nodes []*liveNode) {
	t.Helper()
	target := w.count.Load() + n
	eventually(t, 60*time.Second, func() error {
		got := w.count.Load()
		if got >= target {
			return nil
		}
		var views []string
		for i, l := range nodes {
			info, err := l.n.rep.Info(context.Background())
			if err != nil {
				views = append(views, fmt.Sprintf("node %d: %v", i, err))
				continue
			}
			var peers []string
			for _, p := range info.Cluster.Replicas {
				peers = append(peers, fmt.Sprintf("%s current=%v offline=%v lag=%d", p.Name, p.Current, p.Offline, p.Lag))
			}
			views = append(views, fmt.Sprintf("node %d: leader %s last %d replicas %v", i, info.Cluster.Leader, info.State.LastSeq, peers))
		}
		return fmt.Errorf("%d appends acknowledged, waiting for %d; %v", got, target, views)
	})
}

// awaitEach waits until every node acknowledged n more appends than now,
// and returns how long each took.
func (w *writers) awaitEach(t *testing.T, n int64, nodes []*liveNode) []time.Duration {
	t.Helper()
	start := time.Now()
	targets := make([]int64, len(w.byNode))
	for i := range w.byNode {
		targets[i] = w.byNode[i].Load() + n
	}
	took := make([]time.Duration, len(w.byNode))
	eventually(t, 60*time.Second, func() error {
		var waiting []string
		for i := range w.byNode {
			if took[i] > 0 {
				continue
			}
			if got := w.byNode[i].Load(); got < targets[i] {
				waiting = append(waiting, fmt.Sprintf("node %d: %d appends acknowledged, waiting for %d (connected to %s)",
					i, got, targets[i], nodes[i].n.nc.ConnectedServerName()))
				continue
			}
			took[i] = time.Since(start).Round(time.Millisecond)
		}
		if len(waiting) > 0 {
			return fmt.Errorf("%v", waiting)
		}
		return nil
	})
	return took
}

// leader is the index of the server leading the stream.
func leader(t *testing.T, c *cluster, r *Replica) int {
	var i int
	eventually(t, 30*time.Second, func() error {
		info, err := r.Info(context.Background())
		if err != nil {
			return err
		}
		if i = c.index(info.Cluster.Leader); i < 0 {
			return fmt.Errorf("no leader")
		}
		return nil
	})
	return i
}

// TestFaultsLoseNothing: agents on three logbook nodes append while the
// stream's leader server is shut down and restarted, then another server,
// then the leader's server is partitioned from the others (its routes
// dropped) and healed, a node's connection to its server is cut with
// appends in flight, and a logbook node is closed and reopened: every
// acknowledged append is in the stream exactly once, nothing is there
// twice, every node ends with the same verified chain, and the history is
// linearizable. While the partition lasts every node appends again (a node
// whose connection is held by the partitioned server leaves it), and so
// after it heals (the partition is left out under the race detector: see
// the comment in the round). LOGBOOK_SOAK=1 runs five rounds.
func TestFaultsLoseNothing(t *testing.T) {
	rounds := 1
	if os.Getenv("LOGBOOK_SOAK") != "" {
		rounds = 5
	}
	c := startCluster(t, 3, "always")
	dir := t.TempDir()
	var quiet atomic.Bool // no logging once the test is over
	t.Cleanup(func() { quiet.Store(true) })
	opts := Options{Stream: "faults", ResolveWithin: 20 * time.Second, LeaderWait: 5 * time.Second, Logf: func(format string, args ...any) {
		if !quiet.Load() {
			t.Logf(format, args...)
		}
	}}
	var nodes []*liveNode
	// Node 2 reaches its server through a proxy the test cuts: its
	// appends in flight then lose their answers.
	cable := startProxy(t, fmt.Sprintf("127.0.0.1:%d", c.ports[2]))
	// LOGBOOK_TRACE=1 logs what each node's replica and connection do,
	// in ms since the last fault began.
	var since atomic.Int64
	since.Store(time.Now().UnixNano())
	mark := func() { since.Store(time.Now().UnixNano()) }
	for i := range 3 {
		nc := c.connect(t, i, "app")
		if i == 2 {
			nc = c.connectVia(t, cable.url(), "app")
		}
		var h hooks
		if os.Getenv("LOGBOOK_TRACE") != "" {
			h.trace = func(format string, args ...any) {
				if !quiet.Load() {
					t.Logf("%6dms node %d: %s", time.Since(time.Unix(0, since.Load())).Milliseconds(), i, fmt.Sprintf(format, args...))
				}
			}
			nc.SetDisconnectErrHandler(func(_ *nats.Conn, err error) { h.trace("disconnected: %v", err) })
			nc.SetReconnectHandler(func(nc *nats.Conn) { h.trace("reconnected to %s", nc.ConnectedServerName()) })
		}
		rep := openReplica(t, nc, opts, h)
		nodes = append(nodes, &liveNode{n: openNode(t, filepath.Join(dir, fmt.Sprintf("node%d.db", i)), nc, rep), opts: opts})
	}
	w := startWriters(t, nodes, 2)
	w.await(t, 30, nodes)
	for round := range rounds {
		lead := leader(t, c, nodes[0].n.rep)
		t.Logf("round %d: stopping the stream leader n%d", round, lead)
		c.stop(lead)
		w.await(t, 30, nodes)
		c.start(lead)
		w.await(t, 30, nodes)
		other := (lead + 1 + round%2) % 3
		t.Logf("round %d: stopping n%d", round, other)
		c.stop(other)
		w.await(t, 30, nodes)
		c.start(other)
		w.await(t, 30, nodes)
		if raceDetector {
			// nats-server 2.15.2 reads its options unlocked while a reload
			// (how the test drops routes) replaces them: stream.go:6365
			// (s.opts.MaxPending, a direct get) vs server.go:1224
			// (setOpts). The race detector reports the server's race.
			t.Logf("round %d: no partition under the race detector (nats-server's own race on reload)", round)
		} else {
			// After the restarts, clients have reconnected wherever they
			// could: nodes held by the partitioned server must leave it.
			lead = leader(t, c, nodes[0].n.rep)
			t.Logf("round %d: partitioning the stream leader n%d from the others", round, lead)
			// A node that only reads (Follow), held by the server about
			// to be cut off: its reads are answered there, from the stale
			// copy; only Follow's look at the leader can move it.
			cut := fmt.Sprintf("n%d", lead)
			rnc := c.connect(t, lead, "app")
			reader := openNode(t, filepath.Join(dir, fmt.Sprintf("reader%d.db", round)), rnc, openReplica(t, rnc, opts, hooks{}))
			fctx, stopFollow := context.WithCancel(context.Background())
			followed := make(chan error, 1)
			go func() { followed <- reader.rep.Follow(fctx, reader.store, time.Second, nil) }()
			partitioned := time.Now()
			mark()
			committed := c.lastSeq(lead, "APP", "faults")
			c.partition(t, lead)
			readerLeft := make(chan time.Duration, 1)
			go func() {
				for time.Since(partitioned) < 2*time.Minute {
					if name := rnc.ConnectedServerName(); name != "" && name != cut {
						readerLeft <- time.Since(partitioned)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				readerLeft <- 0
			}()
			type times struct{ elected, applied time.Duration }
			leaderAt := make(chan times, 1)
			go func() {
				e, a := c.awaitLeader("APP", "faults", lead, committed, time.Minute, partitioned)
				leaderAt <- times{e, a}
			}()
			took := w.awaitEach(t, 5, nodes)
			at := <-leaderAt
			t.Logf("round %d: the majority elected a leader %v after the partition, which held seq %d (the old leader's last) after %v; every node appended again within %v",
				round, at.elected.Round(time.Millisecond), committed, at.applied.Round(time.Millisecond), took)
			left := <-readerLeft
			if left == 0 {
				t.Fatalf("round %d: the reading node stayed on the cut-off server %s", round, cut)
			}
			// Once moved, it follows what the majority appends.
			var target uint64
			nodes[0].n.store.View(func(tx *boltstore.Tx) error { target = tx.Head().Seq; return nil })
			eventually(t, 30*time.Second, func() error {
				var seq uint64
				reader.store.View(func(tx *boltstore.Tx) error { seq = tx.Head().Seq; return nil })
				if seq < target {
					return fmt.Errorf("the reading node holds seq %d, node 0 had %d", seq, target)
				}
				return nil
			})
			t.Logf("round %d: the reading node left the cut-off server %v after the partition and follows the majority", round, left.Round(time.Millisecond))
			stopFollow()
			if err := <-followed; !errors.Is(err, context.Canceled) {
				t.Errorf("round %d: the reading node's Follow ended with %v", round, err)
			}
			mark()
			c.heal(t)
			t.Logf("round %d: every node appends again after the heal, within %v", round, w.awaitEach(t, 5, nodes))
		}
		t.Logf("round %d: cutting logbook node 2's connection", round)
		cable.cut()
		w.await(t, 30, nodes)
		t.Logf("round %d: reopening logbook node %d", round, round%3)
		nodes[round%3].reopen(t)
		w.await(t, 30, nodes)
	}
	w.halt()
	c.awaitSettled(t, "APP", "faults")
	t.Logf("%d appends acknowledged, %d failed", w.count.Load(), w.failed.Load())
	var plain []*node
	for _, l := range nodes {
		plain = append(plain, l.n)
	}
	// A failed append's events may have landed (its outcome unknown to
	// the caller); none may be there twice, and every acknowledged one is.
	checkLedger(t, plain, w.acked, true)
	w.hist.check(t, streamEvents(t, plain[0].rep))
}

// TestCallsRideOutTheirServersFault: the server a node is connected to
// stops answering with its connection left open (as one SIGSTOPped does)
// while another node appends. The node's next calls, whose catch-up must
// read what the other appended, wait for the connection to move to another
// server (the leader out of reach for LeaderWait) and are recorded, each
// once. They were refused before ("catch up with stream …: no server
// served them within 1s", answered ERR_STORAGE "nothing of it was
// recorded") once Options.Timeout passed, before LeaderWait could move the
// connection, though the cluster served the stream all along. Then the
// server it moved to is shut down while the other node appends: its calls
// wait for the reconnect, and are recorded too.
func TestCallsRideOutTheirServersFault(t *testing.T) {
	c := startCluster(t, 3, "always")
	dir := t.TempDir()
	var quiet atomic.Bool
	t.Cleanup(func() { quiet.Store(true) })
	opts := Options{Stream: "stalled", Timeout: time.Second, LeaderWait: 3 * time.Second, Logf: func(format string, args ...any) {
		if !quiet.Load() {
			t.Logf(format, args...)
		}
	}}
	cable := startProxy(t, fmt.Sprintf("127.0.0.1:%d", c.ports[0]))
	anc := c.connectVia(t, cable.url(), "app")
	var h hooks
	if os.Getenv("LOGBOOK_TRACE") != "" {
		h.trace = func(format string, args ...any) {
			if !quiet.Load() {
				t.Logf(format, args...)
			}
		}
		anc.SetDisconnectErrHandler(func(_ *nats.Conn, err error) { h.trace("disconnected: %v", err) })
		anc.SetReconnectHandler(func(nc *nats.Conn) { h.trace("reconnected to %s", nc.ConnectedServerName()) })
	}
	a := openNode(t, filepath.Join(dir, "a.db"), anc, openReplica(t, anc, opts, h))
	bnc := c.connect(t, 1, "app")
	b := openNode(t, filepath.Join(dir, "b.db"), bnc, openReplica(t, bnc, opts, hooks{}))
	acked := map[string]bool{}
	for _, s := range []string{"a0", "b0"} {
		n := a
		if s[0] == 'b' {
			n = b
		}
		if err := n.appendEvents(s, s); err != nil {
			t.Fatal(err)
		}
		acked[s] = true
	}
	// The node's head is then not its own last append: its next commit's
	// catch-up reads the stream (it skips reading only after its own).
	a.catchUp(t)
	cable.stall()
	stalled := time.Now()
	for i := 1; i <= 3; i++ {
		s := fmt.Sprintf("b%d", i)
		if err := b.appendEvents("b", s); err != nil {
			t.Fatal(err)
		}
		acked[s] = true
	}
	calls := func(what string, from int) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = a.appendEvents("a", fmt.Sprintf("a%d", from+i)) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("call a%d on the node whose server %s: %v", from+i, what, err)
				continue
			}
			acked[fmt.Sprintf("a%d", from+i)] = true
		}
	}
	calls("stalled", 1)
	t.Logf("the node's calls were answered %v after its server stalled; it reconnected to %s (not through the stalled proxy)", time.Since(stalled).Round(time.Millisecond), anc.ConnectedServerName())
	cable.resume()
	// Its server shut down while the other node appends: the node
	// reconnects elsewhere, its calls wait for it.
	a.catchUp(t)
	c.stop(c.index(anc.ConnectedServerName()))
	stopped := time.Now()
	for i := 4; i <= 6; i++ {
		s := fmt.Sprintf("b%d", i)
		if err := b.appendEvents("b", s); err != nil {
			t.Fatal(err)
		}
		acked[s] = true
	}
	calls("was shut down", 5)
	t.Logf("the node's calls were answered %v after its server was shut down; it moved to %s", time.Since(stopped).Round(time.Millisecond), anc.ConnectedServerName())
	checkLedger(t, []*node{a, b}, acked, false)
}

// TestCatchUpMovesOffAStalledServer: a catch-up whose node's server stalls
// (as SIGSTOP does: the connection stays open, nothing is answered) moves
// the connection once the stream has been out of reach through it for
// LeaderWait, counted from its first unanswered read. Its reads went
// uncounted: the run began with the leader get after the first read's
// Timeout, and the connection moved a Timeout late (after 17s with the
// defaults, now 11s; in chaos runs a node with no calls of its own stayed
// behind the stream through the whole of a 17-18s SIGSTOP of a NATS
// server). Here (Timeout 8s, LeaderWait 7.5s, ResolveWithin 14s: the
// connection moves after one unanswered read, about 8s, where it moved
// after two, 16s, past ResolveWithin; 6s of margin for a loaded machine,
// 2s the other way) the catch-up gave up before: "no server served them
// within …", nothing appended.
func TestCatchUpMovesOffAStalledServer(t *testing.T) {
	c := startCluster(t, 3, "always")
	dir := t.TempDir()
	opts := Options{Stream: "stalledread", Timeout: 8 * time.Second, LeaderWait: 7500 * time.Millisecond, ResolveWithin: 14 * time.Second}
	cable := startProxy(t, fmt.Sprintf("127.0.0.1:%d", c.ports[0]))
	anc := c.connectVia(t, cable.url(), "app")
	a := openNode(t, filepath.Join(dir, "a.db"), anc, openReplica(t, anc, opts, hooks{}))
	bnc := c.connect(t, 1, "app")
	b := openNode(t, filepath.Join(dir, "b.db"), bnc, openReplica(t, bnc, opts, hooks{}))
	if err := b.appendEvents("b", "b0"); err != nil {
		t.Fatal(err)
	}
	a.catchUp(t)
	cable.stall()
	if err := b.appendEvents("b", "b1"); err != nil {
		t.Fatal(err)
	}
	// As Follow does, having seen the stream's last seq in its info.
	a.rep.noteKnown(2)
	if err := a.store.Update(func(*boltstore.Tx) error { return nil }); err != nil {
		t.Fatalf("catch-up through a stalled server: %v", err)
	}
	if got := a.catchUp(t).Seq; got != 2 {
		t.Errorf("the node holds %d events, the stream 2", got)
	}
	if anc.ConnectedUrl() == cable.url() {
		t.Errorf("the node is still connected through the stalled server")
	}
}

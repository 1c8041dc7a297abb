package jetstream

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTurns: a node whose appends were refused turnAfter times in a row
// for others' asks the other nodes for a turn (once, not at each refusal
// before), and a node asked waits before its next catch-up and then reads
// the stream, though its own append was the last one (it would otherwise
// decide at once, needing no read, and the refused node, which must read
// and fold first, could lose to it for as long as it stays busy). Here the
// refused node appends while the asked one waits: its event lands first,
// and the asked node's after it.
func TestTurns(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	var busy, refused *node
	var yields []time.Duration
	bnc, rnc := c.connect(t, 0, "app"), c.connect(t, 1, "app")
	busy = openNode(t, filepath.Join(dir, "busy.db"), bnc, openReplica(t, bnc, Options{Stream: "turns"}, hooks{
		sleep: func(d time.Duration) {
			yields = append(yields, d)
			if err := refused.appendEvents("refused", "r1"); err != nil {
				t.Error(err)
			}
		},
	}))
	refused = openNode(t, filepath.Join(dir, "refused.db"), rnc, openReplica(t, rnc, Options{Stream: "turns"}, hooks{}))
	if err := busy.appendEvents("busy", "b1"); err != nil {
		t.Fatal(err)
	}
	// What the refused node sends on the turn subject, in order, with a
	// marker after: the marker comes first while it asked for nothing.
	wnc := c.connect(t, 2, "app")
	watch, err := wnc.SubscribeSync(turnSubject("turns"))
	if err != nil {
		t.Fatal(err)
	}
	if err := wnc.Flush(); err != nil {
		t.Fatal(err)
	}
	next := func() string {
		t.Helper()
		m, err := watch.NextMsg(time.Minute) // a hang bound
		if err != nil {
			t.Fatal(err)
		}
		return string(m.Data)
	}
	marker := func() {
		t.Helper()
		if err := refused.nc.Publish(turnSubject("turns"), []byte("marker")); err != nil {
			t.Fatal(err)
		}
	}
	// The watcher's interest reaches the refused node's server through
	// the cluster's routes a moment after the flush, and what is published
	// there before is dropped: send until a message comes back, then skip
	// those still in flight (one publisher's messages arrive in order).
	eventually(t, time.Minute, func() error {
		if err := refused.nc.Publish(turnSubject("turns"), []byte("sync")); err != nil {
			return err
		}
		_, err := watch.NextMsg(100 * time.Millisecond)
		return err
	})
	if err := refused.nc.Publish(turnSubject("turns"), []byte("synced")); err != nil {
		t.Fatal(err)
	}
	for next() != "synced" {
	}
	for range turnAfter - 1 {
		refused.rep.refused()
	}
	marker()
	if got := next(); got != "marker" {
		t.Fatalf("asked for a turn after %d refusals: %q", turnAfter-1, got)
	}
	busy.rep.yieldTo.Store(0) // the marker, taken for a request
	refused.rep.refused()
	if got := next(); got != refused.rep.id {
		t.Fatalf("after %d refusals the turn subject carries %q, want the node's request", turnAfter, got)
	}
	eventually(t, time.Minute, func() error {
		if busy.rep.yieldTo.Load() == 0 {
			return errors.New("the busy node did not get the request")
		}
		return nil
	})
	if err := busy.appendEvents("busy", "b2"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range streamEvents(t, busy.rep) {
		got = append(got, e.Subjects[0])
	}
	if want := "[b1 r1 b2]"; fmt.Sprint(got) != want || len(yields) != 1 || yields[0] > turnFor {
		t.Errorf("the stream holds %v, want %s; the busy node waited %v, want once, at most %v", got, want, yields, turnFor)
	}
}

// TestTurnsDenied: a node whose NATS user may neither publish nor
// subscribe on the turn subject opens with a warning naming it, and its
// calls go on, a request for a turn it sends included (the server's
// refusal is an asynchronous error, nothing a call sees). It went without
// turns unseen before: no warning. A node allowed the subject logs none.
func TestTurnsDenied(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	var mu sync.Mutex
	var warnings []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, fmt.Sprintf(format, args...))
	}
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		w := warnings
		warnings = nil
		return w
	}
	opts := Options{Stream: "turnsdenied", Logf: logf}
	anc := c.connect(t, 0, "app")
	allowed := openNode(t, filepath.Join(dir, "allowed.db"), anc, openReplica(t, anc, opts, hooks{}))
	for _, w := range took() {
		if strings.Contains(w, "takes no turns") {
			t.Errorf("a node allowed the turn subject warned: %s", w)
		}
	}
	dnc := c.connect(t, 1, "noturn")
	denied := openNode(t, filepath.Join(dir, "denied.db"), dnc, openReplica(t, dnc, opts, hooks{}))
	warned := false
	for _, w := range took() {
		warned = warned || strings.Contains(w, "takes no turns") && strings.Contains(w, turnSubject("turnsdenied"))
	}
	if !warned {
		t.Errorf("a node denied the turn subject did not warn of it")
	}
	for range turnAfter {
		denied.rep.refused()
	}
	acked := map[string]bool{}
	for i := range 3 {
		for _, n := range []*node{allowed, denied} {
			s := fmt.Sprintf("%s%d", filepath.Base(n.path), i)
			if err := n.appendEvents("agent", s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			acked[s] = true
		}
	}
	checkLedger(t, []*node{allowed, denied}, acked, false)
}

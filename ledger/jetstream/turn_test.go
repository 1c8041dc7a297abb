package jetstream

import (
	"errors"
	"fmt"
	"path/filepath"
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
		m, err := watch.NextMsg(10 * time.Second)
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
	eventually(t, 10*time.Second, func() error {
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

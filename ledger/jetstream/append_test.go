package jetstream

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestRefusedForAPendingAppend: an append refused for a last sequence past
// its head, whose message the leader does not serve yet (another node's
// append it proposed and commits a quorum's round trip later), looks again
// after a millisecond, not 20: a busy neighbour, which needs no read before
// its own appends, appended 30-40 events during the 20ms, and the refused
// node, a step behind at every try, lost all of the store's retries under
// load. Here the neighbour appends one event per millisecond the refused
// node waits (its proposed one first): the node's event must land right
// after that one. Before, 20 of the neighbour's landed first.
func TestRefusedForAPendingAppend(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	nc := c.connect(t, 0, "app")
	other := openNode(t, filepath.Join(dir, "other.db"), c.connect(t, 1, "app"),
		openReplica(t, c.connect(t, 1, "app"), Options{Stream: "pending"}, hooks{}))
	if err := other.appendEvents("other", "o1"); err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	refused := false
	rep := openReplica(t, nc, Options{Stream: "pending"}, hooks{
		// The leader proposed the neighbour's next event: seq 2.
		refuse: func(attempt int, expected uint64) error {
			if refused {
				return nil
			}
			refused = true
			return &apiError{code: codeWrongLastSeq, desc: fmt.Sprintf("wrong last sequence: %d", expected+1)}
		},
		sleep: func(d time.Duration) {
			waits = append(waits, d)
			for i := range max(1, int(d/time.Millisecond)) {
				if err := other.appendEvents("other", fmt.Sprintf("o%d", len(waits)*1000+i)); err != nil {
					t.Error(err)
				}
			}
		},
	})
	n := openNode(t, filepath.Join(dir, "node.db"), nc, rep)
	if err := n.appendEvents("n", "n"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range streamEvents(t, rep) {
		got = append(got, e.Subjects[0])
	}
	if want := "[o1 o1000 n]"; fmt.Sprint(got) != want {
		t.Errorf("the stream holds %v, want %s (waits %v)", got, want, waits)
	}
}

// TestRetryWait: an append refused for another node's pending append looks
// again from 1ms on, other unresolved outcomes from 20ms on; both double up
// to a second (a leader cut off from the others refuses so for 10-20s).
func TestRetryWait(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		pending bool
		want    time.Duration
	}{
		{0, true, time.Millisecond},
		{1, true, 2 * time.Millisecond},
		{4, true, 16 * time.Millisecond},
		{10, true, time.Second},
		{1000, true, time.Second},
		{0, false, 20 * time.Millisecond},
		{1, false, 40 * time.Millisecond},
		{5, false, 640 * time.Millisecond},
		{6, false, time.Second},
		{1000, false, time.Second},
	} {
		if got := retryWait(tc.attempt, tc.pending); got != tc.want {
			t.Errorf("retryWait(%d, %v) = %v, want %v", tc.attempt, tc.pending, got, tc.want)
		}
	}
}

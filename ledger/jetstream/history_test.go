package jetstream

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/logbook-dev/logbook/ledger"
)

// call is one client operation: an Update appending one event per subject.
type call struct {
	client     int
	subjects   []string
	start, end time.Time
	seq        uint64 // the first event's seq, if acknowledged
	err        error
}

// history records every call of a run.
type history struct {
	mu     sync.Mutex
	origin time.Time
	calls  []call
}

func newHistory() *history { return &history{origin: time.Now()} }

func (h *history) add(c call) {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
}

// ledgerModel is the ledger as a sequential object: its state the number of
// events; an append of k events returns the seq of its first, the state
// plus one, and grows the state by k.
var ledgerModel = porcupine.Model{
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		n, k, seq := state.(uint64), input.(uint64), output.(uint64)
		return seq == n+1, n + k
	},
}

// check checks the history against the stream's events: an acknowledged
// call's events are at the seq it was told, in order; a failed call's are
// either all there or none (then it had no effect and leaves the history);
// and the whole is linearizable against ledgerModel — an append that
// finished before another started has the smaller seq.
func (h *history) check(t *testing.T, events []ledger.Event) {
	t.Helper()
	at := map[string]uint64{}
	for _, e := range events {
		at[e.Subjects[0]] = e.Seq
	}
	var ops []porcupine.Operation
	for _, c := range h.calls {
		seq, landed := at[c.subjects[0]]
		for i, s := range c.subjects {
			if got, ok := at[s]; ok != landed || (ok && got != seq+uint64(i)) {
				t.Errorf("call %v: event %s at seq %d (present %v), want seq %d with the call's first (present %v)", c.subjects, s, got, ok, seq+uint64(i), landed)
			}
		}
		ret := c.end.Sub(h.origin).Nanoseconds()
		switch {
		case c.err == nil && seq != c.seq:
			t.Errorf("call %v was told seq %d, the stream holds it at %d", c.subjects, c.seq, seq)
		case c.err != nil && !landed:
			continue // no effect
		case c.err != nil:
			ret = math.MaxInt64 // took effect at some point after its call
		}
		ops = append(ops, porcupine.Operation{ClientId: c.client, Input: uint64(len(c.subjects)),
			Call: c.start.Sub(h.origin).Nanoseconds(), Output: seq, Return: ret})
	}
	if res := porcupine.CheckOperationsTimeout(ledgerModel, ops, 30*time.Second); res != porcupine.Ok {
		t.Errorf("the history of %d calls is not linearizable: %v", len(ops), res)
	}
}

package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/domain"
)

// TestTreeWeightCoversTheTree: what a call's arguments weigh against the
// process's bound is at least what their tree holds, for the shapes that
// hold the most values for their bytes.
func TestTreeWeightCoversTheTree(t *testing.T) {
	var members strings.Builder
	for i := range domain.MaxValues - 10 {
		fmt.Fprintf(&members, `"%d":0,`, i)
	}
	for _, in := range []string{
		`{"labels":[` + strings.Repeat(`0,`, domain.MaxValues-10) + `0]}`,
		`{"labels":[` + strings.Repeat(`[],`, domain.MaxValues-10) + `[]]}`,
		`{"m":{` + members.String() + `"x":0}}`,
		`{"labels":[` + strings.Repeat(`"abcdefghijklmnopqrstuvwxyz",`, domain.MaxValues-10) + `""]}`,
		`{"title":"` + strings.Repeat("é", 100000) + `"}`,
	} {
		raw := []byte(in)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a := domain.ParseArgs(raw)
		runtime.GC()
		runtime.ReadMemStats(&after)
		held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		runtime.KeepAlive(a)
		if w := treeWeight(len(raw)); w < held {
			t.Errorf("%.30s… (%d bytes): weighs %d, its tree holds %d", in, len(raw), w, held)
		}
	}
}

// TestTreesInFlightBounded: a call waits for room for its arguments' tree
// within the process's bound (parsing), and runs once there is.
func TestTreesInFlightBounded(t *testing.T) {
	h := newHarness(t, Options{})
	ctx := context.Background()
	if err := h.svc.parsing.Acquire(ctx, maxParsing); err != nil { // all of it
		t.Fatal(err)
	}
	done := make(chan outcome, 1)
	go func() { done <- h.do("task_create", json.RawMessage(`{"title":"waits","project":"core"}`)) }()
	select {
	case o := <-done:
		t.Fatalf("a call ran with no room for its arguments: %s", o.Reply)
	case <-time.After(200 * time.Millisecond):
	}
	h.svc.parsing.Release(maxParsing)
	if o := <-done; o.Code != "OK" {
		t.Fatalf("the call, once there was room: %s %s", o.Code, o.Reply)
	}
	if !h.svc.parsing.TryAcquire(maxParsing) {
		t.Fatal("the call kept its room after its answer")
	}
	h.svc.parsing.Release(maxParsing)
}

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
// within its lane of the process's bound, and runs once there is; a small
// call never waits behind large ones.
func TestTreesInFlightBounded(t *testing.T) {
	h := newHarness(t, Options{})
	ctx := context.Background()
	small, large := h.svc.trees.small, h.svc.trees.large
	if err := small.Acquire(ctx, smallTrees); err != nil { // all of it
		t.Fatal(err)
	}
	done := make(chan outcome, 1)
	go func() { done <- h.do("task_create", json.RawMessage(`{"title":"waits","project":"core"}`)) }()
	select {
	case o := <-done:
		t.Fatalf("a call ran with no room for its arguments: %s", o.Reply)
	case <-time.After(200 * time.Millisecond):
	}
	small.Release(smallTrees)
	if o := <-done; o.Code != "OK" {
		t.Fatalf("the call, once there was room: %s %s", o.Code, o.Reply)
	}
	// The large lane full, and a large call waiting in it: a small call
	// runs at once.
	if err := large.Acquire(ctx, maxParsing-smallTrees); err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`{"title":"big","project":"core","labels":[` + strings.Repeat(`0,`, 20000) + `0]}`)
	go func() { done <- h.do("task_create", big) }()
	small1 := make(chan outcome, 1)
	go func() { small1 <- h.do("task_create", json.RawMessage(`{"title":"small","project":"core"}`)) }()
	select {
	case o := <-small1:
		if o.Code != "OK" {
			t.Fatalf("a small call: %s %s", o.Code, o.Reply)
		}
	case <-time.After(time.Minute):
		t.Fatal("a small call waits behind the full large lane")
	}
	large.Release(maxParsing - smallTrees)
	if o := <-done; o.Code != "ERR_INVALID_INPUT" {
		t.Fatalf("the large call: %s %s", o.Code, o.Reply)
	}
	if !small.TryAcquire(smallTrees) || !large.TryAcquire(maxParsing-smallTrees) {
		t.Fatal("a call kept its room after its answer")
	}
}

// TestPanickingRulesRecorded: a panic of the domain's rules, which are
// checked before the commit, is the call's internal error, recorded as
// one (the harness checks one tool.called a call at its end), as when
// they ran inside the commit.
func TestPanickingRulesRecorded(t *testing.T) {
	h := newHarness(t, Options{})
	rules := &domain.Command{Name: "broken", Fields: []domain.Field{{Name: "x", Rule: domain.Rule{Kind: domain.String, Pattern: "("}}}}
	type in struct {
		X string `json:"x"`
	}
	cmd := command(rules, false, func(*Service, *Tx, in) (struct{}, error) { return struct{}{}, nil })
	if o := h.doCall(Call{Name: "broken", Command: cmd, Args: json.RawMessage(`{"x":"a"}`)}); o.Code != "ERR_INTERNAL" {
		t.Fatalf("a call whose rules panic: %s %s", o.Code, o.Reply)
	}
	if calls := h.toolCalls(); len(calls) != 1 || calls[0].P.Outcome != "ERR_INTERNAL" {
		t.Fatalf("recorded: %+v", calls)
	}
}

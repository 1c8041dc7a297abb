package commands

import (
	"fmt"
	"testing"

	"github.com/logbook-dev/logbook/domain"
)

func TestTaskLifecycle(t *testing.T) {
	h := newHarness(t, Options{Agent: "agent-a"})
	created := h.call("task_create", map[string]any{"title": "Write parser", "project": "core", "labels": []string{"a", "b", "a"}}, "OK")
	if created["task_id"] != "T-0001" || created["status"] != "backlog" || created["created_by"] != "agent-a" || created["sequence"] != 1.0 {
		t.Fatalf("create = %v", created)
	}
	got := h.call("task_get", map[string]any{"task_id": "T-0001"}, "OK")
	if fmt.Sprint(got["labels"]) != "[a b]" || got["priority"] != "normal" || got["assignee"] != "unassigned" {
		t.Fatalf("get = %v", got)
	}
	for _, st := range []string{"todo", "in_progress", "review"} {
		h.call("task_update", map[string]any{"task_id": "T-0001", "status": st}, "OK")
	}
	h.call("task_update", map[string]any{"task_id": "T-0001", "status": "done"}, "ERR_WRITEBACK_REQUIRED")
	h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "decision", "content": "use a table"}, "OK")
	done := h.call("task_update", map[string]any{"task_id": "T-0001", "status": "done"}, "OK")
	if done["progress"] != 100.0 || done["previous_status"] != "review" {
		t.Fatalf("done = %v", done)
	}
	h.call("task_update", map[string]any{"task_id": "T-0001", "title": "x"}, "ERR_TASK_CLOSED")
}

func TestEveryTransition(t *testing.T) {
	states := []string{"backlog", "todo", "in_progress", "blocked", "review", "done", "cancelled"}
	// path reaches each state from backlog.
	path := map[string][]string{
		"backlog": {}, "todo": {"todo"}, "in_progress": {"todo", "in_progress"},
		"blocked": {"todo", "blocked"}, "review": {"todo", "in_progress", "review"},
	}
	h := newHarness(t, Options{})
	for _, from := range states[:5] {
		for _, to := range states {
			id := h.call("task_create", map[string]any{"title": from + "→" + to, "project": "sm"}, "OK")["task_id"]
			h.call("thought_record", map[string]any{"task_id": id, "type": "plan", "content": "p"}, "OK")
			for _, st := range path[from] {
				args := map[string]any{"task_id": id, "status": st}
				if st == "blocked" {
					args["blocked_reason"] = "waiting"
				}
				h.call("task_update", args, "OK")
			}
			args := map[string]any{"task_id": id, "status": to}
			if to == "blocked" {
				args["blocked_reason"] = "waiting"
			}
			want := "ERR_INVALID_TRANSITION"
			if from == to || domain.CanTransition(from, to) {
				want = "OK"
			}
			before := h.head()
			h.call("task_update", args, want)
			if want != "OK" && h.head() != before+1 {
				t.Errorf("%s→%s: rejected update appended %d events, want only tool.called", from, to, h.head()-before)
			}
		}
	}
}

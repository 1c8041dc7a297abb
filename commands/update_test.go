package commands

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// contractTransitions is CONTRACT.md §3's state machine, written out again
// (not taken from the code under test).
var contractTransitions = map[string][]string{
	"backlog":     {"todo", "cancelled"},
	"todo":        {"in_progress", "blocked", "cancelled"},
	"in_progress": {"review", "blocked", "cancelled"},
	"blocked":     {"todo", "in_progress", "cancelled"},
	"review":      {"done", "backlog", "blocked", "cancelled"},
}

var allStates = []string{"backlog", "todo", "in_progress", "blocked", "review", "done", "cancelled"}

// pathTo walks a new task from backlog to each state.
var pathTo = map[string][]string{
	"backlog": {}, "todo": {"todo"}, "in_progress": {"todo", "in_progress"}, "blocked": {"todo", "blocked"},
	"review": {"todo", "in_progress", "review"}, "done": {"todo", "in_progress", "review", "done"}, "cancelled": {"cancelled"},
}

func statusArgs(id any, status string) map[string]any {
	args := map[string]any{"task_id": id, "status": status}
	if status == "blocked" {
		args["blocked_reason"] = "waiting on review"
	}
	return args
}

// TestTransitionTable tries every (from, to) pair, terminal states
// included, against the contract's table, with the error details.
func TestTransitionTable(t *testing.T) {
	h := newHarness(t, Options{})
	for _, from := range allStates {
		for _, to := range allStates {
			t.Run(from+"→"+to, func(t *testing.T) {
				id := h.call("task_create", map[string]any{"title": from + " to " + to, "project": "sm"}, "OK")["task_id"]
				h.call("thought_record", map[string]any{"task_id": id, "type": "plan", "content": "p"}, "OK")
				for _, st := range pathTo[from] {
					h.call("task_update", statusArgs(id, st), "OK")
				}
				before := h.call("task_get", map[string]any{"task_id": id}, "OK")
				head, state := h.head(), h.stateFingerprint()
				o := h.do("task_update", statusArgs(id, to))
				switch {
				case from == "done" || from == "cancelled":
					if o.Code != "ERR_TASK_CLOSED" {
						t.Fatalf("got %s, want ERR_TASK_CLOSED", o.Code)
					}
					if got, want := contractDetails(o.Err), map[string]any{"task_id": id, "status": from}; !reflect.DeepEqual(got, want) {
						t.Errorf("details %v, want %v", got, want)
					}
					wantOnlyToolCalled(t, h, head, state, "task_update", o.Code)
				case from == to:
					if o.Code != "OK" {
						t.Fatalf("same-status request = %s, want OK", o.Code)
					}
					if _, ok := o.Data["previous_status"]; ok || o.Data["seq"] != before["seq"] || o.Data["status"] != from {
						t.Errorf("same-status answer %v: want no previous_status and the task's seq %v", o.Data, before["seq"])
					}
					wantOnlyToolCalled(t, h, head, state, "task_update", "OK")
				case slices.Contains(contractTransitions[from], to):
					if o.Code != "OK" {
						t.Fatalf("allowed transition = %s: %s", o.Code, o.Reply)
					}
					if o.Data["previous_status"] != from || o.Data["status"] != to || o.Data["seq"] != float64(head+1) {
						t.Errorf("answer %v, want previous_status %s, status %s, seq %d", o.Data, from, to, head+1)
					}
					if got := h.call("task_get", map[string]any{"task_id": id}, "OK")["status"]; got != to {
						t.Errorf("status after = %v", got)
					}
				default:
					if o.Code != "ERR_INVALID_TRANSITION" {
						t.Fatalf("forbidden transition = %s, want ERR_INVALID_TRANSITION", o.Code)
					}
					allowed := []any{}
					for _, a := range contractTransitions[from] {
						allowed = append(allowed, a)
					}
					if got, want := contractDetails(o.Err), map[string]any{"from": from, "to": to, "allowed": allowed}; !reflect.DeepEqual(got, want) {
						t.Errorf("details %v, want %v", got, want)
					}
					wantOnlyToolCalled(t, h, head, state, "task_update", o.Code)
				}
			})
		}
	}
}

// TestUpdateRules covers blocked_reason, progress, warnings, labels and
// requests that change nothing.
func TestUpdateRules(t *testing.T) {
	h := newHarness(t, Options{})
	get := func(id any) map[string]any { return h.call("task_get", map[string]any{"task_id": id}, "OK") }
	newTask := func(states ...string) any {
		id := h.call("task_create", map[string]any{"title": "t", "project": "p", "labels": []string{"a", "b", "a"}}, "OK")["task_id"]
		h.call("thought_record", map[string]any{"task_id": id, "type": "plan", "content": "p"}, "OK")
		for _, st := range states {
			h.call("task_update", statusArgs(id, st), "OK")
		}
		return id
	}

	t.Run("blocked_reason set entering blocked, cleared leaving it", func(t *testing.T) {
		for _, leave := range []string{"todo", "in_progress", "cancelled"} {
			id := newTask("todo")
			h.call("task_update", map[string]any{"task_id": id, "status": "blocked", "blocked_reason": "vendor"}, "OK")
			if got := get(id)["blocked_reason"]; got != "vendor" {
				t.Errorf("blocked_reason = %v", got)
			}
			h.call("task_update", map[string]any{"task_id": id, "blocked_reason": "vendor, again"}, "OK")
			if got := get(id)["blocked_reason"]; got != "vendor, again" {
				t.Errorf("changed blocked_reason = %v", got)
			}
			d := h.call("task_update", map[string]any{"task_id": id, "status": leave}, "OK")
			if d["previous_status"] != "blocked" {
				t.Errorf("leaving blocked: %v", d)
			}
			if got, ok := get(id)["blocked_reason"]; ok {
				t.Errorf("blocked_reason after blocked → %s = %v, want none", leave, got)
			}
		}
		// review → blocked needs a reason too.
		id := newTask("todo", "in_progress", "review")
		h.call("task_update", map[string]any{"task_id": id, "status": "blocked"}, "ERR_INVALID_INPUT")
		h.call("task_update", map[string]any{"task_id": id, "status": "blocked", "blocked_reason": "r"}, "OK")
	})

	t.Run("done sets progress 100", func(t *testing.T) {
		id := newTask("todo", "in_progress")
		h.call("task_update", map[string]any{"task_id": id, "progress": 30}, "OK")
		h.call("task_update", map[string]any{"task_id": id, "status": "review"}, "OK")
		d := h.call("task_update", map[string]any{"task_id": id, "status": "done", "progress": 40}, "OK")
		if d["progress"] != 100.0 || get(id)["progress"] != 100.0 {
			t.Errorf("done: %v", d)
		}
	})

	t.Run("warnings", func(t *testing.T) {
		for _, c := range []struct {
			status string
			want   []any
		}{
			{"backlog", []any{"progress is 100 but status is backlog"}},
			{"todo", []any{"progress is 100 but status is todo"}},
			{"in_progress", []any{"progress is 100 but status is in_progress"}},
			{"blocked", []any{"progress is 100 but status is blocked"}},
			// The code's reading of the contract: review is where finished
			// work waits, so 100 there is expected, not warned about.
			{"review", []any{}},
		} {
			id := newTask(pathTo[c.status]...)
			d := h.call("task_update", map[string]any{"task_id": id, "progress": 100}, "OK")
			if !reflect.DeepEqual(d["warnings"], c.want) {
				t.Errorf("%s at 100: warnings %v, want %v", c.status, d["warnings"], c.want)
			}
			d = h.call("task_update", map[string]any{"task_id": id, "progress": 99}, "OK")
			if !reflect.DeepEqual(d["warnings"], []any{}) {
				t.Errorf("%s at 99: warnings %v", c.status, d["warnings"])
			}
		}
	})

	t.Run("labels deduplicated and replaced", func(t *testing.T) {
		id := newTask()
		if got := get(id)["labels"]; !reflect.DeepEqual(got, []any{"a", "b"}) {
			t.Errorf("created labels %v", got)
		}
		h.call("task_update", map[string]any{"task_id": id, "labels": []string{"z", "z", "y"}}, "OK")
		if got := get(id)["labels"]; !reflect.DeepEqual(got, []any{"z", "y"}) {
			t.Errorf("replaced labels %v", got)
		}
		h.call("task_update", map[string]any{"task_id": id, "labels": []string{}}, "OK")
		if got := get(id)["labels"]; !reflect.DeepEqual(got, []any{}) {
			t.Errorf("cleared labels %v, want []", got)
		}
	})

	t.Run("requests that change nothing append no task.updated", func(t *testing.T) {
		id := newTask("todo")
		h.call("task_update", map[string]any{"task_id": id, "title": "T", "priority": "high", "assignee": "ann", "description": "d", "labels": []string{"q"}, "progress": 5}, "OK")
		before := get(id)
		for _, args := range []map[string]any{
			{"status": "todo"},
			{"title": "T"},
			{"priority": "high", "assignee": "ann"},
			{"description": "d", "progress": 5},
			{"labels": []string{"q", "q"}},
		} {
			args["task_id"] = id
			head, state := h.head(), h.stateFingerprint()
			d := h.call("task_update", args, "OK")
			if d["seq"] != before["seq"] || d["updated_at"] != before["updated_at"] {
				t.Errorf("%v: answer %v, want the unchanged task's seq and updated_at", args, d)
			}
			wantOnlyToolCalled(t, h, head, state, "task_update", "OK")
		}
	})

	t.Run("a rejected update changes nothing", func(t *testing.T) {
		id := newTask("todo")
		before := get(id)
		// Valid fields with an invalid status: none of them is applied.
		h.call("task_update", map[string]any{"task_id": id, "title": "new", "progress": 50, "status": "done"}, "ERR_INVALID_TRANSITION")
		h.call("task_update", map[string]any{"task_id": id, "title": "new", "status": "blocked"}, "ERR_INVALID_INPUT")
		after := get(id)
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("task changed: %v → %v", before, after)
		}
	})

	t.Run("writeback: done needs a thought, recorded on closed tasks too", func(t *testing.T) {
		id := h.call("task_create", map[string]any{"title": "t", "project": "p"}, "OK")["task_id"]
		for _, st := range []string{"todo", "in_progress", "review"} {
			h.call("task_update", statusArgs(id, st), "OK")
		}
		h.call("task_update", map[string]any{"task_id": id, "status": "done"}, "ERR_WRITEBACK_REQUIRED")
		h.call("thought_record", map[string]any{"task_id": id, "type": "decision", "content": "ok"}, "OK")
		h.call("task_update", map[string]any{"task_id": id, "status": "done"}, "OK")
		d := h.call("thought_record", map[string]any{"task_id": id, "type": "reflection", "content": "after"}, "OK")
		if d["chain_position"] != 2.0 {
			t.Errorf("thought on a done task: %v", d)
		}
	})
}

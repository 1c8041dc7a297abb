package commands

import (
	"reflect"
	"testing"
)

// TestTimeTravel records the live task_get answers after every change and
// asks for each of them again later with as_of_seq.
func TestTimeTravel(t *testing.T) {
	h := newHarness(t, Options{Agent: "tt"})
	type snapshot struct {
		head uint64
		live map[string]map[string]any // task id → answer
	}
	var snaps []snapshot
	tasks := []string{}
	snap := func() {
		s := snapshot{head: h.head(), live: map[string]map[string]any{}}
		for _, id := range tasks {
			s.live[id] = h.call("task_get", map[string]any{"task_id": id, "include_thought_trail": true, "include_dependents": true}, "OK")
		}
		snaps = append(snaps, s)
	}
	create := func(args map[string]any) {
		tasks = append(tasks, h.call("task_create", args, "OK")["task_id"].(string))
		snap()
	}
	step := func(tool string, args map[string]any, code string) {
		h.call(tool, args, code)
		snap()
	}
	h.call("server_ping", map[string]any{}, "OK") // the first call also records skills.loaded
	created := h.head() + 1
	create(map[string]any{"title": "root", "project": "p", "labels": []string{"a"}, "estimate_hours": 4})
	step("task_update", map[string]any{"task_id": "T-0001", "title": "root, renamed", "description": "d"}, "OK")
	step("task_update", map[string]any{"task_id": "T-0001", "status": "todo", "priority": "high"}, "OK")
	create(map[string]any{"title": "child", "project": "p", "parent_id": "T-0001"})
	step("thought_record", map[string]any{"task_id": "T-0001", "type": "plan", "content": "one"}, "OK")
	step("task_update", map[string]any{"task_id": "T-0001", "status": "blocked", "blocked_reason": "vendor"}, "OK")
	step("task_update", map[string]any{"task_id": "T-0001", "labels": []string{"b", "c"}, "assignee": "ann"}, "OK")
	step("thought_record", map[string]any{"task_id": "T-0002", "type": "plan", "content": "two"}, "OK")
	step("task_update", map[string]any{"task_id": "T-0001", "status": "in_progress", "progress": 60}, "OK")
	step("task_update", map[string]any{"task_id": "T-0001", "status": "done"}, "ERR_INVALID_TRANSITION")
	step("thought_record", map[string]any{"task_id": "T-0001", "type": "decision", "content": "three"}, "OK")
	step("task_update", map[string]any{"task_id": "T-0001", "status": "review", "labels": []string{}}, "OK")
	create(map[string]any{"title": "second child", "project": "p", "parent_id": "T-0001"})
	step("task_update", map[string]any{"task_id": "T-0001", "status": "done"}, "OK")
	step("task_update", map[string]any{"task_id": "T-0002", "status": "cancelled"}, "OK")

	for _, s := range snaps {
		for id, live := range s.live {
			got := h.call("task_get", map[string]any{"task_id": id, "include_thought_trail": true, "include_dependents": true, "as_of_seq": s.head}, "OK")
			if !reflect.DeepEqual(got, live) {
				t.Errorf("%s as of %d = %v\nlive then: %v", id, s.head, got, live)
			}
		}
	}
	// Between two answers (the seqs of the get calls' own tool.called
	// events), the state is the earlier one.
	for i := 1; i < len(snaps); i++ {
		prev, cur := snaps[i-1], snaps[i]
		for id, live := range prev.live {
			got := h.call("task_get", map[string]any{"task_id": id, "include_thought_trail": true, "include_dependents": true, "as_of_seq": prev.head + 1}, "OK")
			if prev.head+1 < cur.head && !reflect.DeepEqual(got, live) {
				t.Errorf("%s as of %d = %v, want the state after %d", id, prev.head+1, got, prev.head)
			}
		}
	}
	// Before creation: not found.
	h.call("task_get", map[string]any{"task_id": "T-0001", "as_of_seq": created - 1}, "ERR_TASK_NOT_FOUND")
	h.call("task_get", map[string]any{"task_id": "T-0001", "as_of_seq": created}, "OK")
	h.call("task_get", map[string]any{"task_id": "T-0003", "as_of_seq": snaps[len(snaps)-4].head}, "ERR_TASK_NOT_FOUND")
	// The present.
	head := h.head()
	live := h.call("task_get", map[string]any{"task_id": "T-0001"}, "OK")
	if got := h.call("task_get", map[string]any{"task_id": "T-0001", "as_of_seq": head}, "OK"); !reflect.DeepEqual(got, live) {
		t.Errorf("as of the head %v, live %v", got, live)
	}
}

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestE2EIntegersAsTheSchemaCountsThem sends integer arguments through the
// real binary written as JSON Schema's "integer" counts them — any number
// with a zero fractional part, 10.0 and 1e1 as well as 10 — and expects them
// taken as those integers, while a number with a fraction is refused at its
// field. The published input schemas say "type": "integer"; a client (or a
// model) that writes 5.0 must not be refused for what its validator accepts.
func TestE2EIntegersAsTheSchemaCountsThem(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "int.db")
	a := startAgent(t, "ints", "--db", db, "--skills", "../../fixtures/skills")
	call := func(tool, args string) map[string]any {
		t.Helper()
		env, err := a.callTool(tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		return env
	}
	data := func(tool, args string) map[string]any {
		t.Helper()
		env := call(tool, args)
		if env["ok"] != true {
			t.Fatalf("%s %s: %v", tool, args, env)
		}
		return env["data"].(map[string]any)
	}
	id := data("task_create", `{"title":"t","project":"p"}`)["task_id"].(string)
	data("task_create", `{"title":"u","project":"p"}`)
	for _, c := range []struct {
		literal string
		want    float64
	}{{"5.0", 5}, {"1e1", 10}, {"1.5E1", 15}, {"200e-1", 20}, {"0.0", 0}, {"-0", 0}, {"1.00e2", 100}} {
		got := data("task_update", `{"task_id":"`+id+`","progress":`+c.literal+`}`)
		if got["progress"] != c.want {
			t.Errorf("progress %s: got %v, want %v", c.literal, got["progress"], c.want)
		}
	}
	if got := data("task_list", `{"project":"p","limit":1.0,"offset":1e0}`); got["limit"] != 1.0 || got["offset"] != 1.0 || got["returned_count"] != 1.0 {
		t.Errorf("task_list limit 1.0 offset 1e0: %v", got)
	}
	created := data("task_get", `{"task_id":"`+id+`","as_of_seq":2}`)
	if got := data("task_get", `{"task_id":"`+id+`","as_of_seq":2.000}`); got["seq"] != created["seq"] || got["progress"] != 0.0 {
		t.Errorf("task_get as_of_seq 2.000: %v, want %v", got, created)
	}
	for args, msg := range map[string]string{
		`{"task_id":"` + id + `","progress":50.5}`:   "must be an integer (a whole number)",
		`{"task_id":"` + id + `","progress":1e-1}`:   "must be an integer (a whole number)",
		`{"task_id":"` + id + `","progress":1.01e2}`: "must be at most 100",
		`{"task_id":"` + id + `","progress":1e400}`:  "must be at most 100",
	} {
		env := call("task_update", args)
		e, _ := env["error"].(map[string]any)
		issues, _ := e["details"].(map[string]any)["issues"].([]any)
		if env["ok"] != false || e["code"] != "ERR_INVALID_INPUT" || len(issues) != 1 ||
			issues[0].(map[string]any)["path"] != "progress" || issues[0].(map[string]any)["message"] != msg {
			t.Errorf("task_update %s: %v, want ERR_INVALID_INPUT at progress: %s", args, env, msg)
		}
	}
}

package main

import (
	"encoding/json"
	"math"
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

// TestE2ENegativeZeroIsZero: a number argument written -0, -0.0 or -1e-400
// is 0 and is answered as 0; it was stored and answered as -0
// ("estimate_hours":-0), a value the contract's 0–1000 does not name and
// that JSON readers keep apart from 0 (math.Signbit, Object.is).
func TestE2ENegativeZeroIsZero(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "zero.db")
	a := startAgent(t, "zero", "--db", db, "--skills", "../../fixtures/skills")
	for _, lit := range []string{"-0", "-0.0", "-1e-400", "-0e5"} {
		env, err := a.callTool("task_create", json.RawMessage(`{"title":"t","project":"p","estimate_hours":`+lit+`}`))
		if err != nil || env["ok"] != true {
			t.Fatalf("task_create estimate_hours %s: %v %v", lit, env, err)
		}
		id := env["data"].(map[string]any)["task_id"]
		got, err := a.callTool("task_get", map[string]any{"task_id": id})
		if err != nil || got["ok"] != true {
			t.Fatalf("task_get %v: %v %v", id, got, err)
		}
		if h, ok := got["data"].(map[string]any)["estimate_hours"].(float64); !ok || h != 0 || math.Signbit(h) {
			t.Errorf("estimate_hours %s: answered %v (sign bit %v), want 0", lit, got["data"].(map[string]any)["estimate_hours"], math.Signbit(h))
		}
	}
}

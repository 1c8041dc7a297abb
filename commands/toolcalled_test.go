package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/domain"
)

func sha(b string) string {
	s := sha256.Sum256([]byte(b))
	return hex.EncodeToString(s[:])
}

// TestToolCalledRecord checks the tool.called event of calls, successful and
// not: tool, outcome, SHA-256 of the canonical arguments and of the exact
// reply, the client, and the ids the arguments name as subjects.
func TestToolCalledRecord(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "a", "project": "core"}, "OK")
	h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "aud"}, "OK")
	for _, c := range []struct {
		name     string
		tool     string
		args     string
		code     string
		argsHash string // SHA-256 of the canonical form
		subjects []string
	}{
		{"keys sorted", "task_create", `{"title":"b","project":"core","parent_id":"T-0001"}`, "OK",
			sha(`{"parent_id":"T-0001","project":"core","title":"b"}`), []string{"T-0001"}},
		{"space and order ignored", "task_get", "{ \"include_dependents\" : true,\n\t\"task_id\":\"T-0001\" }", "OK",
			sha(`{"include_dependents":true,"task_id":"T-0001"}`), []string{"T-0001"}},
		{"numbers as written", "task_list", `{"limit": 2, "offset":0}`, "OK",
			sha(`{"limit":2,"offset":0}`), nil},
		{"escapes decoded", "task_list", `{"search":"\u0061b"}`, "OK",
			sha(`{"search":"ab"}`), nil},
		{"nested objects sorted", "thought_record", `{"type":"plan","task_id":"T-0001","content":"c","metadata":{"z":1,"a":[2,1]},"session_id":"A-0001"}`, "OK",
			sha(`{"content":"c","metadata":{"a":[2,1],"z":1},"session_id":"A-0001","task_id":"T-0001","type":"plan"}`), []string{"T-0001", "A-0001"}},
		{"a learning's source task", "learning_record", `{"pattern":"` + retryPattern + `","context":"` + retryContext + `","project":"core","source_task_id":"T-0001"}`, "OK",
			sha(`{"context":"` + retryContext + `","pattern":"` + retryPattern + `","project":"core","source_task_id":"T-0001"}`), []string{"T-0001"}},
		{"empty arguments", "server_ping", ``, "OK", sha(`{}`), nil},
		{"failure", "task_update", `{"task_id":"T-0999","status":"todo"}`, "ERR_TASK_NOT_FOUND",
			sha(`{"status":"todo","task_id":"T-0999"}`), []string{"T-0999"}},
		{"ids that are not ids", "task_get", `{"task_id":"T-1"}`, "ERR_TASK_NOT_FOUND", sha(`{"task_id":"T-1"}`), nil},
		{"not JSON", "task_get", `{"task_id":`, "ERR_INVALID_INPUT", sha(`{"task_id":`), nil},
		{"unknown tool", "no_such_tool", `{"session_id":"A-0001"}`, "ERR_INVALID_INPUT", sha(`{"session_id":"A-0001"}`), []string{"A-0001"}},
		{"unknown tool, its name clipped", strings.Repeat("é", 1<<20), `{}`, "ERR_INVALID_INPUT", sha(`{}`), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := h.do(c.tool, json.RawMessage(c.args))
			if o.Code != c.code {
				t.Fatalf("code %s, want %s: %s", o.Code, c.code, o.Reply)
			}
			calls := h.toolCalls()
			got := calls[len(calls)-1]
			if got.Seq != h.head() {
				t.Errorf("tool.called is seq %d, not the last event %d", got.Seq, h.head())
			}
			if got.P.Tool != domain.Clip(c.tool) || got.P.Outcome != c.code || got.P.Client != "test-client" || got.P.DurationUS < 0 {
				t.Errorf("tool.called = %+v", got.P)
			}
			if string(got.P.ArgsSHA256) != c.argsHash {
				t.Errorf("args_sha256 = %s, want %s", got.P.ArgsSHA256, c.argsHash)
			}
			if want := sha(string(o.Reply)); string(got.P.ResultSHA256) != want {
				t.Errorf("result_sha256 = %s, want SHA-256 of the reply %s", got.P.ResultSHA256, want)
			}
			if !reflect.DeepEqual(got.Subjects, c.subjects) {
				t.Errorf("subjects = %q, want %q", got.Subjects, c.subjects)
			}
			if got.Actor != "test-client" {
				t.Errorf("actor = %q, want the client's name", got.Actor)
			}
		})
	}
	// The same arguments, written two ways, hash the same.
	h.do("task_list", json.RawMessage(`{"a":1,"b":2}`))
	h.do("task_list", json.RawMessage(` { "b":2,"a":1 } `))
	calls := h.toolCalls()
	if a, b := calls[len(calls)-2].P.ArgsSHA256, calls[len(calls)-1].P.ArgsSHA256; a != b || string(a) != sha(`{"a":1,"b":2}`) {
		t.Errorf("args hashes %s and %s, want both %s", a, b, sha(`{"a":1,"b":2}`))
	}
}

// TestActor: the actor is Options.Agent, else the client's name, else
// "unknown"; it signs every event of the call and the *_by fields.
func TestActor(t *testing.T) {
	for _, c := range []struct {
		agent, client, want string
	}{
		{"agent-a", "cli", "agent-a"},
		{"agent-a", "", "agent-a"},
		{"", "cli", "cli"},
		{"", "", "unknown"},
	} {
		t.Run(c.want+"/"+c.client, func(t *testing.T) {
			h := newHarness(t, Options{Agent: c.agent})
			h.client = ""
			o := h.doCall(Call{Name: "task_create", Args: json.RawMessage(`{"title":"a","project":"p"}`), Client: c.client})
			if o.Code != "OK" || o.Data["created_by"] != c.want {
				t.Errorf("created_by = %v, want %s", o.Data["created_by"], c.want)
			}
			o = h.doCall(Call{Name: "thought_record", Args: json.RawMessage(`{"task_id":"T-0001","type":"plan","content":"c"}`), Client: c.client})
			if o.Data["recorded_by"] != c.want {
				t.Errorf("recorded_by = %v, want %s", o.Data["recorded_by"], c.want)
			}
			o = h.doCall(Call{Name: "task_update", Args: json.RawMessage(`{"task_id":"T-0001","status":"todo"}`), Client: c.client})
			if o.Data["updated_by"] != c.want {
				t.Errorf("updated_by = %v, want %s", o.Data["updated_by"], c.want)
			}
			for _, r := range h.events() {
				if r.Actor != c.want {
					t.Errorf("seq %d (%s) actor = %q, want %q", r.Seq, r.Type, r.Actor, c.want)
				}
			}
			for _, tc := range h.toolCalls() {
				if tc.P.Client != c.client {
					t.Errorf("tool.called client = %q, want %q", tc.P.Client, c.client)
				}
			}
		})
	}
}

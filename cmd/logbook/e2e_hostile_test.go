package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// e2eSecret is put into hostile payloads; it must never reach stderr.
const e2eSecret = "SECRET-e2e-4b1d-payload"

// e2eTransitions is CONTRACT.md §3's state machine, restated here so that
// the binary is checked against the contract rather than against itself.
var e2eTransitions = map[string][]string{
	"backlog":     {"todo", "cancelled"},
	"todo":        {"in_progress", "blocked", "cancelled"},
	"in_progress": {"review", "blocked", "cancelled"},
	"blocked":     {"todo", "in_progress", "cancelled"},
	"review":      {"done", "backlog", "blocked", "cancelled"},
}

var e2eStatuses = []string{"backlog", "todo", "in_progress", "blocked", "review", "done", "cancelled"}

// e2eHostile drives one server whose ledger is checked around every call.
type e2eHostile struct {
	s  *e2eServer
	db string
}

// reject calls a tool with raw argument bytes and requires the contract's
// failure: the code, for ERR_INVALID_INPUT an issue at each of paths, and in
// the ledger exactly one tool.called event with that outcome and nothing
// else. Then the server must still answer server_ping.
func (h *e2eHostile) reject(t *testing.T, tool string, args []byte, code string, paths ...string) e2eReply {
	t.Helper()
	before := e2eHead(t, h.db)
	r := h.s.callRaw(tool, args)
	if r.code() != code {
		t.Errorf("%s: want %s, got %s", tool, code, e2eTrunc(string(r.Result), 600))
	}
	if code == "ERR_INVALID_INPUT" && r.Env.Error != nil {
		var d struct {
			Issues []struct{ Path, Message string }
		}
		if err := json.Unmarshal(r.Env.Error.Details, &d); err != nil || len(d.Issues) == 0 {
			t.Errorf("%s: ERR_INVALID_INPUT without issues: %s", tool, e2eTrunc(string(r.Result), 600))
		}
		for _, p := range paths {
			if !slices.ContainsFunc(d.Issues, func(i struct{ Path, Message string }) bool { return i.Path == p && i.Message != "" }) {
				t.Errorf("%s: no issue at path %q in %s", tool, p, e2eTrunc(string(r.Env.Error.Details), 600))
			}
		}
	}
	if len(r.Result) > 64<<10 {
		t.Errorf("%s: the rejection is %d bytes; it should stay small whatever was sent", tool, len(r.Result))
	}
	h.exactlyOneCall(t, before, tool, code)
	h.s.ping()
	return r
}

// exactlyOneCall requires the events after before to be one tool.called.
func (h *e2eHostile) exactlyOneCall(t *testing.T, before uint64, tool, code string) {
	t.Helper()
	_, events := e2eReadLedger(t, h.db, before)
	if len(events) != 1 || events[0].Call == nil || events[0].Call.Tool != tool || events[0].Call.Outcome != code {
		var got []string
		for _, e := range events {
			if e.Call != nil {
				got = append(got, fmt.Sprintf("%d tool.called %s %s", e.Seq, e.Call.Tool, e.Call.Outcome))
			} else {
				got = append(got, fmt.Sprintf("%d %s", e.Seq, e.Type))
			}
		}
		t.Errorf("%s: want exactly one tool.called %s event, the ledger got %v", tool, code, got)
	}
}

// rejectJSON is reject with args marshalled.
func (h *e2eHostile) rejectJSON(t *testing.T, tool string, args any, code string, paths ...string) e2eReply {
	t.Helper()
	return h.reject(t, tool, e2eJSON(t, args), code, paths...)
}

// transportReject sends a line the server must refuse before any tool runs:
// it must answer (with the request's id when it has one), write nothing to
// the ledger, and keep the session going.
func (h *e2eHostile) transportReject(t *testing.T, line []byte, wantCode int64) {
	t.Helper()
	before := e2eHead(t, h.db)
	h.s.takeOrphans()
	if err := h.s.writeLine(line); err != nil {
		t.Fatal(err)
	}
	h.s.ping() // the rejection is written before the next line is read
	var got []string
	found := false
	for _, m := range h.s.takeOrphans() {
		if m.Error != nil && string(m.ID) == "null" {
			got = append(got, fmt.Sprintf("%d %s", m.Error.Code, m.Error.Message))
			found = found || m.Error.Code == wantCode
		}
	}
	if !found {
		t.Errorf("line %q: want a JSON-RPC error %d with id null, got %v", e2eTrunc(string(line), 80), wantCode, got)
	}
	if head := e2eHead(t, h.db); head != before+1 { // the ping
		t.Errorf("line %q changed the ledger: head %d → %d (the ping is 1)", e2eTrunc(string(line), 80), before, head)
	}
}

// TestE2EHostileInput sends what a broken or hostile client might, through
// the real binary: every call is answered with the contract's error and
// changes nothing but its own tool.called event, and the server keeps
// answering. No payload may reach stderr, even at debug level.
func TestE2EHostileInput(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "hostile.db")
	s := startE2E(t, e2eConfig{DB: db, Agent: "mallory", Env: []string{"LOGBOOK_LOG=debug"}})
	s.initialize("2025-11-25")
	s.ping() // the first call also records the skills loaded
	h := &e2eHostile{s: s, db: db}

	// A task in every state.
	tasks := map[string]string{}
	newTask := func(title string, path ...string) string {
		var c struct {
			TaskID string `json:"task_id"`
		}
		s.ok("task_create", map[string]any{"title": title, "project": "hostile"}, &c)
		for _, st := range path {
			args := map[string]any{"task_id": c.TaskID, "status": st}
			if st == "blocked" {
				args["blocked_reason"] = "waiting"
			}
			if st == "done" {
				s.ok("thought_record", map[string]any{"task_id": c.TaskID, "type": "decision", "content": "done"}, nil)
			}
			s.ok("task_update", args, nil)
		}
		return c.TaskID
	}
	tasks["backlog"] = newTask("in backlog")
	tasks["todo"] = newTask("in todo", "todo")
	tasks["in_progress"] = newTask("in progress", "todo", "in_progress")
	tasks["blocked"] = newTask("blocked", "todo", "blocked")
	tasks["review"] = newTask("in review", "todo", "in_progress", "review")
	tasks["done"] = newTask("done", "todo", "in_progress", "review", "done")
	tasks["cancelled"] = newTask("cancelled", "cancelled")
	task := tasks["todo"]

	var sess struct {
		SessionID string `json:"session_id"`
	}
	s.ok("audit_session_start", map[string]any{"task_id": task, "auditor_id": "auditor"}, &sess)
	var sealed struct {
		SessionID string `json:"session_id"`
	}
	s.ok("audit_session_start", map[string]any{"task_id": task, "auditor_id": "auditor"}, &sealed)
	s.ok("merkle_finalize", map[string]any{"session_id": sealed.SessionID}, nil)

	long := func(n int) string { return strings.Repeat("x", n) }
	invalid := "ERR_INVALID_INPUT"

	t.Run("wrong types", func(t *testing.T) {
		h.reject(t, "task_create", []byte(`{"title":5,"project":"hostile"}`), invalid, "title")
		h.reject(t, "task_create", []byte(`{"title":"`+e2eSecret+`","project":["hostile"]}`), invalid, "project")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"hostile","description":null}`), invalid, "description")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"hostile","labels":"x"}`), invalid, "labels")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"hostile","labels":[1]}`), invalid, "labels[0]")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"Not A Slug"}`), invalid, "project")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"hostile","priority":"urgent"}`), invalid, "priority")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"hostile","estimate_hours":1e400}`), invalid, "estimate_hours")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"hostile","estimate_hours":-0.5}`), invalid, "estimate_hours")
		h.reject(t, "task_update", []byte(`{"task_id":"`+task+`","progress":"50"}`), invalid, "progress")
		h.reject(t, "task_update", []byte(`{"task_id":"`+task+`","progress":50.5}`), invalid, "progress")
		h.reject(t, "task_update", []byte(`{"task_id":"`+task+`","progress":1e-1}`), invalid, "progress")
		h.reject(t, "task_update", []byte(`{"task_id":"`+task+`","progress":101}`), invalid, "progress")
		h.reject(t, "task_update", []byte(`{"task_id":"`+task+`","status":"finished"}`), invalid, "status")
		h.reject(t, "task_update", []byte(`{"task_id":7,"status":"todo"}`), invalid, "task_id")
		h.reject(t, "task_get", []byte(`{"task_id":"`+task+`","include_thought_trail":"yes"}`), invalid, "include_thought_trail")
		h.reject(t, "task_get", []byte(`{"task_id":"`+task+`","as_of_seq":-1}`), invalid, "as_of_seq")
		h.reject(t, "task_get", []byte(`{"task_id":"`+task+`","as_of_seq":99999999999999999999999}`), invalid, "as_of_seq")
		h.reject(t, "task_list", []byte(`{"limit":0}`), invalid, "limit")
		h.reject(t, "task_list", []byte(`{"limit":501}`), invalid, "limit")
		h.reject(t, "task_list", []byte(`{"offset":-1}`), invalid, "offset")
		h.reject(t, "task_list", []byte(`{"status":"todo"}`), invalid, "status")
		h.reject(t, "task_list", []byte(`{"created_after":"yesterday"}`), invalid, "created_after")
		h.reject(t, "task_list", []byte(`{"sort_by":"random"}`), invalid, "sort_by")
		h.reject(t, "task_next_actions", []byte(`{"limit":1000}`), invalid, "limit")
		h.reject(t, "thought_record", []byte(`{"task_id":"`+task+`","type":"musing","content":"x"}`), invalid, "type")
		h.reject(t, "thought_record", []byte(`{"task_id":"`+task+`","type":"plan","content":"   \t\n"}`), invalid, "content")
		h.reject(t, "thought_record", []byte(`{"task_id":"`+task+`","type":"plan","content":"\u3000\u00a0"}`), invalid, "content")
		h.reject(t, "thought_record", []byte(`{"task_id":"`+task+`","type":"plan","content":"x","commit_sha":"xyz"}`), invalid, "commit_sha")
		h.reject(t, "thought_record", []byte(`{"task_id":"`+task+`","type":"plan","content":"x","metadata":[1]}`), invalid, "metadata")
		h.reject(t, "audit_session_start", []byte(`{"task_id":"`+task+`","auditor_id":"a","scope":"total"}`), invalid, "scope")
		h.reject(t, "audit_verify_chain", []byte(`{"full_trace":1}`), invalid, "full_trace")
		h.reject(t, "skill_list", []byte(`{"search":["x"]}`), invalid, "search")
		// Arguments that are not an object at all.
		for _, a := range []string{`[]`, `"` + e2eSecret + `"`, `42`, `true`} {
			h.reject(t, "task_create", []byte(a), invalid, "")
		}
	})

	t.Run("missing and unknown fields", func(t *testing.T) {
		h.reject(t, "task_create", []byte(`{}`), invalid, "title", "project")
		h.reject(t, "task_create", nil, invalid, "title", "project") // no arguments at all
		h.reject(t, "task_create", []byte(`null`), invalid, "title", "project")
		h.reject(t, "thought_record", []byte(`{}`), invalid, "task_id", "type", "content")
		h.reject(t, "task_update", []byte(`{"task_id":"`+task+`"}`), invalid, "")
		h.reject(t, "audit_session_start", []byte(`{"task_id":"`+task+`"}`), invalid, "auditor_id")
		h.reject(t, "merkle_finalize", []byte(`{}`), invalid, "session_id")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"hostile","bogus":"`+e2eSecret+`"}`), invalid, "bogus")
		h.reject(t, "task_create", []byte(`{"title":"a","project":"hostile","Title":"b"}`), invalid, "Title")
		h.reject(t, "server_ping", []byte(`{"x":1}`), invalid, "x")
		h.reject(t, "server_health", []byte(`{"verbose":true}`), invalid, "verbose")
		h.reject(t, "task_create", []byte(`{"title":"a","title":"b","project":"hostile"}`), invalid, "title")
		h.reject(t, "no_such_tool", []byte(`{}`), invalid)
		h.reject(t, "", []byte(`{}`), invalid)
		// 20,000 unknown keys: the answer lists a bounded number of issues, and the parser (domain/parse.go) finds duplicate keys through a map past 16 members.
		var b bytes.Buffer
		b.WriteString(`{"title":"a","project":"hostile"`)
		for i := range 20000 {
			fmt.Fprintf(&b, `,"k%d":1`, i)
		}
		b.WriteString(`}`)
		h.reject(t, "task_create", b.Bytes(), invalid, "k0")
	})

	t.Run("over-long strings", func(t *testing.T) {
		h.rejectJSON(t, "task_create", map[string]any{"title": long(257), "project": "hostile"}, invalid, "title")
		h.rejectJSON(t, "task_create", map[string]any{"title": strings.Repeat("é", 257), "project": "hostile"}, invalid, "title")
		h.rejectJSON(t, "task_create", map[string]any{"title": "", "project": "hostile"}, invalid, "title")
		h.rejectJSON(t, "task_create", map[string]any{"title": "a", "project": "p" + long(64)}, invalid, "project")
		h.rejectJSON(t, "task_create", map[string]any{"title": "a", "project": "hostile", "description": long(8001)}, invalid, "description")
		h.rejectJSON(t, "task_create", map[string]any{"title": "a", "project": "hostile", "assignee": long(129)}, invalid, "assignee")
		h.rejectJSON(t, "task_create", map[string]any{"title": "a", "project": "hostile", "labels": []string{long(65)}}, invalid, "labels[0]")
		h.rejectJSON(t, "thought_record", map[string]any{"task_id": task, "type": "plan", "content": e2eSecret + long(5001)}, invalid, "content")
		h.rejectJSON(t, "thought_record", map[string]any{"task_id": task, "type": "plan", "content": "x", "branch": long(257)}, invalid, "branch")
		h.rejectJSON(t, "thought_record", map[string]any{"task_id": task, "type": "plan", "content": "x", "commit_sha": strings.Repeat("a", 65)}, invalid, "commit_sha")
		h.rejectJSON(t, "thought_record", map[string]any{"task_id": task, "type": "plan", "content": "x", "metadata": map[string]string{"k": long(17 << 10)}}, invalid, "metadata")
		h.rejectJSON(t, "audit_session_start", map[string]any{"task_id": task, "auditor_id": long(129)}, invalid, "auditor_id")
		h.rejectJSON(t, "audit_session_start", map[string]any{"task_id": task, "auditor_id": "a", "reason": long(1001)}, invalid, "reason")
		// The limits count characters, not bytes or UTF-16 units: 256 emoji,
		// sent as escaped surrogate pairs, are a valid title.
		before := e2eHead(t, db)
		r := s.callRaw("task_create", []byte(`{"title":"`+strings.Repeat(`\ud83d\ude00`, 256)+`","project":"emoji"}`))
		if !r.Env.OK {
			t.Errorf("256 emoji title: %s", e2eTrunc(string(r.Result), 400))
		} else if head := e2eHead(t, db); head != before+2 {
			t.Errorf("task_create appended %d events, want 2", head-before)
		}
	})

	t.Run("huge arrays", func(t *testing.T) {
		many := func(n int, item string) []byte {
			return []byte("[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]")
		}
		h.reject(t, "task_create", append(append([]byte(`{"title":"a","project":"hostile","labels":`), many(100000, `"x"`)...), '}'), invalid, "labels")
		h.reject(t, "task_create", append(append([]byte(`{"title":"a","project":"hostile","labels":`), many(100000, `""`)...), '}'), invalid, "labels")
		h.reject(t, "thought_record", append(append([]byte(`{"task_id":"`+task+`","type":"plan","content":"x","tests_run":`), many(500000, `"t"`)...), '}'), invalid, "tests_run")
		h.reject(t, "thought_record", append(append([]byte(`{"task_id":"`+task+`","type":"plan","content":"x","blockers":`), many(51, `"b"`)...), '}'), invalid, "blockers")
		// A filter list has no bound in the contract: a long one is answered
		// (either way) and recorded like any call.
		before := e2eHead(t, db)
		r := s.callRaw("task_list", append(append([]byte(`{"status":`), many(200000, `"todo"`)...), '}'))
		h.exactlyOneCall(t, before, "task_list", r.code())
		s.ping()
	})

	t.Run("invalid text", func(t *testing.T) {
		h.reject(t, "task_create", []byte("{\"title\":\"a\xffb "+e2eSecret+"\",\"project\":\"hostile\"}"), invalid, "title")
		h.reject(t, "task_create", []byte("{\"title\":\"\xed\xa0\x80\",\"project\":\"hostile\"}"), invalid, "title") // UTF-8-encoded surrogate
		h.reject(t, "task_create", []byte("{\"title\":\"\xc0\xaf\",\"project\":\"hostile\"}"), invalid, "title")     // overlong encoding
		h.reject(t, "thought_record", []byte("{\"task_id\":\""+task+"\",\"type\":\"plan\",\"content\":\"x\",\"metadata\":{\"k\":[\"\xfe\"]}}"), invalid, "metadata.k[0]")
		h.reject(t, "task_create", []byte(`{"title":"a\ud800b","project":"hostile"}`), invalid, "title")
		h.reject(t, "task_create", []byte(`{"title":"\udc00","project":"hostile"}`), invalid, "title")
		h.reject(t, "task_create", []byte(`{"title":"\ud800\u0041","project":"hostile"}`), invalid, "title")
		h.reject(t, "task_create", []byte(`{"title":"x\ud83d","project":"hostile"}`), invalid, "title")
		h.reject(t, "thought_record", []byte(`{"task_id":"`+task+`","type":"plan","content":"x","metadata":{"\udfff":1}}`), invalid, "metadata.\ufffd") // the key as decoded
	})

	t.Run("deep nesting", func(t *testing.T) {
		nest := func(depth int) []byte {
			return []byte(`{"task_id":"` + task + `","type":"plan","content":"x","metadata":` + strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth) + "}")
		}
		h.reject(t, "thought_record", nest(64), invalid, "metadata."+strings.TrimSuffix(strings.Repeat("a.", 63), "."))
		h.reject(t, "thought_record", nest(900), invalid)
		h.reject(t, "thought_record", []byte(`{"task_id":"`+task+`","type":"plan","content":"x","metadata":{"a":`+strings.Repeat("[", 900)+strings.Repeat("]", 900)+`}}`), invalid)
		// Deeper than the go-sdk's 1,000 levels and than encoding/json's 10,000:
		// the line never becomes a tool call; the server must still answer
		// this request, by its id, and go on.
		for _, depth := range []int{2000, 10000} {
			before := e2eHead(t, db)
			params := append(append([]byte(`{"name":"thought_record","arguments":`), nest(depth)...), '}')
			ch, id := s.send("tools/call", params)
			s.ping()
			select {
			case m := <-ch:
				if m.Error == nil {
					r := parseE2EReply(t, "thought_record", m)
					if r.code() != invalid {
						t.Errorf("depth %d: want ERR_INVALID_INPUT, got %s", depth, e2eTrunc(string(r.Result), 300))
					}
				}
			case <-time.After(2 * time.Second): // after the ping, an answer would be on its way
				var got []string
				for _, m := range s.takeOrphans() {
					got = append(got, fmt.Sprintf("id %s: %+v", m.ID, m.Error))
				}
				e2eKnownBug(t, "deep-nesting-id", "metadata nested %d levels: no answer carries request id %d (the client waits forever); got %v", depth, id, got)
			}
			if head := e2eHead(t, db); head > before+2 {
				t.Errorf("depth %d: %d events appended", depth, head-before)
			}
		}
	})

	t.Run("transport", func(t *testing.T) {
		h.transportReject(t, []byte("garbage "+e2eSecret), -32700)
		h.transportReject(t, []byte(`{"jsonrpc":"2.0","id":1,"method":`), -32700)
		h.transportReject(t, []byte("\x00\x01\x02"), -32700)
		h.transportReject(t, []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`), -32600)
		h.transportReject(t, []byte(`"just a string"`), -32600)
		h.transportReject(t, []byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`), -32600)
		// A 20 MiB line: read through without being kept, answered by id.
		before := e2eHead(t, db)
		params := []byte(`{"name":"task_create","arguments":{"project":"hostile","title":"` + e2eSecret + strings.Repeat("x", 20<<20) + `"}}`)
		ch, _ := s.send("tools/call", params)
		m := s.wait(ch, "20 MiB line")
		if m.Error == nil || m.Error.Code != -32600 {
			t.Errorf("20 MiB line: want JSON-RPC error -32600 by id, got %+v %s", m.Error, e2eTrunc(string(m.Result), 300))
		}
		s.ping()
		if head := e2eHead(t, db); head != before+1 {
			t.Errorf("20 MiB line changed the ledger: head %d → %d (the ping is 1)", before, head)
		}
		// A method that does not exist, and a tools/call without params.
		if m := s.request("tasks/steal", map[string]any{}); m.Error == nil || m.Error.Code != -32601 {
			t.Errorf("unknown method: %+v", m)
		}
		if m := s.wait(func() <-chan e2eMessage { ch, _ := s.send("tools/call", nil); return ch }(), "tools/call without params"); m.Error == nil {
			t.Errorf("tools/call without params: want a JSON-RPC error, got %s", m.Result)
		}
		s.ping()
	})

	t.Run("ids that do not exist", func(t *testing.T) {
		nf := "ERR_TASK_NOT_FOUND"
		h.rejectJSON(t, "task_get", map[string]any{"task_id": "T-9999"}, nf)
		h.rejectJSON(t, "task_get", map[string]any{"task_id": "T-0"}, nf)
		h.rejectJSON(t, "task_get", map[string]any{"task_id": e2eSecret}, nf)
		h.rejectJSON(t, "task_get", map[string]any{"task_id": task, "as_of_seq": 0}, nf)
		h.rejectJSON(t, "task_update", map[string]any{"task_id": "T-9999", "status": "todo"}, nf)
		h.rejectJSON(t, "task_create", map[string]any{"title": "a", "project": "hostile", "parent_id": "T-9999"}, nf)
		h.rejectJSON(t, "thought_record", map[string]any{"task_id": "T-9999", "type": "plan", "content": "x"}, nf)
		h.rejectJSON(t, "thought_record_list", map[string]any{"task_id": "T-9999"}, nf)
		h.rejectJSON(t, "audit_session_start", map[string]any{"task_id": "T-9999", "auditor_id": "a"}, nf)
		h.rejectJSON(t, "audit_verify_chain", map[string]any{"task_id": "T-9999"}, nf)
		sf := "ERR_SESSION_NOT_FOUND"
		h.rejectJSON(t, "merkle_root", map[string]any{"session_id": "A-9999"}, sf)
		h.rejectJSON(t, "merkle_finalize", map[string]any{"session_id": "A-9999"}, sf)
		h.rejectJSON(t, "thought_record_list", map[string]any{"session_id": "A-9999"}, sf)
		h.rejectJSON(t, "audit_verify_chain", map[string]any{"session_id": "A-9999"}, sf)
		h.rejectJSON(t, "thought_record", map[string]any{"task_id": task, "type": "plan", "content": "x", "session_id": "A-9999"}, sf)
		h.rejectJSON(t, "task_next_actions", map[string]any{"project": "no-such-project"}, "ERR_PROJECT_NOT_FOUND")
		// A parent in another project is an input error.
		s.ok("task_create", map[string]any{"title": "elsewhere", "project": "other"}, nil)
		h.rejectJSON(t, "task_create", map[string]any{"title": "a", "project": "other", "parent_id": task}, invalid, "parent_id")
	})

	t.Run("every forbidden transition", func(t *testing.T) {
		for _, from := range e2eStatuses {
			id := tasks[from]
			for _, to := range e2eStatuses {
				args := map[string]any{"task_id": id, "status": to}
				if to == "blocked" {
					args["blocked_reason"] = "waiting"
				}
				allowed, open := e2eTransitions[from]
				switch {
				case !open:
					r := h.rejectJSON(t, "task_update", args, "ERR_TASK_CLOSED")
					e2eDetails(t, r, map[string]any{"task_id": id, "status": from})
				case to == from:
					// Asking for the current state changes nothing and is not an error.
					before := e2eHead(t, db)
					if r := s.call("task_update", args); !r.Env.OK {
						t.Errorf("%s → %s (same state): %s", from, to, r.Result)
					}
					h.exactlyOneCall(t, before, "task_update", "OK")
				case slices.Contains(allowed, to):
				default:
					r := h.rejectJSON(t, "task_update", args, "ERR_INVALID_TRANSITION")
					e2eDetails(t, r, map[string]any{"from": from, "to": to, "allowed": e2eAsSet(allowed)})
				}
			}
		}
		for _, closed := range []string{"done", "cancelled"} {
			for _, f := range []map[string]any{{"title": "reopened"}, {"progress": 10}, {"labels": []string{}}, {"priority": "low"}} {
				f["task_id"] = tasks[closed]
				h.rejectJSON(t, "task_update", f, "ERR_TASK_CLOSED")
			}
		}
		h.rejectJSON(t, "task_update", map[string]any{"task_id": tasks["todo"], "status": "blocked"}, invalid, "blocked_reason")
		h.rejectJSON(t, "task_update", map[string]any{"task_id": tasks["todo"], "blocked_reason": "not blocked"}, invalid, "blocked_reason")
		// review → done with no thought on the task.
		fresh := newTask("no thoughts", "todo", "in_progress", "review")
		r := h.rejectJSON(t, "task_update", map[string]any{"task_id": fresh, "status": "done"}, "ERR_WRITEBACK_REQUIRED")
		e2eDetails(t, r, map[string]any{"task_id": fresh, "missing_fields": []any{"thought_record"}})
	})

	// Every argument that names a task, session or learning is an id: at
	// most domain.MaxIDLength characters, whatever the tool, required or
	// optional. (thought_record's and thought_record_list's session_id had
	// no bound: a 1 MiB one was looked up and echoed twice in a 2 MiB
	// ERR_SESSION_NOT_FOUND.)
	t.Run("over-long ids", func(t *testing.T) {
		pattern := "Retry the uploader with exponential back-off and jitter so bursts spread out"
		context := "Learnt while the payment provider rate-limited the nightly batch upload: retries in lock-step kept the account throttled for hours"
		for _, c := range []struct {
			tool, field string
			args        map[string]any
		}{
			{"task_create", "parent_id", map[string]any{"title": "a", "project": "hostile"}},
			{"task_update", "task_id", map[string]any{"title": "a"}},
			{"task_get", "task_id", map[string]any{}},
			{"thought_record", "task_id", map[string]any{"type": "plan", "content": "x"}},
			{"thought_record", "session_id", map[string]any{"task_id": task, "type": "plan", "content": "x"}},
			{"thought_record_list", "task_id", map[string]any{}},
			{"thought_record_list", "session_id", map[string]any{}},
			{"audit_session_start", "task_id", map[string]any{"auditor_id": "a"}},
			{"merkle_finalize", "session_id", map[string]any{}},
			{"merkle_finalize", "task_id", map[string]any{"session_id": sess.SessionID}},
			{"merkle_root", "session_id", map[string]any{}},
			{"audit_verify_chain", "session_id", map[string]any{}},
			{"audit_verify_chain", "task_id", map[string]any{}},
			{"finding_record", "task_id", map[string]any{"category": "bug", "summary": "s"}},
			{"learning_record", "source_task_id", map[string]any{"pattern": pattern, "context": context, "project": "hostile"}},
			{"learning_record", "supersedes", map[string]any{"pattern": pattern, "context": context, "project": "hostile"}},
			{"learning_supersede", "learning_id", map[string]any{"by": "L-0001"}},
			{"learning_supersede", "by", map[string]any{"learning_id": "L-0001"}},
		} {
			for _, id := range []string{"A-" + long(31), "A-" + e2eSecret + long(1<<20)} {
				args := maps.Clone(c.args)
				args[c.field] = id
				h.rejectJSON(t, c.tool, args, invalid, c.field)
			}
		}
	})

	// An id given as "" names nothing, optional or required: it is looked up
	// and not found, never taken for an absent argument. (Optional ones were:
	// merkle_finalize {"task_id":""} sealed every leaf, audit_verify_chain
	// {"task_id":""} verified the whole ledger, thought_record_list listed
	// every thought, thought_record took no session and task_create made a
	// task with no parent.)
	t.Run("empty ids", func(t *testing.T) {
		var open struct {
			SessionID string `json:"session_id"`
		}
		s.ok("audit_session_start", map[string]any{"task_id": task, "auditor_id": "auditor"}, &open)
		pattern := "Retry the uploader with exponential back-off and jitter so bursts spread out"
		context := "Learnt while the payment provider rate-limited the nightly batch upload: retries in lock-step kept the account throttled for hours"
		tnf, snf := "ERR_TASK_NOT_FOUND", "ERR_SESSION_NOT_FOUND"
		for _, c := range []struct {
			tool, field, code string
			args              map[string]any
		}{
			{"task_create", "parent_id", tnf, map[string]any{"title": "a", "project": "hostile"}},
			{"task_update", "task_id", tnf, map[string]any{"title": "a"}},
			{"task_get", "task_id", tnf, map[string]any{}},
			{"thought_record", "task_id", tnf, map[string]any{"type": "plan", "content": "x"}},
			{"thought_record", "session_id", snf, map[string]any{"task_id": task, "type": "plan", "content": "x"}},
			{"thought_record_list", "task_id", tnf, map[string]any{}},
			{"thought_record_list", "session_id", snf, map[string]any{}},
			{"thought_record_list", "session_id", snf, map[string]any{"task_id": task}},
			{"audit_session_start", "task_id", tnf, map[string]any{"auditor_id": "a"}},
			{"merkle_finalize", "session_id", snf, map[string]any{}},
			{"merkle_finalize", "task_id", tnf, map[string]any{"session_id": open.SessionID}},
			{"merkle_root", "session_id", snf, map[string]any{}},
			{"audit_verify_chain", "session_id", snf, map[string]any{}},
			{"audit_verify_chain", "task_id", tnf, map[string]any{}},
			{"audit_verify_chain", "task_id", tnf, map[string]any{"session_id": open.SessionID}},
			{"finding_record", "task_id", tnf, map[string]any{"category": "bug", "summary": "s"}},
			{"learning_record", "source_task_id", tnf, map[string]any{"pattern": pattern, "context": context, "project": "hostile"}},
			{"learning_record", "supersedes", invalid, map[string]any{"pattern": pattern, "context": context, "project": "hostile"}},
			{"learning_supersede", "learning_id", invalid, map[string]any{"by": "L-0001"}},
			{"learning_supersede", "by", invalid, map[string]any{"learning_id": "L-0001"}},
		} {
			args := maps.Clone(c.args)
			args[c.field] = ""
			if c.code == invalid {
				h.rejectJSON(t, c.tool, args, invalid, c.field)
			} else {
				r := h.rejectJSON(t, c.tool, args, c.code)
				key := map[string]string{tnf: "task_id", snf: "session_id"}[c.code]
				e2eDetails(t, r, map[string]any{key: ""})
			}
		}
		// The session is still open: the finalize with task_id "" sealed nothing.
		var root struct {
			IsFinalized bool `json:"is_finalized"`
		}
		s.ok("merkle_root", map[string]any{"session_id": open.SessionID}, &root)
		if root.IsFinalized {
			t.Errorf("merkle_finalize with task_id \"\" finalized %s", open.SessionID)
		}
	})

	t.Run("finalized session", func(t *testing.T) {
		r := h.rejectJSON(t, "thought_record", map[string]any{"task_id": task, "type": "plan", "content": e2eSecret, "session_id": sealed.SessionID}, "ERR_ALREADY_FINALIZED")
		e2eDetails(t, r, map[string]any{"session_id": sealed.SessionID})
		h.rejectJSON(t, "merkle_finalize", map[string]any{"session_id": sealed.SessionID}, "ERR_ALREADY_FINALIZED")
		// A task outside the session's scope.
		h.rejectJSON(t, "merkle_finalize", map[string]any{"session_id": sess.SessionID, "task_id": tasks["review"]}, invalid, "task_id")
	})

	// The ledger is whole, and nothing that was sent reached stderr.
	s.closeStdin()
	if code := s.waitExit(e2eTimeout); code != 0 {
		t.Errorf("exit code %d", code)
	}
	e2eVerify(t, db)
	if strings.Contains(s.stderr.String(), e2eSecret) {
		t.Errorf("stderr carries an argument payload:\n%s", e2eTrunc(s.stderr.String(), 4000))
	}
}

// e2eDetails requires each of want in the failure's details.
func e2eDetails(t *testing.T, r e2eReply, want map[string]any) {
	t.Helper()
	if r.Env.Error == nil {
		return
	}
	var got map[string]any
	if err := json.Unmarshal(r.Env.Error.Details, &got); err != nil {
		t.Errorf("details: %v", err)
		return
	}
	for k, w := range want {
		g := got[k]
		if set, ok := w.(e2eSet); ok {
			list, _ := g.([]any)
			var strs []string
			for _, x := range list {
				s, _ := x.(string)
				strs = append(strs, s)
			}
			slices.Sort(strs)
			if !slices.Equal(strs, []string(set)) {
				t.Errorf("details.%s = %v, want %v (any order)", k, g, set)
			}
			continue
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("details.%s = %v, want %v", k, g, w)
		}
	}
}

type e2eSet []string

func e2eAsSet(s []string) e2eSet {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// e2eKnownBug reports a contract deviation that is known and reported but
// not fixed yet: it fails the test only with LOGBOOK_E2E_STRICT=1, so that
// the rest of the suite keeps guarding what works.
func e2eKnownBug(t *testing.T, id, format string, args ...any) {
	t.Helper()
	msg := "KNOWN BUG " + id + ": " + fmt.Sprintf(format, args...)
	if strict, _ := strconv.ParseBool(os.Getenv("LOGBOOK_E2E_STRICT")); strict {
		t.Error(msg)
		return
	}
	t.Log(msg + " (LOGBOOK_E2E_STRICT=1 makes this fail)")
}

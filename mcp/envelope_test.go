package mcp

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// outputIssues checks reply bytes against tool's outputSchema, as the
// TypeScript SDK client does with every structuredContent it receives. Tests
// with a real commands.Service should run every reply through it.
func outputIssues(tl *tool, reply []byte) []issue {
	var is domain.Issues
	if root := domain.ParseArgs(reply).Root(); root != nil {
		check(root, envelopeSchema(tl.out), "", &is)
	} else {
		is.Add("", "not valid JSON")
	}
	var inv *commands.InvalidInputError
	if !errors.As(is.Err(), &inv) {
		return nil
	}
	return fromIssues(inv.Issues)
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("boom") }

func TestEncode(t *testing.T) {
	type data struct {
		TaskID string  `json:"task_id"`
		Note   string  `json:"note"`
		Prev   *string `json:"previous_hash"`
	}
	var nilMap map[string]any
	tests := []struct {
		name      string
		result    any
		wantCode  string
		wantReply string
		wantLog   string
	}{
		{"struct", data{TaskID: "T-0001", Note: "a<b & c>d"}, "OK", `{"ok":true,"data":{"task_id":"T-0001","note":"a<b & c>d","previous_hash":null}}`, ""},
		{"map", map[string]any{"b": 1, "a": []string{}}, "OK", `{"ok":true,"data":{"a":[],"b":1}}`, ""},
		{"raw", json.RawMessage(` { "x" : 1 } `), "OK", `{"ok":true,"data":{"x":1}}`, ""},
		{"nil", nil, "OK", `{"ok":true,"data":{}}`, ""},
		{"nil map", nilMap, "OK", `{"ok":true,"data":{}}`, ""},
		{"array", []int{1}, "ERR_INTERNAL", "", "result is not a JSON object"},
		{"string", "x", "ERR_INTERNAL", "", "result is not a JSON object"},
		{"unmarshalable", map[string]any{"c": make(chan int)}, "ERR_INTERNAL", "", "cannot marshal result"},
		{"panicking marshaler", map[string]any{"p": panicky{}}, "ERR_INTERNAL", "", "encode panicked"},
	}
	_, internal := internalReply()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, logs := newTestServer(t, nil, Options{})
			code, reply := s.Encode(tt.result, nil)
			if tt.wantReply == "" {
				tt.wantReply = string(internal)
			}
			if code != tt.wantCode || string(reply) != tt.wantReply {
				t.Errorf("Encode = %s %s, want %s %s", code, reply, tt.wantCode, tt.wantReply)
			}
			if !json.Valid(reply) {
				t.Errorf("reply is not JSON: %s", reply)
			}
			if tt.wantLog != "" && !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log %q does not mention %q", logs.String(), tt.wantLog)
			}
		})
	}
}

func TestEncodeErrorWinsOverResult(t *testing.T) {
	s, _ := newTestServer(t, nil, Options{})
	code, reply := s.Encode(map[string]any{"x": 1}, errors.New("x"))
	if code != CodeInternal || strings.Contains(string(reply), `"ok":true`) {
		t.Errorf("Encode(result, err) = %s %s: a failure must never be wrapped in a success", code, reply)
	}
}

func TestToolResult(t *testing.T) {
	for _, reply := range []string{
		`{"ok":true,"data":{"timestamp":"2026-04-08T22:15:30.123Z"}}`,
		`{"ok":false,"error":{"code":"ERR_READ_ONLY","message":"server is read-only","details":{}}}`,
	} {
		res := toolResult([]byte(reply))
		wire, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Content []struct {
				Type, Text string
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		}
		if err := json.Unmarshal(wire, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Content) != 1 || got.Content[0].Type != "text" || got.Content[0].Text != reply {
			t.Errorf("content = %+v, want one text item %s", got.Content, reply)
		}
		if string(got.StructuredContent) != reply {
			t.Errorf("structuredContent = %s, want %s", got.StructuredContent, reply)
		}
		if want := strings.HasPrefix(reply, `{"ok":false`); got.IsError != want {
			t.Errorf("isError = %v, want %v", got.IsError, want)
		}
	}
	var _ *sdk.CallToolResult = toolResult(nil)
}

// sampleData is, per tool, a success payload shaped as CONTRACT.md describes,
// with optional fields both present and null.
var sampleData = map[string]string{
	"task_create": `{"task_id":"T-0001","status":"backlog","created_at":"2026-04-08T22:15:30.123Z","created_by":"claude","sequence":1,"seq":3}`,
	"task_update": `{"task_id":"T-0001","status":"done","progress":100,"updated_at":"2026-04-08T22:15:30.123Z","updated_by":"claude",
		"previous_status":"review","warnings":["progress is 100 but status is in_progress"],"seq":9}`,
	"task_get": `{"task_id":"T-0002","title":"t","description":"","project":"p","status":"todo","priority":"normal","progress":0,
		"assignee":"unassigned","labels":[],"estimate_hours":null,"created_at":"x","updated_at":"x","created_by":"a","updated_by":"a",
		"parent_id":"T-0001","blocked_reason":null,"sequence":2,"seq":5,"thought_trail":["Θ-0001"],"dependents":[]}`,
	"task_list": `{"tasks":[{"task_id":"T-0001","title":"t","project":"p","status":"todo","priority":"high","progress":10,"assignee":"a",
		"created_at":"x","updated_at":"y","seq":6}],"total_count":1,"returned_count":1,"offset":0,"limit":50}`,
	"task_next_actions": `{"next_actions":[{"task_id":"T-0001","title":"t","priority":"high","assignee":"a","estimate_hours":2.5,
		"parent_id":null,"dependencies_unmet":0,"seq":3}],"count":1,"project":null,"blocked":[{"task_id":"T-0003","title":"u","blocked_reason":"r","seq":9}]}`,
	"thought_record": `{"thought_id":"Θ-0001","task_id":"T-0001","type":"plan","hash":"ab","previous_hash":null,"recorded_at":"x",
		"recorded_by":"a","chain_position":1,"seq":4}`,
	"thought_record_list": `{"task_id":"T-0001","thought_count":2,"thoughts":[{"thought_id":"Θ-0001","task_id":"T-0001","type":"plan",
		"content":"c","hash":"ab","previous_hash":null,"recorded_at":"x","recorded_by":"a","chain_position":1,"seq":4}],
		"chain_valid":true,"invalid_links":[]}`,
	"audit_session_start": `{"session_id":"A-0001","task_id":"T-0001","auditor_id":"aud","started_at":"x","scope":"shallow","start_seq":7}`,
	"merkle_finalize": `{"session_id":"A-0001","merkle_root":"ab","tree_depth":3,"leaf_count":5,"first_seq":7,"last_seq":12,
		"finalized_at":"x","frozen":true,"ledger_size":13,"ledger_root":"cd"}`,
	"merkle_root": `{"session_id":"A-0001","merkle_root":"ab","leaf_count":5,"is_finalized":false,"as_of":"x","as_of_seq":12}`,
	"audit_verify_chain": `{"chain_valid":false,"total_records":10,"integrity_score":90,"broken_links":[{"position":4,
		"expected_hash":"ab","actual_hash":"cd","problem":"content changed"}],"verified_at":"x","merkle_valid":null,"hashes":[{"seq":1,"hash":"ab"}]}`,
	"finding_record": `{"finding_id":"F-0001","task_id":"T-0001","project":"core","category":"bug","files":["a.go"],"hash":"ab",
		"recorded_at":"x","recorded_by":"a","seq":5}`,
	"learning_record": `{"learning_id":"L-0002","project":"core","tags":[],"supersedes":"L-0001","hash":"ab","recorded_at":"x",
		"recorded_by":"a","seq":6}`,
	"learning_supersede": `{"learning_id":"L-0001","superseded_by":"L-0002","project":"core","hash":"ab","recorded_at":"x",
		"recorded_by":"a","seq":7}`,
	"memory_write": `{"memory_id":"M-0001","key":"k","scope":"agent","agent":"a","version":1,"content":"c","hash":"ab",
		"written_at":"x","written_by":"a","seq":8}`,
	"memory_read": `{"key":"k","scope":"global","found":false,"memory":null,"as_of_seq":9}`,
	"memory_history": `{"key":"k","version_count":1,"versions":[{"memory_id":"M-0001","key":"k","scope":"project","project":"core",
		"version":1,"content":"c","hash":"ab","written_at":"x","written_by":"a","seq":8}]}`,
	"knowledge_search": `{"query":"q","project":"core","count":1,"hits":[{"id":"F-0001","kind":"finding","project":"core","field":"summary",
		"snippet":"s","matched":["s"],"author":"a","seq":5,"hash":"ab","score":1.5}],"as_of_seq":9}`,
	"skill_list":  `{"skills":[{"name":"review","version":"0.0.0","description":"d","capabilities":["review"],"path":".agents/skills/review/SKILL.md"}],"total_count":1}`,
	"server_ping": `{"timestamp":"2026-04-08T22:15:30.123Z"}`,
	"server_health": `{"status":"ok","mode":"FULL","uptime_ms":12,"version":"dev","timestamp":"x",
		"db":{"open":true,"path":"logbook.db","format_version":1,"size_bytes":32768},
		"ledger":{"head_seq":0,"head_hash":null,"root":"e3b0"},"projections":{"version":"1","applied_seq":0},
		"middleware":{"stages":["recover","validate","audit+commit"]},"tools":{"registered":14},
		"skills":{"loaded":1,"skipped":[{"path":"x/SKILL.md","reason":"no name"}]}}`,
}

func TestOutputSchemasAcceptBothEnvelopes(t *testing.T) {
	s, _ := newTestServer(t, nil, Options{})
	for _, tl := range s.tools {
		t.Run(tl.name, func(t *testing.T) {
			data, ok := sampleData[tl.name]
			if !ok {
				t.Fatalf("no sample data")
			}
			code, reply := s.Encode(json.RawMessage(data), nil)
			if code != CodeOK {
				t.Fatalf("Encode(sample) = %s %s", code, reply)
			}
			if got := outputIssues(tl, reply); got != nil {
				t.Errorf("success envelope rejected by the output schema: %v", got)
			}
			for _, tc := range errorCases {
				_, reply := s.Encode(nil, tc.err)
				if got := outputIssues(tl, reply); got != nil {
					t.Errorf("%s: failure envelope rejected by the output schema: %v", tc.name, got)
				}
			}
		})
	}
}

func TestOutputSchemaRejectsWrongTypes(t *testing.T) {
	tl := toolByName(t, "task_create")
	got := outputIssues(tl, []byte(`{"ok":true,"data":{"task_id":1,"status":"backlog","created_at":"x","created_by":"a","sequence":1,"seq":2}}`))
	if len(got) != 1 || got[0].Path != "data.task_id" {
		t.Errorf("issues = %v, want one at data.task_id", got)
	}
	if got := outputIssues(tl, []byte(`{"error":{"code":"ERR_INTERNAL","message":"m"}}`)); len(got) != 1 || got[0].Path != "ok" {
		t.Errorf("issues = %v, want ok is required", got)
	}
}

// TestOutputSchemaRequiresDataFields: under data every field a result
// always carries is required, at any depth, so a client validating
// structured output (the TypeScript SDK's Client.callTool does) can rely on
// it; a field that may be left out (optional, orNull) is not. The output
// schemas had no required under data at all.
func TestOutputSchemaRequiresDataFields(t *testing.T) {
	got := outputIssues(toolByName(t, "task_create"), []byte(`{"ok":true,"data":{"task_id":"T-0001"}}`))
	var paths []string
	for _, is := range got {
		paths = append(paths, is.Path)
	}
	if want := []string{"data.status", "data.created_at", "data.created_by", "data.sequence", "data.seq"}; !slices.Equal(paths, want) {
		t.Errorf("task_create with task_id alone: issues at %v, want %v", paths, want)
	}
	got = outputIssues(toolByName(t, "task_list"), []byte(`{"ok":true,"data":{"tasks":[{"task_id":"T-0001"}],"total_count":1,"returned_count":1,"offset":0,"limit":50}}`))
	if len(got) == 0 || got[0].Path != "data.tasks[0].title" {
		t.Errorf("a task_list row without its title: %v, want data.tasks[0].title is required first", got)
	}
	s, _ := newTestServer(t, nil, Options{})
	for _, tl := range s.tools {
		var walk func(path string, sc *schema)
		walk = func(path string, sc *schema) {
			if sc.items != nil {
				walk(path+"[]", sc.items)
			}
			for _, p := range sc.props {
				if p.s.absentOK == slices.Contains(sc.required, p.name) {
					t.Errorf("%s: %s.%s: absentOK %v, required %v", tl.name, path, p.name, p.s.absentOK, sc.required)
				}
				walk(path+"."+p.name, p.s)
			}
		}
		walk("data", result(tl.out))
	}
}

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/commands"
)

// envelopeOf checks a tools/call result's shape — one text item holding the
// same JSON as structuredContent, isError exactly for failures — and returns
// the envelope.
func envelopeOf(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("content = %v, want one item", res["content"])
	}
	item, _ := content[0].(map[string]any)
	if item["type"] != "text" {
		t.Fatalf("content item = %v, want text", item)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(item["text"].(string)), &fromText); err != nil {
		t.Fatalf("text is not JSON: %v", err)
	}
	structured, _ := res["structuredContent"].(map[string]any)
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(structured)
	if string(a) != string(b) {
		t.Fatalf("text %s and structuredContent %s differ", a, b)
	}
	isError, _ := res["isError"].(bool)
	if ok, _ := structured["ok"].(bool); ok == isError {
		t.Fatalf("ok = %v but isError = %v", structured["ok"], res["isError"])
	}
	return structured
}

func errorCode(t *testing.T, res map[string]any) string {
	t.Helper()
	env := envelopeOf(t, res)
	if env["ok"] == true {
		return CodeOK
	}
	return env["error"].(map[string]any)["code"].(string)
}

func TestInitializeVersions(t *testing.T) {
	for _, v := range []string{"2025-06-18", "2025-11-25"} {
		s, _ := newTestServer(t, (&fakeDo{}).do, Options{Name: "logbook", Version: "1.2.3"})
		c := startSession(t, s)
		resp := c.initializeAs(v)
		result := resp["result"].(map[string]any)
		if result["protocolVersion"] != v {
			t.Errorf("protocolVersion = %v, want %s", result["protocolVersion"], v)
		}
		info := result["serverInfo"].(map[string]any)
		if info["name"] != "logbook" || info["version"] != "1.2.3" {
			t.Errorf("serverInfo = %v", info)
		}
		caps := result["capabilities"].(map[string]any)
		if caps["tools"] == nil || caps["logging"] != nil {
			t.Errorf("capabilities = %v, want tools only", caps)
		}
	}
}

func TestToolsListOverTheWire(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	resp := c.call("tools/list", map[string]any{})
	tools := resp["result"].(map[string]any)["tools"].([]any)
	var names []string
	for _, x := range tools {
		tl := x.(map[string]any)
		name := tl["name"].(string)
		names = append(names, name)
		in := tl["inputSchema"].(map[string]any)
		if in["type"] != "object" || in["additionalProperties"] != false {
			t.Errorf("%s: inputSchema type %v additionalProperties %v", name, in["type"], in["additionalProperties"])
		}
		if out := tl["outputSchema"].(map[string]any); out["type"] != "object" {
			t.Errorf("%s: outputSchema type %v", name, out["type"])
		}
		ann := tl["annotations"].(map[string]any)
		if ann["readOnlyHint"] != !slices.Contains(mutating, name) {
			t.Errorf("%s: annotations %v", name, ann)
		}
		if tl["description"] == "" {
			t.Errorf("%s: no description", name)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(contractTools))
	if !slices.Equal(names, want) {
		t.Errorf("tools/list = %v\nwant %v", names, want)
	}
}

func TestEveryCallGoesThroughDoOnce(t *testing.T) {
	f := &fakeDo{}
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	c.initialize()
	calls := []struct {
		tool, args string
		wantArgs   string
		valid      bool
	}{
		{"server_ping", "", "{}", true},
		{"server_health", "null", "{}", true},
		{"task_create", `{ "title" : "Write it",  "project":"p" }`, `{ "title" : "Write it",  "project":"p" }`, true},
		{"task_create", `{"title":""}`, `{"title":""}`, false},
		{"task_list", `[1,2]`, `[1,2]`, false},
		{"no_such_tool", `{"x":1}`, `{"x":1}`, false},
		{"", ``, `{}`, false},
	}
	for _, tt := range calls {
		res := c.toolCall(tt.tool, tt.args)
		if code := errorCode(t, res); (code == CodeOK) != tt.valid {
			t.Errorf("%s %s: code %s, valid %v", tt.tool, tt.args, code, tt.valid)
		}
	}
	got := f.recorded()
	if len(got) != len(calls) {
		t.Fatalf("Do ran %d times for %d calls", len(got), len(calls))
	}
	for i, tt := range calls {
		call := got[i]
		if call.Name != tt.tool || string(call.Args) != tt.wantArgs || call.Client != "test-agent" || call.Encode == nil {
			t.Errorf("call %d = {%q %s %q}, want {%q %s %q}", i, call.Name, call.Args, call.Client, tt.tool, tt.wantArgs, "test-agent")
		}
		// The edge refuses only a tool it does not know; commands checks
		// the arguments.
		if unknown := s.byName[tt.tool] == nil; (call.Invalid != nil) != unknown {
			t.Errorf("call %d (%s): Invalid = %v", i, tt.tool, call.Invalid)
		}
		if call.Invalid != nil && !errors.Is(call.Invalid, commands.ErrInvalidInput) {
			t.Errorf("call %d: Invalid %v is not ErrInvalidInput", i, call.Invalid)
		}
	}
}

func TestInvalidArgumentsEnvelope(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	env := envelopeOf(t, c.toolCall("task_create", `{"title":"","project":"Bad","labels":["a",""],"extra":1}`))
	e := env["error"].(map[string]any)
	if e["code"] != CodeInvalidInput {
		t.Fatalf("code = %v", e["code"])
	}
	var paths []string
	for _, x := range e["details"].(map[string]any)["issues"].([]any) {
		paths = append(paths, x.(map[string]any)["path"].(string))
	}
	if want := []string{"title", "project", "labels[1]", "extra"}; !slices.Equal(paths, want) {
		t.Errorf("issue paths = %v, want %v", paths, want)
	}
}

func TestUnknownToolEnvelope(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	env := envelopeOf(t, c.toolCall("task_delete", `{}`))
	want := `{"code":"ERR_INVALID_INPUT","details":{"issues":[{"message":"unknown tool \"task_delete\"","path":"name"}]},"message":"invalid input: name: unknown tool \"task_delete\""}`
	if got, _ := json.Marshal(env["error"]); string(got) != want {
		t.Errorf("error = %s\nwant %s", got, want)
	}
}

func TestDoFailures(t *testing.T) {
	tests := []struct {
		name     string
		do       func(context.Context, commands.Call) ([]byte, error)
		wantCode string
		wantLog  string
		details  string
	}{
		{"storage", func(context.Context, commands.Call) ([]byte, error) {
			return nil, &commands.StorageError{Reason: "disk full", Err: errors.New("write /secret/path: ENOSPC")}
		}, CodeStorage, "", `{"reason":"disk full"}`},
		{"wrapped storage", func(context.Context, commands.Call) ([]byte, error) {
			return nil, errors.Join(errors.New("commit"), &commands.StorageError{Reason: "lock timeout"})
		}, CodeStorage, "", `{"reason":"lock timeout"}`},
		{"unmapped", func(context.Context, commands.Call) ([]byte, error) {
			return nil, errors.New("bolt at /secret/path: corrupt")
		}, CodeInternal, "bolt at /secret/path: corrupt", `{}`},
		{"no reply", func(context.Context, commands.Call) ([]byte, error) {
			return nil, nil
		}, CodeInternal, "returned no reply", `{}`},
		{"panic", func(context.Context, commands.Call) ([]byte, error) {
			panic("index out of range in /secret/path")
		}, CodeInternal, "goroutine", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, logs := newTestServer(t, tt.do, Options{})
			c := startSession(t, s)
			c.initialize()
			res := c.toolCall("task_create", `{"title":"t","project":"p"}`)
			env := envelopeOf(t, res)
			e := env["error"].(map[string]any)
			if e["code"] != tt.wantCode {
				t.Errorf("code = %v, want %s", e["code"], tt.wantCode)
			}
			if got, _ := json.Marshal(e["details"]); string(got) != tt.details {
				t.Errorf("details = %s, want %s", got, tt.details)
			}
			if raw, _ := json.Marshal(res); strings.Contains(string(raw), "secret") {
				t.Errorf("the cause leaked to the client: %s", raw)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log does not mention %q:\n%s", tt.wantLog, logs.String())
			}
			s.do = (&fakeDo{}).do
			c.ping() // the server lives on
		})
	}
}

func TestStages(t *testing.T) {
	s := New(nil, Options{})
	got := s.Stages()
	if want := []string{"recover", "validate", "audit+commit"}; !slices.Equal(got, want) {
		t.Errorf("Stages = %v, want %v", got, want)
	}
	got[0] = "changed"
	if s.Stages()[0] != "recover" {
		t.Errorf("Stages exposes its backing array")
	}
}

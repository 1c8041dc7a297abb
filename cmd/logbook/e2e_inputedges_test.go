package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EEchoesAreBounded: through the binary, an error quotes at most
// 64 characters (then "…") of any name the client sent: an unknown
// argument, a metadata key at any depth, an unknown tool, method or
// prompt; a resource's URI not at all. Each was echoed whole (an unknown
// argument's name twice in the envelope, so four times in the answer),
// up to the 4 MiB limit of a message.
func TestE2EEchoesAreBounded(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "echo.db")
	s := startE2E(t, e2eConfig{DB: db, Agent: "echo"})
	s.initialize("2025-11-25")
	long := strings.Repeat("k", 1<<20)
	key := strings.Repeat("m", 5000) // metadata holds at most 16 KiB
	clipped := func(s string) string { return s[:64] + "…" }
	var c struct {
		TaskID string `json:"task_id"`
	}
	s.ok("task_create", map[string]any{"title": "t", "project": "echo"}, &c)
	for _, tc := range []struct {
		tool, args, path string
	}{
		{"task_list", `{"` + long + `":1}`, clipped(long)},
		{"thought_record", `{"task_id":"` + c.TaskID + `","type":"plan","content":"c","metadata":{"` + key + `":{"` + key + `":1e999}}}`, "metadata." + clipped(key) + "." + clipped(key)},
		{long, `{}`, "name"},
	} {
		r := s.callRaw(tc.tool, json.RawMessage(tc.args))
		if r.code() != "ERR_INVALID_INPUT" {
			t.Fatalf("%.20s: %.300s", tc.tool, r.Result)
		}
		var d struct {
			Issues []struct{ Path, Message string }
		}
		if json.Unmarshal(r.Env.Error.Details, &d) != nil || len(d.Issues) != 1 || d.Issues[0].Path != tc.path {
			t.Errorf("%.20s: issues %.300s, want one at %.100s", tc.tool, r.Env.Error.Details, tc.path)
		}
		if len(r.Result) > 2048 {
			t.Errorf("%.20s: an answer of %d bytes: %.300s", tc.tool, len(r.Result), r.Result)
		}
	}
	for _, tc := range []struct {
		method string
		params any
		says   string
	}{
		// Past 256 KiB besides a tool call's name and arguments, a message
		// is refused before the SDK reads it (maxBesideArguments).
		{long, map[string]any{}, `Invalid Request: 1048`},
		{long[:1000], map[string]any{}, `method not found: "` + long[:40]},
		{"prompts/get", map[string]any{"name": long}, "Invalid Request: 1048"},
		{"prompts/get", map[string]any{"name": long[:1000]}, `unknown prompt "` + long[:40]},
		{"resources/read", map[string]any{"uri": long}, "Invalid Request: 1048"},
		{"resources/read", map[string]any{"uri": long[:1000]}, "Resource not found"},
	} {
		m := s.request(tc.method, tc.params)
		b, _ := json.Marshal(m.Error)
		if m.Error == nil || !strings.HasPrefix(m.Error.Message, tc.says) || len(b) > 512 {
			t.Errorf("%.20s: %.300s (%d bytes), want an error saying %.60s…, bounded", tc.method, b, len(b), tc.says)
		}
	}
	s.ping()
}

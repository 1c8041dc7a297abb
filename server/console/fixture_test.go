package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/skills"
)

// testToken is the one token the test consoles accept.
const testToken = "lbk_test_token"

// hostileTitle must render as text, never as markup.
const hostileTitle = `<script>alert(1)</script>`

// longWord is text without a space, as long as an assignee may be.
var longWord = strings.Repeat("x", 128)

// bidiText holds every bidirectional control character (an override shows
// "on" as "no"; one left open reorders the text after it).
const bidiText = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

// fixture is a populated ledger served by a console.
type fixture struct {
	store   *boltstore.Store
	console *console // what srv serves
	srv     *httptest.Server
	call    func(tool string, args map[string]any) map[string]any // a tool call, which must succeed
}

// newFixture writes a small but complete history on a fixed clock — tasks in
// several states, thoughts of several kinds, a finalized and an open audit
// session, a task with a hostile title — and serves it.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	var mu sync.Mutex
	clock := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "ledger.db"), boltstore.Options{Create: true, Hold: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	svc, err := commands.New(l, commands.Options{Agent: "agent-a", Skills: &skills.Set{}, Version: "test", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	enc := mcp.New(svc, mcp.Options{}).Encode
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(args)
		var cmd *commands.Command
		for _, c := range commands.Commands {
			if c.Rules().Name == tool {
				cmd = c
			}
		}
		reply, err := svc.Do(context.Background(), commands.Call{Name: tool, Command: cmd, Args: raw, Client: "test", Encode: enc})
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			OK   bool           `json:"ok"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(reply, &env); err != nil || !env.OK {
			t.Fatalf("%s %v: %s", tool, args, reply)
		}
		return env.Data
	}
	a := call("task_create", map[string]any{"title": "Ship the ledger", "project": "core", "priority": "high", "labels": []string{"ledger"}})["task_id"]
	b := call("task_create", map[string]any{"title": "Write the verifier", "project": "core", "parent_id": a,
		"description": "Check every hash.\nThen every link."})["task_id"]
	c := call("task_create", map[string]any{"title": "Release notes", "project": "docs"})["task_id"]
	s1 := call("audit_session_start", map[string]any{"task_id": a, "auditor_id": "security-review", "scope": "deep", "reason": "release sign-off"})["session_id"]
	for _, st := range []string{"todo", "in_progress"} {
		call("task_update", map[string]any{"task_id": b, "status": st})
	}
	call("thought_record", map[string]any{"task_id": b, "type": "plan", "content": "Hash everything, then walk the chain.", "session_id": s1})
	call("thought_record", map[string]any{"task_id": b, "type": "risk", "content": "A long ledger could hold the lock: read in chunks."})
	call("task_update", map[string]any{"task_id": b, "status": "review", "progress": 90})
	call("thought_record", map[string]any{"task_id": b, "type": "decision", "content": "Chunked reads of 8,192 events."})
	call("task_update", map[string]any{"task_id": b, "status": "done"})
	call("merkle_finalize", map[string]any{"session_id": s1})
	call("audit_session_start", map[string]any{"task_id": c, "auditor_id": "docs-lead"})
	call("task_update", map[string]any{"task_id": c, "status": "todo"})
	call("task_update", map[string]any{"task_id": c, "assignee": longWord}) // wraps: no page wider than the window
	h := call("task_create", map[string]any{"title": hostileTitle, "project": "docs", "description": `<img src=x onerror=alert(2)>`})["task_id"]
	call("task_update", map[string]any{"task_id": h, "status": "todo"})
	call("thought_record", map[string]any{"task_id": h, "type": "discovery", "content": `"><script>alert(3)</script>`})
	call("task_update", map[string]any{"task_id": h, "status": "blocked", "blocked_reason": "</dd><script>alert(4)</script>"})
	// Bidirectional controls, which would reorder the text around them.
	call("task_update", map[string]any{"task_id": h, "assignee": "alice" + bidiText, "labels": []string{"a" + bidiText, "b"}})
	call("thought_record", map[string]any{"task_id": h, "type": "decision", "content": "approved: \u202eon\u202c amount 100" + bidiText})
	call("audit_session_start", map[string]any{"task_id": h, "auditor_id": "rev" + bidiText + longWord[:100], "reason": "why" + bidiText})

	auth := func(_ context.Context, tok string) (bool, error) { return tok == testToken, nil }
	con := newConsole(Options{Store: l, Authenticate: auth, ScratchDir: t.TempDir()})
	f := &fixture{store: l, console: con, srv: httptest.NewServer(con.routes()), call: call}
	t.Cleanup(f.srv.Close)
	return f
}

// get fetches path with the bearer token (if tok is not empty), following
// no redirect.
func (f *fixture) get(t testing.TB, path, tok string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

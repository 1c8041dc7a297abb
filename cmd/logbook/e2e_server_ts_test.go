package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestServerTypeScriptClient runs e2e/http.mjs: the official MCP TypeScript
// SDK's StreamableHTTPClientTransport against a running `logbook server`,
// with a full, a scoped, a read-only and a revoked token (see http.mjs);
// the event stream it opens after initialize (GET) is answered 405, which
// it takes as the server offering none.
// Without node or node_modules it fails, unless LOGBOOK_SKIP_NODE=1.
func TestServerTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := e2eNode(t, "the TypeScript SDK test over HTTP")
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)
	full, _ := addToken(t, db, "--agent", "ts-agent")
	scoped, _ := addToken(t, db, "--agent", "ts-scoped", "--tools", "task_get,task_list,server_ping")
	ro, _ := addToken(t, db, "--agent", "ts-read-only", "--read-only")
	revoked, _ := addToken(t, db, "--agent", "ts-revoked")
	if r := run(t, "token", "revoke", "--db", db, "--agent", "ts-revoked"); r.code != 0 {
		t.Fatalf("revoke: %v", r)
	}

	cmd := exec.CommandContext(e2eHangBound(t), node, "http.mjs", "--url", s.url, "--token", full, "--scoped-token", scoped,
		"--scope", "server_ping,task_get,task_list", "--read-only-token", ro, "--revoked-token", revoked)
	cmd.Dir = "e2e"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var sum struct {
		OK          bool              `json:"ok"`
		SDKVersion  string            `json:"sdk_version"`
		Protocols   map[string]string `json:"protocols"`
		ToolsCalled []string          `json:"tools_called"`
		Calls       int               `json:"calls"`
		Checks      int               `json:"checks"`
		GetStatuses []int             `json:"get_statuses"`
		Failures    []string          `json:"failures"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("http.mjs (%v) printed no JSON summary: %v\nstdout:\n%s\nstderr:\n%s", runErr, err, e2eTrunc(stdout.String(), 4000), e2eTrunc(stderr.String(), 4000))
	}
	for _, f := range sum.Failures {
		t.Errorf("http.mjs: %s", e2eTrunc(f, 2000))
	}
	if runErr != nil && len(sum.Failures) == 0 {
		t.Errorf("http.mjs exited with %v and no failures\nstderr:\n%s", runErr, e2eTrunc(stderr.String(), 4000))
	}
	t.Logf("@modelcontextprotocol/sdk %s over Streamable HTTP: %d calls, %d checks, protocols %v", sum.SDKVersion, sum.Calls, sum.Checks, sum.Protocols)
	if len(sum.ToolsCalled) != 14 {
		t.Errorf("tools answered ok: %v, want all 14", sum.ToolsCalled)
	}
	// The SDK opens an event stream (GET) after initialize; the server
	// offers none (405), and the client carries on.
	if len(sum.GetStatuses) == 0 || slices.ContainsFunc(sum.GetStatuses, func(s int) bool { return s != 405 }) {
		t.Errorf("the SDK's GETs were answered %v, want 405 each", sum.GetStatuses)
	}
	if sum.Protocols["2025-06-18"] != "2025-06-18" {
		t.Errorf("forcing 2025-06-18 negotiated %q", sum.Protocols["2025-06-18"])
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("server exited %d:\n%s", code, s.stderr.String())
	}

	e2eVerify(t, db)
	_, events := e2eReadLedger(t, db, 0)
	recorded := 0
	agents := []string{"ts-agent", "ts-scoped", "ts-read-only"}
	for _, e := range events {
		if e.Call == nil {
			continue
		}
		recorded++
		if !slices.Contains(agents, e.Actor) || !strings.HasPrefix(e.Call.ClientClaim, "ts-") {
			t.Errorf("seq %d: actor %q claim %q", e.Seq, e.Actor, e.Call.ClientClaim)
		}
	}
	if recorded != sum.Calls {
		t.Errorf("%d tool.called events, %d calls answered", recorded, sum.Calls)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// e2eClientSummary is what e2e/client.mjs prints.
type e2eClientSummary struct {
	OK              bool              `json:"ok"`
	SDKVersion      string            `json:"sdk_version"`
	Protocols       map[string]string `json:"protocols"`
	ToolsListed     []string          `json:"tools_listed"`
	ToolsCalled     []string          `json:"tools_called"`
	ErrorCodesSeen  []string          `json:"error_codes_seen"`
	Unreachable     map[string]string `json:"unreachable"`
	Calls           int               `json:"calls"`
	CallsUnrecorded int               `json:"calls_unrecorded"`
	Checks          int               `json:"checks"`
	Failures        []string          `json:"failures"`
	Notes           []string          `json:"notes"`
}

// e2eHangBound is the context a node suite runs in: a bound for a hang,
// not a budget. The suites run race-built, beside the package's other
// tests, on two cores; a fixed limit was passed under load (the schema
// sweep, killed at 5 minutes mid-sweep). It ends a little before go
// test's own -timeout, so that a hang is reported as the suite's.
func e2eHangBound(t *testing.T) context.Context {
	deadline, ok := t.Deadline()
	if !ok {
		return context.Background()
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-30*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// e2eNode returns the node binary that runs the e2e/*.mjs scripts, once it
// has checked that `make e2e-deps` installed their TypeScript SDK. Without
// either the test fails, saying which is missing, or is skipped when
// LOGBOOK_SKIP_NODE=1. what names the test in the message.
func e2eNode(t *testing.T, what string) string {
	t.Helper()
	needNode := func(msg string) {
		t.Helper()
		if os.Getenv("LOGBOOK_SKIP_NODE") == "1" {
			t.Skip("LOGBOOK_SKIP_NODE=1: " + msg)
		}
		t.Fatal(msg + " (set LOGBOOK_SKIP_NODE=1 to skip this test)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needNode("node is not installed: " + what + " needs Node.js >= 20")
	}
	if _, err := os.Stat(filepath.Join("e2e", "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		needNode("cmd/logbook/e2e/node_modules is missing: run `make e2e-deps` (npm ci --prefix cmd/logbook/e2e)")
	}
	return node
}

// TestE2ETypeScriptClient runs e2e/client.mjs: the official MCP TypeScript
// SDK client launching the real binary over stdio, calling every tool and
// provoking every reachable error code, with the SDK validating each
// structuredContent against the tool's outputSchema. Its dependencies come
// from `make e2e-deps` (npm ci); the test never touches the network. Without
// node or node_modules it fails, unless LOGBOOK_SKIP_NODE=1.
func TestE2ETypeScriptClient(t *testing.T) {
	t.Parallel()
	node := e2eNode(t, "the TypeScript SDK end-to-end test")
	bin := e2eBinary(t)
	work := t.TempDir()

	// (client.mjs bounds itself at 4 minutes, so as to print what it
	// waited for; alone it runs in about 13 s.)
	cmd := exec.CommandContext(e2eHangBound(t), node, "client.mjs", "--bin", bin, "--skills", e2eSkills(t), "--dir", work)
	cmd.Dir = "e2e"
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1 exitcode=66")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	var sum e2eClientSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("client.mjs (%v) printed no JSON summary: %v\nstdout:\n%s\nstderr:\n%s", runErr, err, e2eTrunc(stdout.String(), 4000), e2eTrunc(stderr.String(), 4000))
	}
	for _, f := range sum.Failures {
		t.Errorf("client.mjs: %s", e2eTrunc(f, 2000))
	}
	for _, n := range sum.Notes {
		t.Logf("client.mjs note: %s", n)
	}
	if runErr != nil && len(sum.Failures) == 0 {
		t.Errorf("client.mjs exited with %v and no failures\nstderr:\n%s", runErr, e2eTrunc(stderr.String(), 4000))
	}
	t.Logf("@modelcontextprotocol/sdk %s: %d calls, %d checks; protocols %v", sum.SDKVersion, sum.Calls, sum.Checks, sum.Protocols)

	tools := []string{"audit_session_start", "audit_verify_chain", "finding_record", "knowledge_search", "learning_record", "learning_supersede",
		"memory_history", "memory_read", "memory_write", "merkle_finalize", "merkle_root", "server_health", "server_ping",
		"skill_list", "task_create", "task_get", "task_list", "task_next_actions", "task_update", "thought_record", "thought_record_list"}
	if !slices.Equal(sum.ToolsCalled, tools) {
		t.Errorf("tools called ok: %v\nwant %v", sum.ToolsCalled, tools)
	}
	wantCodes := []string{"ERR_ALREADY_FINALIZED", "ERR_DUPLICATE", "ERR_INVALID_INPUT", "ERR_INVALID_TRANSITION", "ERR_PROJECT_NOT_FOUND", "ERR_READ_ONLY",
		"ERR_SESSION_NOT_FOUND", "ERR_STORAGE", "ERR_TASK_CLOSED", "ERR_TASK_NOT_FOUND", "ERR_WRITEBACK_REQUIRED"}
	if !slices.Equal(sum.ErrorCodesSeen, wantCodes) {
		t.Errorf("error codes seen: %v\nwant %v (ERR_CIRCULAR_DEPENDENCY, ERR_FORBIDDEN and ERR_INTERNAL are unreachable over stdio: %v)", sum.ErrorCodesSeen, wantCodes, sum.Unreachable)
	}
	if sum.Protocols["2025-06-18"] != "2025-06-18" {
		t.Errorf("forcing protocol 2025-06-18 negotiated %q", sum.Protocols["2025-06-18"])
	}

	// The ledgers the client wrote: every answered call that committed is
	// exactly one tool.called event, and each file is one unbroken chain.
	recorded := 0
	for _, name := range []string{"client.db", "proto-2025-06-18.db"} {
		db := filepath.Join(work, name)
		if _, err := os.Stat(db); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		e2eVerify(t, db)
		_, events := e2eReadLedger(t, db, 0)
		for _, e := range events {
			if e.Call != nil {
				recorded++
			}
		}
	}
	if want := sum.Calls - sum.CallsUnrecorded; recorded != want {
		t.Errorf("tool.called events: %d, want %d (calls %d, of which ERR_STORAGE %d)", recorded, want, sum.Calls, sum.CallsUnrecorded)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// TestE2ESchemaSweep runs e2e/schemasweep.mjs: thousands of argument variants
// of every tool, each judged by a strict JSON Schema 2020-12 validator
// against the tool's published inputSchema and sent to the real binary
// through the official TypeScript SDK client. Arguments the schema refuses
// must be refused (ERR_INVALID_INPUT at the field), and every failure must be
// the documented envelope. Like TestE2ETypeScriptClient it needs node and
// `make e2e-deps`, unless LOGBOOK_SKIP_NODE=1.
func TestE2ESchemaSweep(t *testing.T) {
	t.Parallel()
	node := e2eNode(t, "the schema sweep")
	bin := e2eBinary(t)
	// The sweep is thousands of calls to the race-built binary: 3 minutes
	// alone on a loaded 2-core machine, past a fixed 5 minutes there
	// beside the package's other tests (killed mid-sweep).
	ctx := e2eHangBound(t)
	cmd := exec.CommandContext(ctx, node, "schemasweep.mjs", "--bin", bin, "--skills", e2eSkills(t), "--dir", t.TempDir())
	cmd.Dir = "e2e"
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1 exitcode=66")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	var sum struct {
		OK                        bool     `json:"ok"`
		Calls                     int      `json:"calls"`
		Cases                     int      `json:"cases"`
		SchemaAllowsServerRefuses int      `json:"schema_allows_server_refuses"`
		Failures                  []string `json:"failures"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("schemasweep.mjs (%v) printed no JSON summary: %v\nstdout:\n%s\nstderr:\n%s", runErr, err, e2eTrunc(stdout.String(), 4000), e2eTrunc(stderr.String(), 4000))
	}
	for _, f := range sum.Failures {
		t.Errorf("schemasweep.mjs: %s", e2eTrunc(f, 2000))
	}
	if runErr != nil && len(sum.Failures) == 0 {
		t.Errorf("schemasweep.mjs exited with %v and no failures\nstderr:\n%s", runErr, e2eTrunc(stderr.String(), 4000))
	}
	if !sum.OK && len(sum.Failures) == 0 {
		t.Error("schemasweep.mjs did not report ok")
	}
	if sum.Cases < 3000 {
		t.Errorf("schemasweep.mjs tried %d cases, want the full sweep (at least 3000)", sum.Cases)
	}
	t.Logf("%d cases, %d calls; the server refused %d that the schema allows (rules beyond the schema)", sum.Cases, sum.Calls, sum.SchemaAllowsServerRefuses)
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2EIDsKeptExactly pipelines task_create calls, each followed by its
// notifications/cancelled, through the real binary under ids that collide
// as float64s or as string and number: every request gets exactly one reply
// under its exact id, every call is committed once and audited once.
func TestE2EIDsKeptExactly(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ids.db")
	a := startAgent(t, "ids", "--db", db, "--skills", "../../fixtures/skills")
	ids := []string{`1`, `1.0`, `1.5`, `"1"`, `9007199254740993`, `9007199254740992`, `-0`, `0`, `1e400`,
		`"\u0031"`, `123456789012345678901234567890`, `"` + strings.Repeat("i", 1000) + `"`}
	var b strings.Builder
	for i, id := range ids {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"t%d","project":"ids"}}}`+"\n", id, i)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`+"\n", id)
	}
	if _, err := a.in.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	replies := map[string]int{}
	tasks := map[string]bool{}
	for range ids {
		line, err := a.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("read: %v\nstderr:\n%s", err, a.stderr)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result *struct {
				StructuredContent struct {
					OK   bool `json:"ok"`
					Data struct {
						TaskID string `json:"task_id"`
					} `json:"data"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(line, &m); err != nil || m.Result == nil || !m.Result.StructuredContent.OK {
			t.Fatalf("reply %.300s", line)
		}
		replies[string(m.ID)]++
		tasks[m.Result.StructuredContent.Data.TaskID] = true
	}
	for _, id := range ids {
		if replies[id] != 1 {
			t.Errorf("id %.40s: %d replies, want 1", id, replies[id])
		}
	}
	if len(tasks) != len(ids) {
		t.Errorf("%d distinct tasks for %d calls: %v", len(tasks), len(ids), tasks)
	}
	a.close()
	r := run(t, "replay", "--db", db, "--type", "tool.called")
	wantExit(t, r, 0, "replay")
	if n := strings.Count(r.stdout, "\n"); n != len(ids) {
		t.Errorf("%d tool.called events for %d calls", n, len(ids))
	}
}

// TestE2EClosedStdout: a client that closes its end of the server's stdout
// does not kill the server by SIGPIPE: it says why on stderr and exits with
// an exit code. So does the bridge (serve --connect), which SIGPIPE killed.
func TestE2EClosedStdout(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "pipe.db")
	s := startHTTPServer(t, filepath.Join(t.TempDir(), "server.db"))
	token, _ := addToken(t, s.db, "--agent", "bridged")
	for name, args := range map[string][]string{
		"serve":  {"serve", "--db", db, "--skills", "../../fixtures/skills"},
		"bridge": {"serve", "--connect", s.url, "--token-env", "LB_T"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(logbookBin, args...)
			cmd.Env = append(os.Environ(), "LOGBOOK_DB=", "LOGBOOK_AGENT=", "LB_T="+token)
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			out.Close()
			defer in.Close()
			// Calls in flight when the pipe breaks, and the handshake.
			for i := range 4 {
				fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`+"\n", i)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(60 * time.Second): // a hang guard, not a timing assertion
				cmd.Process.Kill()
				t.Fatalf("%s did not exit after its stdout closed\nstderr:\n%s", name, stderr)
			}
			var ee *exec.ExitError
			if err == nil || !errors.As(err, &ee) {
				t.Fatalf("%s exited with %v, want an exit code", name, err)
			}
			if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
				t.Fatalf("%s was killed by signal %v\nstderr:\n%s", name, ws.Signal(), stderr)
			}
			if !strings.Contains(stderr.String(), "broken pipe") {
				t.Errorf("stderr does not say why:\n%s", stderr)
			}
		})
	}
}

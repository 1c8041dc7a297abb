package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/skills"
)

// The tests of this package run the real binary, built once by TestMain, the
// way an operator or an auditor runs it: flags in, exit code and streams out.

// logbookBin is the path of the binary under test.
var logbookBin string

// testDir is TestMain's directory, removed when every test has run: the
// binary and the ledgers built once for the package (sharedHealthyLedger).
var testDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "logbook-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	testDir = dir
	logbookBin = filepath.Join(dir, "logbook")
	build := exec.Command("go", "build", "-o", logbookBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build logbook:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary gave.
type result struct {
	code           int
	stdout, stderr string
	maxRSSKB       int64 // the process's peak resident set
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run executes the binary with args and returns its exit code and output.
// It fails the test only if the binary could not be started or hung.
func run(t testing.TB, args ...string) result {
	t.Helper()
	return runIn(t, nil, args...)
}

// runIn is run with stdin.
func runIn(t testing.TB, stdin io.Reader, args ...string) result {
	t.Helper()
	return runWith(t, stdin, nil, args...)
}

// runEnv is run with more environment variables (NAME=value).
func runEnv(t testing.TB, env []string, args ...string) result {
	t.Helper()
	return runWith(t, nil, env, args...)
}

func runWith(t testing.TB, stdin io.Reader, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, logbookBin, args...)
	cmd.Env = append(append(os.Environ(), "LOGBOOK_DB=", "LOGBOOK_AGENT="), env...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
	default:
		t.Fatalf("logbook %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	r := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSKB = ru.Maxrss
	}
	return r
}

// wantExit fails the test unless r exited with code.
func wantExit(t testing.TB, r result, code int, what string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: want exit %d, got %s", what, code, r)
	}
}

// decodeJSON decodes the single JSON value on stdout.
func decodeJSON(t testing.TB, r result, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r)
	}
}

// workload makes tool calls against a ledger in-process, through the same
// commands.Service and reply encoding the server uses.
type workload struct {
	t   testing.TB
	l   *boltstore.Store
	svc *commands.Service
	enc func(any, error) (string, []byte)
}

// newLedger creates a ledger at path and returns a workload on it. Close it
// (or let the test's cleanup do so) before running the binary on the file.
func newLedger(t testing.TB, path, agent string) *workload {
	t.Helper()
	return newLedgerClock(t, path, agent, nil)
}

// newLedgerClock is newLedger with a clock for event times and call
// durations (nil: the real one); a fixed clock makes the same calls give the
// same ledger, hashes included.
func newLedgerClock(t testing.TB, path, agent string, now func() time.Time) *workload {
	t.Helper()
	l, err := boltstore.Open(path, boltstore.Options{Create: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	set, skipped, err := skills.Load(filepath.Join("..", "..", "fixtures", "skills"))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := commands.New(l, commands.Options{Agent: agent, Skills: set, Skipped: skipped, Version: "test", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.New(svc, mcp.Options{Version: "test"})
	w := &workload{t: t, l: l, svc: svc, enc: srv.Encode}
	t.Cleanup(func() { l.Close() })
	return w
}

// call runs one tool call and returns the envelope's data; it fails the test
// on a failure envelope.
func (w *workload) call(tool string, args any) map[string]any {
	w.t.Helper()
	env := w.try(tool, args)
	if env["ok"] != true {
		w.t.Fatalf("%s %v: %v", tool, args, env)
	}
	data, _ := env["data"].(map[string]any)
	return data
}

// commandNamed is the command whose domain rules are named name, or nil.
func commandNamed(name string) *commands.Command {
	for _, c := range commands.Commands {
		if c.Rules().Name == name {
			return c
		}
	}
	return nil
}

// try runs one tool call and returns the whole envelope.
func (w *workload) try(tool string, args any) map[string]any {
	w.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		w.t.Fatal(err)
	}
	reply, err := w.svc.Do(context.Background(), commands.Call{Name: tool, Command: commandNamed(tool), Args: raw, Client: "test", Encode: w.enc})
	if err != nil {
		w.t.Fatalf("%s: %v", tool, err)
	}
	var env map[string]any
	if err := json.Unmarshal(reply, &env); err != nil {
		w.t.Fatal(err)
	}
	return env
}

// story makes a small but complete history: tasks through several states,
// thoughts, one finalized and one open audit session. It returns the ids.
func (w *workload) story() {
	w.t.Helper()
	a := w.call("task_create", map[string]any{"title": "Ship the ledger", "project": "core", "priority": "high", "labels": []string{"ledger"}})["task_id"]
	b := w.call("task_create", map[string]any{"title": "Write the verifier", "project": "core", "parent_id": a})["task_id"]
	c := w.call("task_create", map[string]any{"title": "Release notes", "project": "docs"})["task_id"]
	s1 := w.call("audit_session_start", map[string]any{"task_id": a, "auditor_id": "auditor", "scope": "deep"})["session_id"]
	for _, st := range []string{"todo", "in_progress"} {
		w.call("task_update", map[string]any{"task_id": b, "status": st})
	}
	w.call("thought_record", map[string]any{"task_id": b, "type": "plan", "content": "hash everything", "session_id": s1})
	w.call("task_update", map[string]any{"task_id": b, "status": "review", "progress": 90})
	w.call("thought_record", map[string]any{"task_id": b, "type": "decision", "content": "chunked reads"})
	w.call("task_update", map[string]any{"task_id": b, "status": "done"})
	w.call("merkle_finalize", map[string]any{"session_id": s1})
	w.call("audit_session_start", map[string]any{"task_id": c, "auditor_id": "auditor"})
	w.call("task_update", map[string]any{"task_id": c, "status": "cancelled"})
}

// healthyLedger writes a ledger with the story and some filler calls and
// returns its path, closed.
func healthyLedger(t testing.TB, fillers int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	w := newLedger(t, path, "agent-a")
	w.story()
	for i := range fillers {
		id := w.call("task_create", map[string]any{"title": fmt.Sprintf("filler %d", i), "project": "fill"})["task_id"]
		w.call("thought_record", map[string]any{"task_id": id, "type": "analysis", "content": fmt.Sprintf("note %d", i)})
	}
	w.l.Close()
	return path
}

// sharedHealthyLedger is healthyLedger(t, fillers) built once for the
// package, for the tests that copy it before changing it and otherwise only
// read it: a 2,000-filler ledger takes 4,000 calls to make.
func sharedHealthyLedger(t testing.TB, fillers int) string {
	t.Helper()
	sharedLedgers.Lock()
	defer sharedLedgers.Unlock()
	path := filepath.Join(testDir, fmt.Sprintf("healthy-%d.db", fillers))
	if !sharedLedgers.built[path] {
		copyFile(t, healthyLedger(t, fillers), path) // made in t's TempDir, gone after t
		sharedLedgers.built[path] = true
	}
	return path
}

var sharedLedgers = struct {
	sync.Mutex
	built map[string]bool
}{built: map[string]bool{}}

// headOf returns the ledger's head seq.
func headOf(t testing.TB, path string) uint64 {
	t.Helper()
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var head uint64
	if err := l.View(func(tx *boltstore.Tx) error { head = tx.Head().Seq; return nil }); err != nil {
		t.Fatal(err)
	}
	return head
}

// copyFile copies src to a new file dst.
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestServeAgentRefused: serve --agent takes no name that would look like
// another's in a terminal or the console: control characters, or format
// characters (a zero-width space, a bidirectional override).
func TestServeAgentRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	for _, agent := range []string{"a\nb", "alice\u200b", "\u202eecila", "\u200c", " ", "ali\u200dce", "alice\u3164", "alice "} {
		r := run(t, "serve", "--db", db, "--agent", agent)
		if r.code != 2 || !strings.Contains(r.stderr, "--agent must") || r.stdout != "" {
			t.Errorf("--agent %q: exit %d, stdout %q, stderr %q; want 2 and why", agent, r.code, r.stdout, r.stderr)
		}
		// The same name from the environment is refused naming the
		// variable, not a flag that was never given.
		r = runEnv(t, []string{"LOGBOOK_AGENT=" + agent}, "serve", "--db", db)
		if r.code != 2 || !strings.Contains(r.stderr, "LOGBOOK_AGENT (the default of --agent) must") || r.stdout != "" {
			t.Errorf("LOGBOOK_AGENT=%q: exit %d, stdout %q, stderr %q; want 2 naming LOGBOOK_AGENT", agent, r.code, r.stdout, r.stderr)
		}
	}
	// A flag given empty is not taken as left out (attack5): --connect ""
	// opened the local ledger (.logbook/ledger.db, or --db) instead of
	// bridging to the server, --agent "" set LOGBOOK_AGENT aside.
	for _, args := range [][]string{{"--connect", ""}, {"--agent", ""}} {
		r := runEnv(t, []string{"LOGBOOK_AGENT=alice"}, append([]string{"serve", "--db", db}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, args[0]+` "" names no`) || r.stdout != "" {
			t.Errorf("serve %s '': exit %d, stdout %q, stderr %q; want 2 and why", args[0], r.code, r.stdout, r.stderr)
		}
	}
	// A user or password in --connect's URL was ignored (attack5): it is
	// refused, and never repeated.
	for _, u := range []string{"http://alice:s3cret@127.0.0.1:1/mcp", "https://s3cret@h/mcp", "http://a:s3cret@[::1/mcp", "ftp://a:s3cret@h/"} {
		r := runEnv(t, []string{"LOGBOOK_TOKEN=lbk_x"}, "serve", "--connect", u)
		if r.code != 2 || strings.Contains(r.stderr, "s3cret") || !strings.Contains(r.stderr, "--connect") || r.stdout != "" {
			t.Errorf("serve --connect %s: exit %d, stdout %q, stderr %q; want 2, the password not repeated", u, r.code, r.stdout, r.stderr)
		}
	}
	// The bridge's flags and a local ledger's exclude each other: each
	// local one is refused beside --connect, and --token-env without it (a
	// docs review: it was accepted there, and did nothing).
	for _, flag := range [][]string{{"--db", db}, {"--agent", "a"}, {"--project", "p"}, {"--skills", "s"}, {"--read-only"}, {"--lock-timeout", "1s"}} {
		r := runEnv(t, []string{"LOGBOOK_TOKEN=lbk_x"}, append([]string{"serve", "--connect", "http://127.0.0.1:1/mcp"}, flag...)...)
		if r.code != 2 || !strings.Contains(r.stderr, flag[0]+" configures a local ledger") || r.stdout != "" {
			t.Errorf("serve --connect %s: exit %d, stdout %q, stderr %q; want 2 and why", flag, r.code, r.stdout, r.stderr)
		}
	}
	if r := run(t, "serve", "--db", db, "--token-env", "MY_TOKEN"); r.code != 2 || !strings.Contains(r.stderr, "--token-env") || !strings.Contains(r.stderr, "--connect only") || r.stdout != "" {
		t.Errorf("serve --token-env without --connect: exit %d, stdout %q, stderr %q; want 2 and why", r.code, r.stdout, r.stderr)
	}
	// So is every text flag given empty, in every command (noneEmpty):
	// each was taken as left out, for its default.
	for _, args := range [][]string{{"serve", "--skills", ""}, {"serve", "--connect", "http://127.0.0.1:1/mcp", "--token-env", ""},
		{"server", "--admin-socket", ""}, {"token", "add", "--agent", "a", "--issuer", ""}, {"checkpoint", "--origin", ""},
		{"replay", "--type", ""}, {"tasks", "--project", ""}, {"verify", "--db", ""}, {"migrate", "--stream", ""}} {
		if !slices.Contains(args, "--db") && args[0] != "migrate" {
			args = append(args, "--db", db)
		}
		r := runEnv(t, []string{"LOGBOOK_TOKEN=lbk_x"}, args...)
		flagName := ""
		for i, a := range args {
			if i+1 < len(args) && args[i+1] == "" {
				flagName = a
			}
		}
		if r.code != 2 || !strings.Contains(r.stderr, flagName+` "" names no value`) || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 naming %s", args, r.code, r.stdout, r.stderr, flagName)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused serve created the ledger: %v", err)
	}
}

package main

// Helpers for the end-to-end tests (e2e_*_test.go): they build the real
// binary, launch `logbook serve` as a child process the way an MCP host
// does, and speak newline-delimited JSON-RPC to it over its real stdin and
// stdout. Every line the server writes to stdout must be JSON; stderr is
// kept for the tests to inspect.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// e2eTimeout bounds every wait on the server: a hung server fails the test
// instead of hanging it.
const e2eTimeout = 60 * time.Second

var (
	e2eBinOnce sync.Once
	e2eBinPath string
	e2eBinErr  error
)

// e2eBinary is the binary under test with the race detector when the tests
// run with it (built once, in TestMain's directory), so that data races in
// the server under real concurrent stdio load fail the tests too; without
// -race it is TestMain's build. Nothing outlives the run: a directory of
// builds shared between runs in os.TempDir() filled the disk with a binary
// per checkout, and one made by another user (root, then a CI user) made
// every test here fail to build into it.
func e2eBinary(t testing.TB) string {
	t.Helper()
	if !e2eRace {
		return logbookBin
	}
	e2eBinOnce.Do(func() {
		e2eBinPath = filepath.Join(testDir, "logbook-race")
		if out, err := exec.Command("go", "build", "-race", "-o", e2eBinPath, ".").CombinedOutput(); err != nil {
			e2eBinErr = fmt.Errorf("go build -race: %v\n%s", err, out)
		}
	})
	if e2eBinErr != nil {
		t.Fatal(e2eBinErr)
	}
	return e2eBinPath
}

// e2eSkills is the repository's skill fixtures: 3 valid, 2 skipped.
func e2eSkills(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "skills"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// e2eConfig is how one `logbook serve` is launched.
type e2eConfig struct {
	DB       string
	Agent    string
	Project  string
	Skills   string // default: the fixtures
	ReadOnly bool
	Env      []string // extra KEY=VALUE
	Args     []string // extra flags of serve
	// IgnoreHUP starts serve with SIGHUP ignored, as nohup does.
	IgnoreHUP bool
}

// e2eMessage is one JSON-RPC message from the server.
type e2eMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *e2eRPCError    `json:"error,omitempty"`
}

type e2eRPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// e2eServer is one running `logbook serve` and a JSON-RPC client on its stdio.
type e2eServer struct {
	t      testing.TB
	cfg    e2eConfig
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *e2eBuffer

	wmu    sync.Mutex
	nextID atomic.Int64

	mu       sync.Mutex
	pending  map[string]chan e2eMessage
	orphans  []e2eMessage // answers to no pending request (e.g. id null)
	badLines []string     // stdout lines that are not JSON-RPC
	lines    int

	exited  chan struct{} // closed once stdout ended and the process was reaped
	waitErr error
}

// e2eBuffer is a bytes.Buffer safe for concurrent use.
type e2eBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *e2eBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *e2eBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startE2E launches `logbook serve` (not yet initialized). The process is
// stopped, and its stdout and stderr checked, when the test ends.
func startE2E(t testing.TB, cfg e2eConfig) *e2eServer {
	t.Helper()
	if cfg.Skills == "" {
		cfg.Skills = e2eSkills(t)
	}
	args := []string{"serve", "--db", cfg.DB, "--skills", cfg.Skills}
	if cfg.Agent != "" {
		args = append(args, "--agent", cfg.Agent)
	}
	if cfg.Project != "" {
		args = append(args, "--project", cfg.Project)
	}
	if cfg.ReadOnly {
		args = append(args, "--read-only")
	}
	args = append(args, cfg.Args...)
	cmd := exec.Command(e2eBinary(t), args...)
	if cfg.IgnoreHUP {
		cmd = exec.Command("sh", append([]string{"-c", `trap "" HUP; exec "$@"`, "sh", e2eBinary(t)}, args...)...)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOGBOOK_") && !strings.HasPrefix(kv, "GORACE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GORACE=halt_on_error=1 exitcode=66")
	cmd.Env = append(cmd.Env, cfg.Env...)
	s := &e2eServer{t: t, cfg: cfg, cmd: cmd, stderr: &e2eBuffer{}, pending: map[string]chan e2eMessage{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go s.readLoop(stdout)
	t.Cleanup(s.finish)
	return s
}

// readLoop reads stdout line by line until it ends, then reaps the process.
func (s *e2eServer) readLoop(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			s.deliver(line)
		}
		if err != nil {
			break
		}
	}
	s.waitErr = s.cmd.Wait()
	s.mu.Lock()
	for id, ch := range s.pending {
		close(ch)
		delete(s.pending, id)
	}
	close(s.exited) // under mu: send registers no request after this
	s.mu.Unlock()
}

func (s *e2eServer) deliver(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines++
	var m e2eMessage
	if !bytes.HasSuffix(line, []byte("\n")) || !utf8.Valid(line) || json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
		s.badLines = append(s.badLines, e2eTrunc(string(line), 200))
		return
	}
	if ch, ok := s.pending[string(m.ID)]; ok && len(m.ID) > 0 {
		delete(s.pending, string(m.ID))
		ch <- m
		return
	}
	s.orphans = append(s.orphans, m)
}

// finish ends the process if it still runs and checks what it wrote.
func (s *e2eServer) finish() {
	s.closeStdin()
	select {
	case <-s.exited:
	case <-time.After(e2eTimeout): // a hang bound: a loaded machine may take seconds
		s.t.Errorf("logbook serve did not exit within %v of stdin closing; killing it", e2eTimeout)
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.checkOutput()
}

// checkOutput fails the test for anything on stdout that is not a JSON-RPC
// line, or a race report or panic on stderr.
func (s *e2eServer) checkOutput() {
	s.t.Helper()
	s.mu.Lock()
	bad := append([]string(nil), s.badLines...)
	s.mu.Unlock()
	for _, l := range bad {
		s.t.Errorf("stdout carried a line that is not JSON-RPC: %q", l)
	}
	errOut := s.stderr.String()
	for _, marker := range []string{"WARNING: DATA RACE", "panic:", "goroutine "} {
		if strings.Contains(errOut, marker) {
			s.t.Errorf("stderr of logbook serve (%s) contains %q:\n%s", s.cfg.Agent, marker, e2eTrunc(errOut, 8000))
			break
		}
	}
}

func (s *e2eServer) closeStdin() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.stdin.Close()
}

// writeLine sends one raw line (a newline is appended).
func (s *e2eServer) writeLine(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.stdin.Write(append(b[:len(b):len(b)], '\n'))
	return err
}

// send writes a request with a fresh id and returns the channel its answer
// arrives on (closed without a value if the server exits first).
func (s *e2eServer) send(method string, params json.RawMessage) (<-chan e2eMessage, int64) {
	s.t.Helper()
	id := s.nextID.Add(1)
	ch := make(chan e2eMessage, 1)
	s.mu.Lock()
	select {
	case <-s.exited:
		// The process is gone and its pending requests were closed: a
		// request sent now is closed too, or its caller would wait for
		// an answer no one can give.
		close(ch)
	default:
		s.pending[strconv.FormatInt(id, 10)] = ch
	}
	s.mu.Unlock()
	line := []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":` + strconv.Quote(method))
	if params != nil {
		line = append(append(line, `,"params":`...), params...)
	}
	line = append(line, '}')
	if err := s.writeLine(line); err != nil {
		// A process that died (a test killed it) takes its stdin with it:
		// the caller sees the closed channel. Any other failure is an error.
		select {
		case <-s.exited:
		case <-time.After(e2eTimeout):
			s.t.Errorf("writing %s: %v", method, err)
		}
	}
	return ch, id
}

// wait waits for one answer.
func (s *e2eServer) wait(ch <-chan e2eMessage, what string) e2eMessage {
	s.t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			s.t.Fatalf("%s: logbook serve exited before answering (%v); stderr:\n%s", what, s.waitErr, e2eTrunc(s.stderr.String(), 4000))
		}
		return m
	case <-time.After(e2eTimeout):
		s.t.Fatalf("%s: no answer within %v", what, e2eTimeout)
	}
	panic("unreachable")
}

// request sends a request and waits for its answer.
func (s *e2eServer) request(method string, params any) e2eMessage {
	s.t.Helper()
	ch, _ := s.send(method, e2eJSON(s.t, params))
	return s.wait(ch, method)
}

// initialize does the MCP handshake with the given protocol revision.
func (s *e2eServer) initialize(protocol string) json.RawMessage {
	s.t.Helper()
	m := s.request("initialize", map[string]any{
		"protocolVersion": protocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "e2e-go-client", "version": "1.0.0"},
	})
	if m.Error != nil {
		s.t.Fatalf("initialize: %d %s", m.Error.Code, m.Error.Message)
	}
	if err := s.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		s.t.Fatal(err)
	}
	return m.Result
}

// e2eReply is one tools/call result with its envelope decoded.
type e2eReply struct {
	Result  json.RawMessage
	IsError bool
	Env     e2eEnvelope
}

type e2eEnvelope struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error *struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error,omitempty"`
}

// code is "OK" or the error code.
func (r e2eReply) code() string {
	if r.Env.OK {
		return "OK"
	}
	if r.Env.Error == nil {
		return "(no error)"
	}
	return r.Env.Error.Code
}

// data decodes the success data into v.
func (r e2eReply) data(t testing.TB, v any) {
	t.Helper()
	if !r.Env.OK {
		t.Fatalf("expected success, got %s", r.Result)
	}
	if err := json.Unmarshal(r.Env.Data, v); err != nil {
		t.Fatalf("data: %v in %s", err, r.Env.Data)
	}
}

// callToolAsync sends tools/call with raw arguments (nil: none).
func (s *e2eServer) callToolAsync(name string, args json.RawMessage) <-chan e2eMessage {
	params := []byte(`{"name":` + strconv.Quote(name))
	if args != nil {
		params = append(append(params, `,"arguments":`...), args...)
	}
	params = append(params, '}')
	ch, _ := s.send("tools/call", params)
	return ch
}

// callRaw calls a tool with raw argument bytes and checks the envelope.
func (s *e2eServer) callRaw(name string, args json.RawMessage) e2eReply {
	s.t.Helper()
	m := s.wait(s.callToolAsync(name, args), "tools/call "+name)
	return parseE2EReply(s.t, name, m)
}

// call calls a tool with args marshalled to JSON.
func (s *e2eServer) call(name string, args any) e2eReply {
	s.t.Helper()
	return s.callRaw(name, e2eJSON(s.t, args))
}

// ok calls a tool, requires success and decodes its data into out (if non-nil).
func (s *e2eServer) ok(name string, args any, out any) {
	s.t.Helper()
	r := s.call(name, args)
	if !r.Env.OK {
		s.t.Fatalf("%s %s: want ok, got %s", name, e2eTrunc(string(e2eJSON(s.t, args)), 200), r.Result)
	}
	if out != nil {
		r.data(s.t, out)
	}
}

// parseE2EReply checks a tools/call answer against CONTRACT.md §1: a result
// (never a protocol error), one text item equal to structuredContent, ok
// with data or an error object, isError exactly on failure.
func parseE2EReply(t testing.TB, name string, m e2eMessage) e2eReply {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("tools/call %s: JSON-RPC error %d %s, want an envelope", name, m.Error.Code, m.Error.Message)
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("tools/call %s: result %s: %v", name, e2eTrunc(string(m.Result), 300), err)
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("tools/call %s: want one text content item, got %s", name, e2eTrunc(string(m.Result), 300))
	}
	var a, b any
	if json.Unmarshal([]byte(res.Content[0].Text), &a) != nil || json.Unmarshal(res.StructuredContent, &b) != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("tools/call %s: structuredContent and content[0].text differ: %s", name, e2eTrunc(string(m.Result), 300))
	}
	r := e2eReply{Result: res.StructuredContent, IsError: res.IsError}
	if err := json.Unmarshal(res.StructuredContent, &r.Env); err != nil {
		t.Fatalf("tools/call %s: envelope: %v", name, err)
	}
	switch {
	case r.Env.OK && (r.IsError || r.Env.Error != nil || len(r.Env.Data) == 0 || r.Env.Data[0] != '{'):
		t.Fatalf("tools/call %s: malformed success envelope (isError=%v): %s", name, r.IsError, e2eTrunc(string(r.Result), 300))
	case !r.Env.OK && (!r.IsError || r.Env.Error == nil || r.Env.Data != nil || !strings.HasPrefix(r.Env.Error.Code, "ERR_") ||
		r.Env.Error.Message == "" || len(r.Env.Error.Details) == 0 || r.Env.Error.Details[0] != '{'):
		t.Fatalf("tools/call %s: malformed failure envelope (isError=%v): %s", name, r.IsError, e2eTrunc(string(r.Result), 300))
	}
	return r
}

// ping requires the server to be running and to answer server_ping.
func (s *e2eServer) ping() {
	s.t.Helper()
	select {
	case <-s.exited:
		s.t.Fatalf("logbook serve exited (%v); stderr:\n%s", s.waitErr, e2eTrunc(s.stderr.String(), 4000))
	default:
	}
	if r := s.call("server_ping", map[string]any{}); !r.Env.OK {
		s.t.Fatalf("server_ping: %s", r.Result)
	}
}

// takeOrphans returns and forgets the answers that matched no request.
func (s *e2eServer) takeOrphans() []e2eMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.orphans
	s.orphans = nil
	return o
}

// waitExit waits for the process to end and returns its exit code.
func (s *e2eServer) waitExit(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(timeout):
		s.t.Fatalf("logbook serve still running after %v", timeout)
	}
	if s.waitErr == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(s.waitErr, &ee) {
		return ee.ExitCode()
	}
	s.t.Fatalf("wait: %v", s.waitErr)
	return -1
}

func e2eJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func e2eTrunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// e2eEvent is what the e2e tests look at in a stored event.
type e2eEvent struct {
	Seq     uint64
	Type    string
	Actor   string
	Subject []string
	Call    *projections.ToolCalled // for tool.called
}

// e2eReadLedger returns the events with seq > after, read from the file the
// way an auditor would (read-only, beside running servers).
func e2eReadLedger(t testing.TB, db string, after uint64) (head uint64, events []e2eEvent) {
	t.Helper()
	l, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = l.View(func(tx *boltstore.Tx) error {
		head = tx.Head().Seq
		return tx.Scan(after+1, head+1, func(r ledger.Record) error {
			e := e2eEvent{Seq: r.Seq, Type: r.Type, Actor: r.Actor, Subject: append([]string(nil), r.Subjects...)}
			if r.Type == projections.TypeToolCalled {
				e.Call = new(projections.ToolCalled)
				if err := ledger.DecodePayload(r.Payload, e.Call); err != nil {
					return fmt.Errorf("seq %d: %w", r.Seq, err)
				}
			}
			events = append(events, e)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return head, events
}

// e2eHead is the ledger's head seq.
func e2eHead(t testing.TB, db string) uint64 {
	t.Helper()
	l, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var head uint64
	if err := l.View(func(tx *boltstore.Tx) error { head = tx.Head().Seq; return nil }); err != nil {
		t.Fatal(err)
	}
	return head
}

// e2eVerify re-hashes the whole file: one unbroken chain and Merkle tree,
// in-process with ledger.Verify and as an auditor does with `logbook verify`
// (which also refolds the projections and compares them).
func e2eVerify(t testing.TB, db string) boltstore.VerifyReport {
	t.Helper()
	cmd := exec.Command(e2eBinary(t), "verify", "--db", db, "--json")
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1 exitcode=66")
	// stdout is the JSON report alone; stderr (progress, once a run takes
	// over a second on a loaded machine) is shown only on failure.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var cli struct {
		OK          bool   `json:"ok"`
		Size        uint64 `json:"size"`
		Projections struct {
			Checked bool `json:"checked"`
		} `json:"projections"`
	}
	if err != nil || json.Unmarshal(out, &cli) != nil || !cli.OK {
		t.Fatalf("logbook verify --db %s: %v\n%s\n%s", db, err, e2eTrunc(stderr.String(), 4000), e2eTrunc(string(out), 4000))
	}
	if !cli.Projections.Checked {
		t.Errorf("logbook verify --db %s did not compare the projections:\n%s", db, e2eTrunc(string(out), 2000))
	}
	l, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := l.Verify(context.Background(), boltstore.VerifyOptions{})
	if err != nil {
		t.Fatalf("ledger %s does not verify: %v", db, err)
	}
	return rep
}

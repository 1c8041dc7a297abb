package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
)

// The tests in this package drive a Server in-process over io.Pipe with raw
// JSON-RPC lines. commands.Service is replaced by a fake Do (Server.do), so
// nothing here needs a ledger; tests with a real Service belong beside these
// once it exists.

// fakeDo records the calls it gets and answers like the real Do: an invalid
// call is encoded with its error, a valid one with result(call).
type fakeDo struct {
	mu     sync.Mutex
	calls  []commands.Call
	result func(commands.Call) (any, error)
}

func (f *fakeDo) do(_ context.Context, call commands.Call) ([]byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
	// As commands.Service.Do: the edge's refusal, else the arguments
	// checked with the domain's rules, then a read-only caller's.
	invalid := call.Invalid
	if invalid == nil && call.Command != nil {
		invalid = call.Command.Rules().ValidateArgs(domain.ParseArgs(call.Args))
	}
	if invalid == nil && call.ReadOnly && call.Command.Mutates() {
		invalid = commands.ErrReadOnly
	}
	if invalid != nil {
		_, reply := call.Encode(nil, invalid)
		return reply, nil
	}
	var (
		res any = map[string]any{"tool": call.Name}
		err error
	)
	if f.result != nil {
		res, err = f.result(call)
	}
	_, reply := call.Encode(res, err)
	return reply, nil
}

func (f *fakeDo) recorded() []commands.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]commands.Call(nil), f.calls...)
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestServer returns a Server whose calls go to do, and its log.
func newTestServer(t *testing.T, do func(context.Context, commands.Call) ([]byte, error), opts Options) (*Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s := New(nil, opts)
	s.do = do
	return s, logs
}

// session is a client end of Server.Run over pipes.
type session struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Reader
	done   chan error
	cancel context.CancelFunc
	nextID int

	waitOnce sync.Once
	runErr   error
}

func startSession(t *testing.T, s *Server) *session {
	t.Helper()
	return startSessionWith(t, s, nil)
}

// startSessionWith is startSession with d (if not nil) as the connection's
// direct tool calls, so that a test can count them.
func startSessionWith(t *testing.T, s *Server, d *direct) *session {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &session{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1), cancel: cancel}
	go func() {
		run := s.Run
		if d != nil {
			run = func(ctx context.Context, in io.Reader, out io.Writer) error {
				d.ctx, d.reply = context.WithoutCancel(ctx), s.reply
				return serveStdio(ctx, s.sdk, in, out, s.maxLine, s.log, d)
			}
		}
		err := run(ctx, inR, outW)
		outW.Close()
		inR.Close()
		c.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		go io.Copy(io.Discard, outR) // let a blocked writer finish
		if err := c.wait(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return c
}

// wait returns what Run returned, waiting for it.
func (c *session) wait() error {
	c.waitOnce.Do(func() { c.runErr = <-c.done })
	return c.runErr
}

// recvLine reads one raw line, without its newline. A line that does not
// come within a minute fails the test (an answer the server never sent),
// rather than hang the package until go test's own timeout.
func (c *session) recvLine() string {
	c.t.Helper()
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := c.out.ReadString('\n')
		got <- read{line, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			c.t.Fatalf("recv: %v (got %q)", r.err, r.line)
		}
		return strings.TrimSuffix(r.line, "\n")
	case <-time.After(time.Minute):
		c.t.Fatal("recv: no answer within a minute")
		return ""
	}
}

// send writes one raw line.
func (c *session) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// recv reads one line and decodes it.
func (c *session) recv() map[string]any {
	c.t.Helper()
	line := c.recvLine()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		c.t.Fatalf("recv: not JSON: %q", line)
	}
	return m
}

// request sends a request with a fresh id and returns its id.
func (c *session) request(method string, params any) int {
	c.t.Helper()
	c.nextID++
	p, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.nextID, method, p))
	return c.nextID
}

// call sends a request and returns its response, which must carry its id.
func (c *session) call(method string, params any) map[string]any {
	c.t.Helper()
	id := c.request(method, params)
	resp := c.recv()
	if resp["id"] != float64(id) {
		c.t.Fatalf("response id = %v, want %d: %v", resp["id"], id, resp)
	}
	return resp
}

func (c *session) initialize() {
	c.t.Helper()
	c.initializeAs("2025-06-18")
}

func (c *session) initializeAs(version string) map[string]any {
	c.t.Helper()
	resp := c.call("initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "test-agent", "version": "1.0"},
	})
	if resp["error"] != nil {
		c.t.Fatalf("initialize: %v", resp["error"])
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return resp
}

// toolCall calls a tool with raw JSON arguments ("" for none) and returns
// the result. The arguments go on the wire byte for byte.
func (c *session) toolCall(name, args string) map[string]any {
	c.t.Helper()
	c.nextID++
	n, _ := json.Marshal(name)
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%s`, c.nextID, n)
	if args != "" {
		line += `,"arguments":` + args
	}
	c.send(line + "}}")
	resp := c.recv()
	if resp["id"] != float64(c.nextID) {
		c.t.Fatalf("response id = %v, want %d: %v", resp["id"], c.nextID, resp)
	}
	res, ok := resp["result"].(map[string]any)
	if !ok {
		c.t.Fatalf("tools/call %s: no result: %v", name, resp)
	}
	return res
}

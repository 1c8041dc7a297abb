package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// agent is an MCP client driving one `logbook serve` process over stdio,
// the way an agent's MCP client launches it.
type agent struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
	nextID int
	init   json.RawMessage // the initialize result
}

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startAgent runs `logbook serve` with args and completes the MCP handshake.
func startAgent(t testing.TB, name string, args ...string) *agent {
	t.Helper()
	return startAgentEnv(t, name, nil, args...)
}

// startAgentEnv is startAgent with more environment variables (NAME=value).
func startAgentEnv(t testing.TB, name string, env []string, args ...string) *agent {
	t.Helper()
	cmd := exec.Command(logbookBin, append([]string{"serve"}, args...)...)
	cmd.Env = append(append(os.Environ(), "LOGBOOK_DB=", "LOGBOOK_AGENT="), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), stderr: &lockedBuffer{}}
	cmd.Stderr = a.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	a.init = a.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": name, "version": "1.0"},
	})
	a.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return a
}

func (a *agent) send(msg any) {
	a.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		a.t.Fatalf("write to server: %v\nstderr:\n%s", err, a.stderr)
	}
}

// request sends one JSON-RPC request and returns its result, skipping
// notifications. A JSON-RPC error fails the test.
func (a *agent) request(method string, params any) json.RawMessage {
	a.t.Helper()
	res, err := a.tryRequest(method, params)
	if err != nil {
		a.t.Fatalf("%s: %v\nstderr:\n%s", method, err, a.stderr)
	}
	return res
}

func (a *agent) tryRequest(method string, params any) (json.RawMessage, error) {
	a.nextID++
	id := a.nextID
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	for {
		line, err := a.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("bad line %q: %w", line, err)
		}
		if msg.ID == nil || *msg.ID != id {
			continue
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("JSON-RPC error %s", msg.Error)
		}
		return msg.Result, nil
	}
}

// callTool calls a tool and returns its structuredContent (the envelope).
func (a *agent) callTool(tool string, args any) (map[string]any, error) {
	res, err := a.tryRequest("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, err
	}
	var r struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	return r.StructuredContent, nil
}

// close ends the session (end of input) and waits for the server to exit.
func (a *agent) close() {
	if a.in == nil {
		return
	}
	a.in.Close()
	a.in = nil
	done := make(chan error, 1)
	go func() { io.Copy(io.Discard, a.out); done <- a.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			a.t.Errorf("serve exited: %v\nstderr:\n%s", err, a.stderr)
		}
	case <-time.After(30 * time.Second):
		a.cmd.Process.Kill()
		a.t.Errorf("serve did not exit\nstderr:\n%s", a.stderr)
	}
}

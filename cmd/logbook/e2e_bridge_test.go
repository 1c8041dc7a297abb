package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBridgeAnswersLikeServer: what the logbook server answers a call by
// refusing it at the HTTP level reaches the agent through serve --connect
// as a JSON-RPC error with its own documented code (TOOLS.md, "serve
// --connect"), saying the call was not recorded: a call after its token
// was revoked (401) was answered -32603, and every later one "not sent";
// a call too large for the server (413) ended the bridge's connection, so
// that every later call was answered "not sent" too. A scoped token's call
// out of its scope is the server's own answer, ERR_FORBIDDEN, recorded.
// After a revocation tools/list is still answered, from the list the
// server gave at connect (documented).
func TestBridgeAnswersLikeServer(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/l.db"
	s := startHTTPServer(t, db, "--max-body-bytes", "4096")
	token, sum := addToken(t, db, "--agent", "bridged")
	scoped, _ := addToken(t, db, "--agent", "scoped", "--tools", "server_ping")
	a := startAgentEnv(t, "host", []string{"LB_T=" + token}, "--connect", s.url, "--token-env", "LB_T")
	defer a.close()
	ping := func(who *agent) {
		t.Helper()
		if env, err := who.callTool("server_ping", map[string]any{}); err != nil || env["ok"] != true {
			t.Fatalf("server_ping through the bridge: %v %v", env, err)
		}
	}
	ping(a)
	_, err := a.callTool("task_create", map[string]any{"title": "t", "project": "p", "description": strings.Repeat("d", 6000)})
	if err == nil || !strings.Contains(err.Error(), `"code":-32032,`) || !strings.Contains(err.Error(), "413 Request Entity Too Large); the call was not recorded") {
		t.Errorf("a call larger than the server takes: %v", err)
	}
	ping(a) // the bridge goes on

	b := startAgentEnv(t, "host", []string{"LB_T=" + scoped}, "--connect", s.url, "--token-env", "LB_T")
	defer b.close()
	env, err := b.callTool("task_create", map[string]any{"title": "t", "project": "p"})
	if e, _ := env["error"].(map[string]any); err != nil || e["code"] != "ERR_FORBIDDEN" {
		t.Errorf("a scoped token's call out of its scope: %v %v", env, err)
	}

	if r := run(t, "token", "revoke", "--db", db, "--token-sha256", sum, "--issuer", "test-operator"); r.code != 0 {
		t.Fatalf("revoke: %v", r)
	}
	for range 2 {
		_, err := a.callTool("server_ping", map[string]any{})
		if err == nil || !strings.Contains(err.Error(), `"code":-32031,`) || !strings.Contains(err.Error(), "not recorded: restart the bridge with a valid token") {
			t.Errorf("a call after the token's revocation: %v", err)
		}
		var list struct{ Tools []json.RawMessage }
		if res, err := a.tryRequest("tools/list", map[string]any{}); err != nil || json.Unmarshal(res, &list) != nil || len(list.Tools) == 0 {
			t.Errorf("tools/list after the token's revocation: %v", err)
		}
	}
	a.close()
	b.close()
	s.kill()
	_, events := e2eReadLedger(t, db, 0)
	var calls []string
	for _, e := range events {
		if e.Call != nil {
			calls = append(calls, e.Call.Tool+" by "+e.Actor)
		}
	}
	if want := "server_ping by bridged,server_ping by bridged,task_create by scoped"; strings.Join(calls, ",") != want {
		t.Errorf("recorded %q, want %q", calls, want)
	}
}

// TestBridgeNotAnEndpoint: serve --connect to a URL that is no logbook MCP
// endpoint exits 2 saying so, and what it found there: it said "Method Not
// Allowed", an SDK decode error, "Not Implemented", or what net/http said.
func TestBridgeNotAnEndpoint(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/l.db"
	s := startHTTPServer(t, db)
	token, _ := addToken(t, db, "--agent", "bridged")
	base := strings.TrimSuffix(s.url, "/mcp")
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	tlsWeb := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsWeb.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused
	tlsWeb.StartTLS()
	defer tlsWeb.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // its port refuses connections
	for url, says := range map[string]string{
		base + "/":        "not a logbook MCP endpoint: it answered the bridge's POST 405 Method Not Allowed",
		base + "/healthz": "not a logbook MCP endpoint: it answered the bridge's POST 200 OK (application/json), not with an MCP message",
		strings.Replace(s.url, "http:", "https:", 1): "not a logbook MCP endpoint: the server there speaks plain HTTP, not HTTPS",
		web.URL + "/mcp": `not a logbook MCP endpoint: it answered the bridge's POST 404 Not Found (text/plain; charset=utf-8): "404 page not found"`,
		strings.Replace(tlsWeb.URL, "https:", "http:", 1): `not a logbook MCP endpoint: it answered the bridge's POST 400 Bad Request: "Client sent an HTTP request to an HTTPS server."`,
		tlsWeb.URL + "/mcp": "the server's TLS certificate is not trusted here",
		gone.URL + "/mcp":   "nothing answers there",
	} {
		r := runEnv(t, []string{"LB_T=" + token}, "serve", "--connect", url, "--token-env", "LB_T")
		if r.code != 2 || !strings.Contains(r.stderr, "connect to "+url+": "+says) {
			t.Errorf("serve --connect %s: exit %d\n%s\nwant it to say %q", url, r.code, r.stderr, says)
		}
	}
}

// TestBridgeStdoutClosed: a client that closes its end of the bridge's
// stdout ends the bridge with the write's error, as it ends serve, not by
// SIGPIPE (which also skipped what the bridge does on its way out).
func TestBridgeStdoutClosed(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/l.db"
	s := startHTTPServer(t, db)
	token, _ := addToken(t, db, "--agent", "bridged")
	cmd := exec.Command(e2eBinary(t), "serve", "--connect", s.url, "--token-env", "LB_T")
	cmd.Env = append(os.Environ(), "LB_T="+token, "LOGBOOK_DB=")
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
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize: %q, %v\n%s", line, err, stderr.String())
	}
	out.Close()
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	for i := 2; i < 5; i++ {
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("the bridge went on with its stdout closed\n%s", stderr.String())
	}
	in.Close()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signaled() {
		t.Fatalf("the bridge ended by a signal: %v\n%s", cmd.ProcessState, stderr.String())
	}
	if !strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("stderr does not say the write failed:\n%s", stderr.String())
	}
}

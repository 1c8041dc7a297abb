package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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

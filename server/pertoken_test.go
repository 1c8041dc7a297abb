package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestTokenCannotFillConnections: one token holds at most half of
// MaxConns with requests in flight (here event streams, GET /mcp, which
// last as long as their client likes): one more of its requests is
// answered 429 with Retry-After, and another token is still served. Before,
// a token holder could hold every connection with such streams (or long
// calls, or bodies sent slowly, renewed every 30 s), and every other
// client, whatever its token, got 503.
func TestTokenCannotFillConnections(t *testing.T) {
	l, db := openStore(t, boltstore.Options{Hold: true})
	socket := AdminSocketPath(db)
	addr, stop := startRun(t, l, Options{AdminSocket: socket, MaxConns: 4})
	defer stop()
	m, err := OpenTokens(db, socket)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := m.Issue(Issue{Agent: "hog", Issuer: "op"})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := m.Issue(Issue{Agent: "other", Issuer: "op"})
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr + "/mcp"
	client := &http.Client{Timeout: time.Minute}
	send := func(method, token, sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		}
		if method == http.MethodGet {
			req.Header.Set("Accept", "text/event-stream")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	open := func(token string) string {
		t.Helper()
		resp := send(http.MethodPost, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d", resp.StatusCode)
		}
		resp = send(http.MethodPost, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return sid
	}
	sessions := []string{open(a), open(a), open(a)}
	for _, sid := range sessions[:2] {
		resp := send(http.MethodGet, a, sid, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("an event stream: %d", resp.StatusCode)
		}
		defer resp.Body.Close() // held open to the end
	}
	resp := send(http.MethodGet, a, sessions[2], "")
	var body []byte
	if resp.StatusCode != http.StatusOK { // (an event stream would not end)
		body, _ = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the token's third event stream of 4 connections: %d %q; want 429 with Retry-After", resp.StatusCode, body)
	}
	resp = send(http.MethodPost, b, open(b), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"tools"`) {
		t.Errorf("another token: %d %.200s", resp.StatusCode, body)
	}
}

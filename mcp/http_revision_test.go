package mcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTPSessionlessNamingNoSessionOfItsOwn: a request bound for the
// sessionless handler (MCP-Protocol-Version 2026-07-28, or a _meta naming
// that revision whatever the header) whose Mcp-Session-Id names a session
// that is gone (deleted, ended by the cap), that never was, or that is
// another token's, is refused as the stateful handler refuses a request
// of any other revision naming it — 404 "session not found", 403 "session
// user mismatch" for another token's — whatever its method, nothing of it
// run. Before, the sessionless handler, which ignores the session, ran it:
// a task_create named another agent's session, or a deleted one, and was
// recorded as the caller's (200); only the caller's own open session was
// checked (400, sameVersion).
func TestHTTPSessionlessNamingNoSessionOfItsOwn(t *testing.T) {
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = f.do
	tokens := map[string]*Identity{"a": {Agent: "a", Token: "sum-a"}, "b": {Agent: "b", Token: "sum-b"}}
	srv := httptest.NewServer(s.HTTPHandler(HTTPOptions{MaxSessionsPerToken: 2, Authenticate: func(_ context.Context, token string) (*Identity, error) {
		if id := tokens[token]; id != nil {
			return id, nil
		}
		return nil, ErrUnauthenticated
	}}))
	t.Cleanup(srv.Close)
	type answer struct {
		code        int
		contentType string
		body        string
	}
	send := func(method, token, sid, version, body string) answer {
		t.Helper()
		resp := mcpRequest(t, method, srv.URL, token, sid, version, body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
	}
	del := func(token, sid string) {
		t.Helper()
		if a := send(http.MethodDelete, token, sid, "2025-06-18", ""); a.code != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d %s", sid, a.code, a.body)
		}
	}

	deleted := openSession(t, srv.URL, "a")
	del("a", deleted)
	ended := openSession(t, srv.URL, "a") // ended by the cap (2 per token) below
	openSession(t, srv.URL, "a")
	openSession(t, srv.URL, "a")
	bOpen := openSession(t, srv.URL, "b")
	bDeleted := openSession(t, srv.URL, "b")
	del("b", bDeleted)

	const (
		notFound = "session not found\n"     // the SDK's words
		mismatch = "session user mismatch\n" // the SDK's words
	)
	sessions := []struct {
		what, sid string
		code      int
		says      string
	}{
		{"a session of its token's deleted", deleted, http.StatusNotFound, notFound},
		{"a session of its token's ended by the cap", ended, http.StatusNotFound, notFound},
		{"a session that never was", "NOPE", http.StatusNotFound, notFound},
		{"another token's deleted session", bDeleted, http.StatusNotFound, notFound},
		{"another token's open session", bOpen, http.StatusForbidden, mismatch},
	}
	create := newRequest(3, "tools/call", `"name":"task_create","arguments":{"title":"after-delete","project":"p"}`)
	messages := []struct {
		what, method, body string
		versions           []string // the MCP-Protocol-Version headers it is sent with
	}{
		// A request whose _meta names 2026-07-28 goes to the sessionless
		// handler whatever its header (namesRevision).
		{"tools/call", http.MethodPost, create, []string{sessionlessRevision, "2025-06-18", ""}},
		{"tools/list", http.MethodPost, newRequest(4, "tools/list", ""), []string{sessionlessRevision, "2025-11-25", ""}},
		{"ping", http.MethodPost, newRequest(5, "ping", ""), []string{sessionlessRevision, "2025-06-18"}},
		{"a notification", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, []string{sessionlessRevision}},
		{"a batch", http.MethodPost, `[` + create + `]`, []string{sessionlessRevision}},
		{"DELETE", http.MethodDelete, "", []string{sessionlessRevision}},
	}
	for _, sc := range sessions {
		// What a request of a revision with sessions gets naming it.
		older := send(http.MethodPost, "a", sc.sid, "2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
		if older.code != sc.code || older.body != sc.says {
			t.Fatalf("2025-06-18 naming %s: %d %q; want %d %q", sc.what, older.code, older.body, sc.code, sc.says)
		}
		for _, m := range messages {
			for _, v := range m.versions {
				a := send(m.method, "a", sc.sid, v, m.body)
				if a != older {
					t.Errorf("%s saying %q naming %s: %d %s %q; want %d %q, as 2025-06-18 gets",
						m.what, v, sc.what, a.code, a.contentType, a.body, older.code, older.body)
				}
				if strings.Contains(a.body, `"jsonrpc"`) {
					t.Errorf("%s saying %q naming %s: a JSON-RPC answer %s", m.what, v, sc.what, a.body)
				}
			}
		}
	}
	if calls := f.recorded(); len(calls) != 0 {
		t.Errorf("%d refused calls ran (recorded), first as %q: %s", len(calls), calls[0].Actor, calls[0].Name)
	}

	// Unharmed: b's session serves b; a request naming no session is served
	// sessionless.
	if a := send(http.MethodPost, "b", bOpen, "2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"ping"}`); a.code != http.StatusOK {
		t.Errorf("b's session after: %d %s", a.code, a.body)
	}
	if a := send(http.MethodPost, "a", "", sessionlessRevision, create); a.code != http.StatusOK || !strings.Contains(a.body, `"result"`) {
		t.Errorf("the call naming no session: %d %s; want it served", a.code, a.body)
	}
	if calls := f.recorded(); len(calls) != 1 || calls[0].Actor != "a" || calls[0].Name != "task_create" {
		t.Errorf("recorded %+v; want a's one task_create", calls)
	}
}

package mcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
)

// statefulPost sends one request of the 2025-06-18 revision, in session sid
// if not "", and returns the status, the session id answered and the body.
func statefulPost(tb testing.TB, url, token, sid, body string) (int, string, string) {
	tb.Helper()
	return statefulPostAs(tb, url, token, sid, "2025-06-18", body)
}

// statefulPostAs is statefulPost of revision version.
func statefulPostAs(tb testing.TB, url, token, sid, version, body string) (int, string, string) {
	tb.Helper()
	if sid == "" {
		version = ""
	}
	resp := mcpRequest(tb, http.MethodPost, url, token, sid, version, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// mcpRequest sends one request to the MCP endpoint at url as a client of
// the Streamable HTTP transport does, with token, session sid and header
// MCP-Protocol-Version version where not "" (and the sessionless
// revision's headers for it), through testHTTP.
func mcpRequest(tb testing.TB, method, url, token, sid, version, body string) *http.Response {
	tb.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if version == sessionlessRevision {
		setNewHeaders(req, body)
	}
	resp, err := testHTTP.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

// testHTTP bounds every request of these tests: a server that never
// answers fails the test in a minute, saying where, rather than hang the
// package until go test's own timeout.
var testHTTP = &http.Client{Timeout: time.Minute}

// openSession initializes a session for token and returns its id.
func openSession(tb testing.TB, url, token string) string {
	tb.Helper()
	return openSessionAs(tb, url, token, "2025-06-18")
}

// openSessionAs initializes a session of revision version for token and
// returns its id.
func openSessionAs(tb testing.TB, url, token, version string) string {
	tb.Helper()
	code, sid, body := statefulPostAs(tb, url, token, "", version,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if code != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: %d %q %s", code, sid, body)
	}
	if code, _, body := statefulPostAs(tb, url, token, sid, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		tb.Fatalf("initialized: %d %s", code, body)
	}
	return sid
}

// TestHTTPSessionsPerToken: a token keeps at most MaxSessionsPerToken
// sessions open; one more closes its least recently used one, never another
// token's. Before, every initialize made a session that lived until it had
// been idle for 30 minutes (about 26 KB each): any token, a read-only or a
// tool-limited one included, could open them until the server ran out of
// memory, and a client that initializes for every call leaked them.
func TestHTTPSessionsPerToken(t *testing.T) {
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = f.do
	tokens := map[string]*Identity{"a": {Agent: "a", Token: "sum-a"}, "b": {Agent: "b", Token: "sum-b"}}
	h := s.HTTPHandler(HTTPOptions{MaxSessionsPerToken: 3, Authenticate: func(_ context.Context, token string) (*Identity, error) {
		if id := tokens[token]; id != nil {
			return id, nil
		}
		return nil, ErrUnauthenticated
	}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	ping := func(token, sid string) int {
		code, _, _ := statefulPost(t, srv.URL, token, sid, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
		return code
	}

	b := openSession(t, srv.URL, "b")
	var a []string
	for range 3 {
		a = append(a, openSession(t, srv.URL, "a"))
	}
	// The oldest is used again: the second is now the least recently used,
	// and the next session opened closes it.
	if code := ping("a", a[0]); code != http.StatusOK {
		t.Fatalf("ping in a's first session: %d", code)
	}
	a = append(a, openSession(t, srv.URL, "a"))
	for i, want := range []int{http.StatusOK, http.StatusNotFound, http.StatusOK, http.StatusOK} {
		if code := ping("a", a[i]); code != want {
			t.Errorf("a's session %d answers %d, want %d", i, code, want)
		}
	}
	for range 10 {
		a = append(a, openSession(t, srv.URL, "a"))
	}
	if code := ping("b", b); code != http.StatusOK {
		t.Errorf("b's session closed by a's: %d", code)
	}
	for _, sid := range a[len(a)-3:] {
		if code := ping("a", sid); code != http.StatusOK {
			t.Errorf("one of a's 3 latest sessions: %d", code)
		}
	}
	for _, sid := range a[:len(a)-3] {
		if code := ping("a", sid); code != http.StatusNotFound {
			t.Errorf("one of a's older sessions answers %d, want 404 (closed)", code)
		}
	}
}

// TestHTTPSessionsEvictedNotServed: a request that arrives in a session
// the cap has chosen to end, before it is closed, is answered 404 (as once
// closed) and never runs: before, it passed to a session about to close,
// and a tool call could be recorded while its answer was lost with the
// session, so that the client, opening another, called it again.
func TestHTTPSessionsEvictedNotServed(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = func(ctx context.Context, call commands.Call) ([]byte, error) {
		entered <- struct{}{}
		select { // a call that ran would hold its session's closing up: bounded
		case <-release:
		case <-time.After(time.Minute):
		}
		return f.do(ctx, call)
	}
	h := s.HTTPHandler(HTTPOptions{MaxSessionsPerToken: 1, Authenticate: agentA})
	srv := httptest.NewServer(h)
	defer srv.Close()
	first := openSession(t, srv.URL, "a")

	type answer struct {
		code int
		body string
	}
	answered := make(chan answer, 1)
	ran := false
	evicting = func() {
		// The first session is chosen, not yet closed: a call in it now.
		go func() {
			code, _, body := statefulPost(t, srv.URL, "a", first,
				`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`)
			answered <- answer{code, body}
		}()
		select {
		case <-entered:
			// In flight: closing the session waits for it (so does the
			// answer to the initialize that chose it), then loses its answer.
			ran = true
			go func() { time.Sleep(100 * time.Millisecond); close(release) }()
		case a := <-answered:
			answered <- a
		case <-time.After(time.Minute): // a hang bound
			t.Error("the call neither ran nor was answered")
		}
	}
	defer func() { evicting = nil }()
	openSession(t, srv.URL, "a")
	var a answer
	select {
	case a = <-answered:
	case <-time.After(time.Minute):
		t.Fatal("the call in the session being ended was never answered (was the session chosen at all?)")
	}
	if ran {
		t.Errorf("a call ran in a session being ended; answered %d %q", a.code, a.body)
	} else if a.code != http.StatusNotFound {
		t.Errorf("a call in a session being ended answered %d %q, want 404", a.code, a.body)
	}
}

// TestHTTPSessionGoneIs404WhateverTheRevision: a request naming a session
// that is gone — deleted, or chosen to end by the cap and not yet closed —
// is answered 404, as any request in it is, whatever revision its
// MCP-Protocol-Version header names; a session open is told the revision
// is not its own (400). Before, the header was checked against the
// revision recorded for the session, which outlived it: 400 for a session
// deleted or being ended, so that the client, not told its session was
// gone, did not open another.
func TestHTTPSessionGoneIs404WhateverTheRevision(t *testing.T) {
	srv, _ := oneAgentServer(t, HTTPOptions{MaxSessionsPerToken: 1})
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	send := func(method, sid, version string) (int, string) {
		t.Helper()
		resp := mcpRequest(t, method, srv.URL, "a", sid, version, ping)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	sid := openSession(t, srv.URL, "a")
	if code, body := send(http.MethodPost, sid, "2025-03-26"); code != http.StatusBadRequest {
		t.Errorf("another revision in an open session: %d %s; want 400", code, body)
	}
	if code, _ := send(http.MethodDelete, sid, "2025-06-18"); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	for _, v := range []string{"2025-06-18", "2025-03-26", "2025-11-25"} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			if code, body := send(method, sid, v); code != http.StatusNotFound {
				t.Errorf("%s saying %s in a deleted session: %d %s; want 404", method, v, code, body)
			}
		}
	}

	// Chosen to end by the cap (one session per token), not yet closed.
	sid = openSession(t, srv.URL, "a")
	type answer struct {
		code int
		body string
	}
	var during []answer
	evicting = func() {
		for _, v := range []string{"2025-06-18", "2025-03-26"} {
			code, body := send(http.MethodPost, sid, v)
			during = append(during, answer{code, body})
		}
	}
	defer func() { evicting = nil }()
	openSession(t, srv.URL, "a")
	evicting = nil
	if len(during) != 2 {
		t.Fatal("the first session was not chosen to end")
	}
	for i, a := range during {
		if a.code != http.StatusNotFound {
			t.Errorf("request %d in a session being ended: %d %s; want 404", i, a.code, a.body)
		}
	}
	if code, body := send(http.MethodPost, sid, "2025-03-26"); code != http.StatusNotFound {
		t.Errorf("another revision in a session ended: %d %s; want 404", code, body)
	}
}

// TestHTTPSessionlessRevisionInASession: a request of the sessionless
// revision (2026-07-28) naming, in Mcp-Session-Id, an open session of an
// older one is refused as any other revision not the session's (400,
// -32600 by its id), nothing of it run; without the session it is served
// sessionless, and naming another token's session or one deleted it is
// refused as any revision is (403, 404: see
// TestHTTPSessionlessNamingNoSessionOfItsOwn). Before, the header alone
// chose the sessionless handler, which ignored the session: the session's
// revision was never checked.
func TestHTTPSessionlessRevisionInASession(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSession(t, srv.URL, "full")
	call := newRequest(3, "tools/call", `"name":"server_ping","arguments":{}`)
	send := func(token, sid string) (int, string) {
		t.Helper()
		resp := mcpRequest(t, http.MethodPost, srv.URL, token, sid, sessionlessRevision, call)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := send("full", sid)
	if code != http.StatusBadRequest || !strings.Contains(body, `"id":3,"error":{"code":-32600`) ||
		!strings.Contains(body, `negotiated \"2025-06-18\" at initialize: send that one, or the request without Mcp-Session-Id`) {
		t.Errorf("2026-07-28 in a 2025-06-18 session: %d %s; want 400, -32600 by id 3", code, body)
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("%d calls ran", n)
	}
	if code, _, body := statefulPost(t, srv.URL, "full", sid, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); code != http.StatusOK {
		t.Errorf("the session after: %d %s", code, body)
	}
	// Served sessionless naming no session; refused naming another
	// token's (403) or one deleted (404), as any revision is.
	other := openSession(t, srv.URL, "health")
	resp := mcpRequest(t, http.MethodDelete, srv.URL, "full", sid, "2025-06-18", "")
	resp.Body.Close()
	for _, tc := range []struct {
		sid  string
		code int
	}{{"", http.StatusOK}, {other, http.StatusForbidden}, {sid, http.StatusNotFound}} {
		code, body := send("full", tc.sid)
		if code != tc.code || (code == http.StatusOK) != strings.Contains(body, `"result"`) {
			t.Errorf("2026-07-28 naming %q: %d %s; want %d", tc.sid, code, body, tc.code)
		}
	}
	if n := len(f.recorded()); n != 1 {
		t.Errorf("%d calls ran, want the one naming no session", n)
	}
}

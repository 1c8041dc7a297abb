package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestConsoleMounted: Run serves the console at "/" beside /mcp and
// /healthz, to tokens of the tokens projection without a --tools limit
// (read-only ones included); a limited, revoked or unknown token gets the
// login page.
func TestConsoleMounted(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	full, _, _ := IssueToken(l, Issue{Agent: "auditor", Issuer: "op"})
	reader, _, _ := IssueToken(l, Issue{Agent: "reader", Issuer: "op", ReadOnly: true})
	limited, _, _ := IssueToken(l, Issue{Agent: "bot", Issuer: "op", Tools: []string{"task_get", "task_list"}})
	revoked, _, _ := IssueToken(l, Issue{Agent: "gone", Issuer: "op"})
	if _, err := RevokeTokens(l, Revoke{Agent: "gone", Issuer: "op"}); err != nil {
		t.Fatal(err)
	}
	addr, stop := startRun(t, l, Options{})
	base := "http://" + addr
	get := func(path, tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tok := range []string{full, reader} {
		for _, path := range []string{"/", "/sessions", "/ledger"} {
			if code, body := get(path, tok); code != http.StatusOK || !strings.Contains(body, "Log out") {
				t.Errorf("%s: status %d", path, code)
			}
		}
	}
	for _, tok := range []string{"", limited, revoked, "lbk_nonsense"} {
		if code, body := get("/", tok); code != http.StatusUnauthorized || !strings.Contains(body, `action="/login"`) {
			t.Errorf("token %q: status %d", tok, code)
		}
	}
	if code, body := get("/healthz", ""); code != http.StatusOK || !strings.Contains(body, "ok") {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, _ := get("/mcp", ""); code != http.StatusUnauthorized {
		t.Errorf("/mcp without a token: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestEveryAnswerHasBaseHeaders: answers the console does not write —
// net/http's redirect of a path that is not clean, a refused Host, an
// unknown MCP session, /healthz — still forbid a browser to render
// anything of them and to keep them; the console's pages keep their own
// policy.
func TestEveryAnswerHasBaseHeaders(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	addr, stop := startRun(t, l, Options{})
	defer stop()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		path, host string
		status     int
		csp        string
	}{
		{"/static/../x", "", http.StatusTemporaryRedirect, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"},
		{"/a//b", "", http.StatusTemporaryRedirect, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"},
		{"/healthz", "", http.StatusOK, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"},
		{"/healthz", "evil.example", http.StatusForbidden, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"},
		{"/mcp", "", http.StatusUnauthorized, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"},
		{"/login", "", http.StatusOK, "default-src 'none'; script-src 'self'"},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+c.path, nil)
		req.URL.Opaque = c.path // sent as written, not cleaned by the client
		if c.host != "" {
			req.Host = c.host
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Errorf("%s (Host %q): status %d, want %d", c.path, c.host, res.StatusCode, c.status)
		}
		if got := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(got, c.csp) {
			t.Errorf("%s (Host %q): Content-Security-Policy %q, want it to begin %q", c.path, c.host, got, c.csp)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s (Host %q): Cache-Control %q", c.path, c.host, got)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s (Host %q): X-Content-Type-Options %q", c.path, c.host, got)
		}
	}
}

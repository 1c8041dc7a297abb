package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// do sends req over a fresh connection and returns the status and body.
func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestLoopbackHostEveryRoute: a request reaching the server's loopback
// address under a foreign Host (DNS rebinding: a page of evil.example whose
// name now resolves to 127.0.0.1) is refused on every route, not only on
// /mcp. Before, the console's pages, its login form, its static files and
// /healthz answered it as their own origin.
func TestLoopbackHostEveryRoute(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	tok, _, _ := IssueToken(l, Issue{Agent: "a", Issuer: "op"})
	addr, stop := startRun(t, l, Options{})
	defer stop()
	_, port, _ := strings.Cut(addr, ":")
	routes := []struct{ method, path, body string }{
		{"GET", "/", ""},
		{"GET", "/healthz", ""},
		{"GET", "/login", ""},
		{"POST", "/login", "token=" + tok},
		{"GET", "/static/console.css", ""},
		{"GET", "/ledger", ""},
		{"GET", "/ledger/verify", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port} {
		for _, r := range routes {
			req, _ := http.NewRequest(r.method, "http://"+addr+r.path, strings.NewReader(r.body))
			req.Host = host
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if code, body := do(t, req); code != http.StatusForbidden {
				t.Errorf("Host %s, %s %s: %d %.100s, want 403", host, r.method, r.path, code, body)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "localhost", "[::1]:" + port, "127.0.0.2"} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
		req.Host = host
		if code, body := do(t, req); code != http.StatusOK {
			t.Errorf("Host %s: %d %s", host, code, body)
		}
		req, _ = http.NewRequest("GET", "http://"+addr+"/ledger", nil)
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+tok)
		if code, body := do(t, req); code != http.StatusOK {
			t.Errorf("Host %s, /ledger: %d %.100s", host, code, body)
		}
	}
}

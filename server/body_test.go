package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestSlowBodyOnEveryRoute: a request whose body never arrives is answered
// and its connection let go on every route, with or without a token — not
// only on an authenticated /mcp request — and on "OPTIONS *", which
// net/http answers itself (it held the connection for ever). Before, a client sending headers
// and then a body a byte at a time (or never) held a connection and its
// goroutine for as long as it liked: a token-less client could run the
// server out of file descriptors.
func TestSlowBodyOnEveryRoute(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	tok, _, _ := IssueToken(l, Issue{Agent: "a", Issuer: "op"})
	// Writes get less time than bodies: an answer net/http sends once it
	// has given up on the body is not lost to the write deadline.
	addr, stop := startRun(t, l, Options{BodyTimeout: time.Second, WriteTimeout: 500 * time.Millisecond})
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	cases := []struct {
		name, method, path, headers string
		want                        int
	}{
		{"mcp without a token", "POST", "/mcp", "Content-Type: application/json\r\n", http.StatusUnauthorized},
		{"mcp with a token", "POST", "/mcp", "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer " + tok + "\r\n", http.StatusRequestTimeout},
		{"login form", "POST", "/login", "Content-Type: application/x-www-form-urlencoded\r\n", http.StatusRequestTimeout},
		{"healthz", "POST", "/healthz", "", http.StatusOK},
		{"a console page", "GET", "/ledger", "", http.StatusUnauthorized},
		// Answered by net/http itself, before any handler: bounded by the
		// server's ReadTimeout (headers' and body's), where nothing bounded it.
		{"OPTIONS *", "OPTIONS", "*", "", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// 100 bytes announced, 1 sent: the rest never comes.
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: 100\r\n\r\nt", c.method, c.path, addr, c.headers)
			// A guard against a hang, far beyond the server's second.
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a body that never came: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("status %d, want %d", resp.StatusCode, c.want)
			}
			// The connection is let go: what is left of the body must not
			// be read as another request.
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("connection kept after a late body: %v", err)
			}
		})
	}

	// A body that arrives is served as before, on a connection kept alive
	// for the next request.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	for range 2 {
		body := "token=" + tok
		fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Set-Cookie"), "logbook_console=") {
			t.Fatalf("login: %d %v", resp.StatusCode, resp.Header)
		}
	}
}

// TestUnreadBodyNotWaitedFor: a request answered on its headers alone (no
// token, a bad one, a foreign Host or Origin, a route that takes no body)
// is answered at once and its connection closed, without waiting for a
// body that does not come; a body that did arrive whole is discarded and
// its connection kept. Before, net/http read what was left of the body
// before writing the answer's headers: a token-less POST /mcp announcing a
// body it never sent got its 401 only at the body's deadline (30 s by
// default; here an hour, so the answer never came within the test's guard).
func TestUnreadBodyNotWaitedFor(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	addr, stop := startRun(t, l, Options{BodyTimeout: time.Hour})
	defer stop()
	cases := []struct {
		name, method, path, headers string
		want                        int
	}{
		{"mcp without a token", "POST", "/mcp", "Content-Type: application/json\r\n", http.StatusUnauthorized},
		{"mcp with an unknown token", "POST", "/mcp", "Content-Type: application/json\r\nAuthorization: Bearer lbk_nope\r\n", http.StatusUnauthorized},
		{"mcp cross-origin", "POST", "/mcp", "Content-Type: application/json\r\nSec-Fetch-Site: cross-site\r\n", http.StatusForbidden},
		{"foreign Host", "POST", "/mcp", "Host: evil.example\r\n", http.StatusForbidden},
		{"healthz", "POST", "/healthz", "", http.StatusOK},
		{"a console page", "GET", "/ledger", "", http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			host := "Host: " + addr + "\r\n"
			if strings.HasPrefix(c.headers, "Host:") {
				host = ""
			}
			// 100 bytes announced, 1 sent: the rest never comes.
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\n%s%sContent-Length: 100\r\n\r\nt", c.method, c.path, host, c.headers)
			conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a guard against a hang
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer before the body's deadline: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != c.want || !resp.Close {
				t.Errorf("status %d, close %v; want %d, closed", resp.StatusCode, resp.Close, c.want)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("connection kept waiting for the body: %v", err)
			}
		})
	}

	// A body sent whole with its headers is discarded, and the connection
	// serves the next request.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	for range 2 {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusUnauthorized || resp.Close {
			t.Fatalf("a whole body without a token: %d, close %v; want 401 on a kept connection", resp.StatusCode, resp.Close)
		}
	}
}

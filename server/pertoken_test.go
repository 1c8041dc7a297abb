package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestTokenCannotFillConnections: one token holds at most half of
// MaxConns with requests in flight (here calls whose bodies never arrive,
// held until the body's deadline): one more of its requests is answered
// 429 with Retry-After, and another token is still served. Before, a token
// holder could hold every connection with such requests (or long calls),
// and every other client, whatever its token, got 503.
func TestTokenCannotFillConnections(t *testing.T) {
	l, db := openStore(t, boltstore.Options{Hold: true})
	socket := AdminSocketPath(db)
	addr, stop := startRun(t, l, Options{AdminSocket: socket, MaxConns: 4, BodyTimeout: time.Minute})
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
	send := func(token, sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	open := func(token string) string {
		t.Helper()
		resp := send(token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d", resp.StatusCode)
		}
		resp = send(token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return sid
	}
	sid := open(a)
	// Two calls of the token whose bodies are announced and never sent,
	// held until the body's deadline. One may find the token's count not
	// yet down from a request just answered (a request's slot is given back
	// once its handler returns, just after its answer is sent), and be
	// answered 429 at once: each is watched, and one answered is replaced.
	// (A read that waited 200 ms for an answer stood for the watch: on a
	// loaded machine a 429 came later, the call was counted held, and no
	// third request was ever turned away.)
	var conns []net.Conn
	defer func() { // before stop, which would wait for them
		for _, c := range conns {
			c.Close()
		}
	}()
	hold := func() (answered <-chan struct{}) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c) // held open to the end
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: 100\r\n\r\n{", addr, a, sid)
		ch := make(chan struct{})
		go func() {
			if n, _ := c.Read(make([]byte, 1)); n > 0 {
				c.Close() // answered: not held
				close(ch)
			}
		}()
		return ch
	}
	held := []<-chan struct{}{hold(), hold()}
	// The third: 429 once both are in flight (they are served as they
	// come, so it may come before them; until the cap holds, it is a call
	// answered).
	var resp *http.Response
	var body []byte
	for range 1000 {
		resp = send(a, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			break
		}
		for i, answered := range held {
			select {
			case <-answered:
				held[i] = hold()
			default:
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the token's third request of 4 connections: %d %q; want 429 with Retry-After", resp.StatusCode, body)
	}
	resp = send(b, open(b), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"tools"`) {
		t.Errorf("another token: %d %.200s", resp.StatusCode, body)
	}
}

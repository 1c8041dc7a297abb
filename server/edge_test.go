package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/server/console"
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
	for _, host := range []string{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port,
		"localhost.evil.example.", "localhost..:" + port, "127.0.0.1.:" + port, "evil.localhost:" + port} {
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
	// Host names are case-insensitive (RFC 9110 §4.2.3): a client given
	// http://LOCALHOST:7460/mcp (logbook serve --connect among them) sends
	// the name as written, and was refused 403 on every route.
	// A fully qualified localhost ("localhost.") is the same name: it was
	// refused 403 on every route.
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "localhost", "[::1]:" + port, "[::1]", "127.0.0.2", "LOCALHOST:" + port, "LocalHost",
		"localhost.:" + port, "localhost.", "LOCALHOST.:" + port} {
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
		req, _ = http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if code, body := do(t, req); code != http.StatusOK {
			t.Errorf("Host %s, /mcp: %d %.100s", host, code, body)
		}
	}
}

// serveEdge serves h as Run would (newHTTPServer, opts' defaults as given)
// on a loopback port, and returns its address.
func serveEdge(t *testing.T, h http.Handler, opts Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, opts, slog.New(slog.DiscardHandler))
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// serveEdgeWatched is serveEdge, and waitIdle, which waits until the
// server has seen the client's conn go idle: net/http calls a connection
// idle after its answer is out, so a client that has read the answer may
// go on before the server counts the connection as waiting (on a loaded
// machine, for long enough to dial two more connections).
func serveEdgeWatched(t *testing.T, h http.Handler, opts Options) (addr string, waitIdle func(conn net.Conn)) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, opts, slog.New(slog.DiscardHandler))
	var mu sync.Mutex
	states := map[string]http.ConnState{} // by the client's address
	seen := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		seen(c, s)
		mu.Lock()
		states[c.RemoteAddr().String()] = s
		mu.Unlock()
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), func(conn net.Conn) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			s := states[conn.LocalAddr().String()]
			mu.Unlock()
			if s == http.StateIdle {
				return
			}
		}
		t.Fatalf("the server never saw %s go idle", conn.LocalAddr())
	}
}

// TestUnreadAnswerLetGo: a client that asks for a long answer and never
// reads it is let go once a write has waited WriteTimeout: the handler's
// write fails, and it returns. Before, nothing bounded a write: once the
// socket's buffers were full the handler, its goroutine and the connection
// were held for ever (and a drain with them).
func TestUnreadAnswerLetGo(t *testing.T) {
	wrote := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1<<20)
		for range 256 { // far more than any socket buffers
			if _, err := w.Write(buf); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	})
	addr := serveEdge(t, h, Options{WriteTimeout: 200 * time.Millisecond, BodyTimeout: time.Minute, MaxConns: 8})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(conn, "GET /big HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	// Nothing is read.
	select {
	case err := <-wrote:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("the handler's writes ended with %v, want a timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a client that reads nothing holds the handler")
	}

	// Over HTTP/2 too, where the stream's flow-control window fills.
	tls := httptest.NewUnstartedServer(nil)
	tls.Config = newHTTPServer(h, Options{WriteTimeout: 200 * time.Millisecond, BodyTimeout: time.Minute, MaxConns: 8}, slog.New(slog.DiscardHandler))
	tls.EnableHTTP2 = true
	tls.StartTLS()
	defer tls.Close()
	res, err := tls.Client().Get(tls.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("HTTP/2: the handler wrote 256 MiB to a client reading nothing")
		}
	case <-time.After(time.Minute):
		t.Fatal("HTTP/2: a client that reads nothing holds the handler")
	}
}

// TestStreamOutlivesWriteTimeout: the write deadline bounds each write, not
// the answer: a stream idle for longer than WriteTimeout between two
// events, a call that writes nothing for longer than it, and a long answer
// read steadily, still arrive whole, over HTTP/1.1 and over HTTP/2 (TLS).
// Over HTTP/2 a stream's write deadline is a timer that resets the stream
// when it fires: the deadline set at the request's start, or left from the
// last write, reset an idle stream and a long call WriteTimeout later
// (INTERNAL_ERROR) before it was lifted between writes.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	const timeout = time.Second
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			for i := range 3 {
				if i > 0 {
					time.Sleep(timeout + timeout/2) // idle past the deadline of the last write
				}
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
		case "/slow":
			time.Sleep(timeout + timeout/2) // a call running past the deadline
			io.WriteString(w, "done")
		default:
			w.Write(bytes.Repeat([]byte("x"), 8<<20))
		}
	})
	opts := Options{WriteTimeout: timeout, BodyTimeout: time.Minute, MaxConns: 8}
	tls := httptest.NewUnstartedServer(nil)
	tls.Config = newHTTPServer(h, opts, slog.New(slog.DiscardHandler))
	tls.EnableHTTP2 = true
	tls.StartTLS()
	t.Cleanup(tls.Close)
	tls.Client().Timeout = time.Minute
	for _, proto := range []struct {
		base   string
		client *http.Client
		major  int
	}{
		{"http://" + serveEdge(t, h, opts), &http.Client{Timeout: time.Minute}, 1},
		{tls.URL, tls.Client(), 2},
	} {
		t.Run(fmt.Sprintf("HTTP/%d", proto.major), func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				path string
				want int
			}{{"/stream", len("data: 0\n\ndata: 1\n\ndata: 2\n\n")}, {"/slow", len("done")}, {"/big", 8 << 20}} {
				res, err := proto.client.Get(proto.base + c.path)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || len(b) != c.want || res.ProtoMajor != proto.major {
					t.Errorf("%s: %d bytes over HTTP/%d, %v; want %d", c.path, len(b), res.ProtoMajor, err, c.want)
				}
			}
		})
	}
}

// TestLoginRefusedOnItsHeaders: a login form the server refuses on its
// headers — another host, an encoded body, another site's — is refused
// before any of its body is waited for (review: the slow-form guard read
// it first, for up to the body timeout).
func TestLoginRefusedOnItsHeaders(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			if !console.SameOrigin(r) {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
			r.ParseForm()
		}
	})
	addr := serveEdge(t, h, Options{MaxConns: 8, BodyTimeout: 10 * time.Minute, WriteTimeout: time.Minute})
	for _, c := range []struct {
		name, headers string
		code          int
	}{
		{"another host", "Host: evil.example\r\n", http.StatusForbidden},
		{"an encoded body", "Host: " + addr + "\r\nContent-Encoding: gzip\r\n", http.StatusUnsupportedMediaType},
		{"another site", "Host: " + addr + "\r\nOrigin: http://evil.example\r\n", http.StatusForbidden},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(time.Minute)) // a hang guard: the body would be waited for 10 minutes
		fmt.Fprintf(conn, "POST /login HTTP/1.1\r\n%sContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n", c.headers)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil || res.StatusCode != c.code {
			t.Errorf("%s: %v %v, want %d before the body", c.name, res, err, c.code)
		}
	}
}

// TestSlowLoginFormsMakeRoom: connections sending the login form slowly
// (no token: anyone can) wait as connections sending their headers do —
// one is closed to make room for a new connection — rather than fill the
// server against every token (attack review: 60 of them held a server of
// 50 connections for as long as they kept sending). A form that arrives
// is read as sent.
func TestSlowLoginFormsMakeRoom(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			r.ParseForm()
			fmt.Fprintf(w, "token=%s", r.PostForm.Get("token"))
		}
	})
	addr := serveEdge(t, h, Options{MaxConns: 3, BodyTimeout: time.Minute, WriteTimeout: time.Minute})
	var slow []*bufio.Reader
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nt", addr)
		slow = append(slow, bufio.NewReader(conn))
	}
	time.Sleep(200 * time.Millisecond) // their headers are read: they are being served
	res, err := (&http.Client{Timeout: time.Minute}).Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("a request while slow login forms fill the server: %d, want 200", res.StatusCode)
	}
	// One of them was closed to make room.
	gone := make(chan bool, len(slow))
	for _, br := range slow {
		go func() {
			_, err := br.ReadByte()
			gone <- err == io.EOF || errors.Is(err, syscall.ECONNRESET)
		}()
	}
	if !<-gone {
		t.Error("no slow login form's connection was closed")
	}
	// A whole form is read as sent.
	form := "token=lbk_x"
	res, err = http.Post("http://"+addr+"/login", "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "token=lbk_x" {
		t.Errorf("a login form read through the edge: %q", b)
	}
}

// TestSlowLoginFormsMakeRoomOverHTTP2: as TestSlowLoginFormsMakeRoom, on a
// TLS server speaking HTTP/2, where a connection carries many requests: one
// whose every request is a login form still being read waits, and is
// closed to make room (three such connections kept every client out of a
// server of three: review of stop 33), also after another of its forms
// was reset by its client; one also serving another request is not.
func TestSlowLoginFormsMakeRoomOverHTTP2(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			r.ParseForm()
			fmt.Fprintf(w, "token=%s", r.PostForm.Get("token"))
		case "/busy":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-release
		}
	})
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = newHTTPServer(h, Options{MaxConns: 3, BodyTimeout: time.Minute, WriteTimeout: time.Minute}, slog.New(slog.DiscardHandler))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	defer close(release)
	client := func() *http.Client { // a connection of its own
		c := srv.Client()
		c.Transport = c.Transport.(*http.Transport).Clone()
		c.Timeout = time.Minute
		return c
	}
	type slowForm struct {
		client *http.Client
		body   *io.PipeWriter
		failed chan error
	}
	start := func(ctx context.Context, c *http.Client) slowForm {
		pr, pw := io.Pipe()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/login", pr)
		req.ContentLength = 100
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		f := slowForm{c, pw, make(chan error, 1)}
		go func() {
			res, err := c.Do(req)
			if err == nil {
				res.Body.Close()
				err = fmt.Errorf("answered %d", res.StatusCode)
			}
			f.failed <- err
		}()
		pw.Write([]byte("t"))
		return f
	}
	get := func(c *http.Client, path string) *http.Response {
		t.Helper()
		res, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if res.ProtoMajor != 2 {
			t.Fatalf("GET %s over HTTP/%d", path, res.ProtoMajor)
		}
		return res
	}
	// A connection serving a slow form and another request does not wait.
	busy := client()
	res := get(busy, "/busy")
	defer res.Body.Close()
	bf := start(context.Background(), busy)
	defer bf.body.CloseWithError(errors.New("test over"))
	// Two connections with nothing but slow forms: two each, one of which
	// its client then resets (RST_STREAM), ending that request's context
	// on a connection still open, whose other form still waits.
	var slow []slowForm
	for range 2 {
		c := client()
		f := start(context.Background(), c)
		defer f.body.CloseWithError(errors.New("test over"))
		slow = append(slow, f)
		ctx, reset := context.WithCancel(context.Background())
		g := start(ctx, c)
		defer g.body.CloseWithError(errors.New("test over"))
		time.Sleep(100 * time.Millisecond) // its headers are read
		reset()
		<-g.failed
	}
	time.Sleep(200 * time.Millisecond) // their headers are read: they are being served; the resets seen
	// (Which of the two waited longest depends on when the server saw
	// the resets: either may go first.)
	ended := make(chan error, len(slow))
	for _, f := range slow {
		go func() { ended <- <-f.failed }()
	}
	for i := range 2 {
		res := get(client(), "/healthz")
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("request %d while slow login forms fill the server: %d, want 200", i, res.StatusCode)
		}
		// The one closed to make room is a connection of forms only.
		select {
		case err := <-ended:
			if err == nil || strings.HasPrefix(err.Error(), "answered") {
				t.Errorf("a slow form after request %d: %v, want its connection closed", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("after request %d, no other connection of slow forms was closed", i)
		}
	}
	// The busy connection serves still.
	res2 := get(busy, "/healthz")
	res2.Body.Close()
	if res2.StatusCode != http.StatusOK {
		t.Errorf("the busy connection: %d", res2.StatusCode)
	}
}

// TestConnectionCap: a connection beyond MaxConns closes the one that has
// waited longest without a request being served on it (idle between
// requests, or still sending its headers) and is served; only when every
// connection is serving a request is one more answered 503 with
// Retry-After and closed, on every route; once one is done, a new one is
// served. Before the cap, the server took connections without limit: any
// client, without a token, could hold every file descriptor of the
// process. Before a waiting connection made room, anyone could fill the
// cap with connections kept alive by a /healthz every two minutes, or
// sending a header a byte at a time, and hold every other client out (the
// third connection below was answered 503).
func TestConnectionCap(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-release
		}
	})
	addr, waitIdle := serveEdgeWatched(t, h, Options{MaxConns: 2, BodyTimeout: time.Minute, WriteTimeout: time.Minute})
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(time.Minute))
		return conn, bufio.NewReader(conn)
	}
	get := func(conn net.Conn, br *bufio.Reader, path string) *http.Response {
		t.Helper()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if path != "/busy" {
			io.Copy(io.Discard, res.Body)
		}
		return res
	}
	// closed: the server closed it — an end of file, or a reset where the
	// server closed a socket holding bytes it had not read yet (the slow
	// connection's "Ho", if its goroutine had not read it), not the
	// minute's deadline.
	closed := func(br *bufio.Reader) bool {
		_, err := br.ReadByte()
		return err == io.EOF || errors.Is(err, syscall.ECONNRESET)
	}
	// Two kept alive, idle: a third is served, closing the first.
	idle1, br1 := dial()
	if res := get(idle1, br1, "/healthz"); res.StatusCode != http.StatusOK {
		t.Fatalf("within the cap: %d", res.StatusCode)
	}
	waitIdle(idle1)
	idle2, br2 := dial()
	get(idle2, br2, "/healthz")
	waitIdle(idle2)
	third, br3 := dial()
	if res := get(third, br3, "/healthz"); res.StatusCode != http.StatusOK {
		t.Fatalf("beyond the cap, with idle connections: %d, want 200", res.StatusCode)
	}
	if !closed(br1) {
		t.Error("the longest idle connection was not the one closed")
	}
	// third serves a request: the next connection closes idle2, and the one
	// after it a connection still sending its first headers.
	if res := get(third, br3, "/busy"); res.StatusCode != http.StatusOK {
		t.Fatalf("/busy: %d", res.StatusCode)
	}
	slow, brSlow := dial()
	fmt.Fprintf(slow, "GET /healthz HTTP/1.1\r\nHo")
	if !closed(br2) {
		t.Error("the idle connection was not closed")
	}
	fourth, br4 := dial()
	if res := get(fourth, br4, "/healthz"); res.StatusCode != http.StatusOK {
		t.Fatalf("beyond the cap, with a connection sending its headers: %d, want 200", res.StatusCode)
	}
	if !closed(brSlow) {
		t.Error("the connection still sending its headers was not closed")
	}
	// Every connection serving a request: one more is refused.
	get(fourth, br4, "/busy")
	for _, path := range []string{"/healthz", "/mcp", "/"} {
		conn, br := dial()
		res := get(conn, br, path)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !res.Close {
			t.Errorf("%s beyond the cap, every connection busy: %d %v", path, res.StatusCode, res.Header)
		}
		if !closed(br) {
			t.Errorf("%s: the refused connection is kept", path)
		}
	}
	// Once a request is done its connection waits, and makes room.
	close(release)
	deadline := time.Now().Add(time.Minute)
	for {
		conn, br := dial()
		res := get(conn, br, "/healthz")
		conn.Close()
		if res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("connections done serving still hold the cap")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Over HTTP/2 (TLS) too: an idle connection makes room for a new one.
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = newHTTPServer(h, Options{MaxConns: 1, BodyTimeout: time.Minute, WriteTimeout: time.Minute}, slog.New(slog.DiscardHandler))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for i := range 2 {
		client := srv.Client() // a client of its own: a connection of its own
		client.Transport = client.Transport.(*http.Transport).Clone()
		res, err := client.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.ProtoMajor != 2 {
			t.Errorf("HTTP/2 client %d: %d over HTTP/%d", i, res.StatusCode, res.ProtoMajor)
		}
	}
}

// TestChunkedBodyClosesConnection: a request with Transfer-Encoding (with a
// Content-Length beside it or not) is answered and its connection closed,
// as RFC 9112 §6.1 requires: net/http drops the Content-Length and reads
// the chunks, so a proxy in front that read the Content-Length instead
// would take the bytes after it for another request. Before, the
// connection was kept and those bytes served as the next request.
func TestChunkedBodyClosesConnection(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	addr, stop := startRun(t, l, Options{})
	defer stop()
	for _, cl := range []string{"Content-Length: 4\r\n", ""} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprintf(conn, "POST /healthz HTTP/1.1\r\nHost: %s\r\n%sTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+
			"GET /ledger HTTP/1.1\r\nHost: %s\r\n\r\n", addr, cl, addr)
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK || !res.Close {
			t.Errorf("%q: %d, close %v", cl, res.StatusCode, res.Close)
		}
		if res, err := http.ReadResponse(br, nil); err == nil {
			t.Errorf("%q: the bytes after the chunked body were served as a request: %d", cl, res.StatusCode)
		}
	}
	// A body with a Content-Length keeps its connection.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(conn)
	for range 2 {
		fmt.Fprintf(conn, "POST /healthz HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\n{}", addr)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK || res.Close {
			t.Errorf("with a Content-Length: %d, close %v", res.StatusCode, res.Close)
		}
	}
}

// TestNoHostHTTP10: an HTTP/1.0 request without a Host is served on every
// route of a loopback server: no browser sends one (a page rebound to
// 127.0.0.1 always names its own site), so it is no DNS-rebinding attempt.
// Before, /healthz, the console and /mcp all answered it 403.
func TestNoHostHTTP10(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	tok, _, _ := IssueToken(l, Issue{Agent: "a", Issuer: "op"})
	addr, stop := startRun(t, l, Options{})
	defer stop()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	for _, r := range []struct{ method, path, headers, body string }{
		{"GET", "/healthz", "", ""},
		{"GET", "/ledger", "Authorization: Bearer " + tok + "\r\n", ""},
		{"POST", "/mcp", "Authorization: Bearer " + tok + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n", initialize},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprintf(conn, "%s %s HTTP/1.0\r\n%sContent-Length: %d\r\n\r\n%s", r.method, r.path, r.headers, len(r.body), r.body)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		conn.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s %s without Host: %d %.100s", r.method, r.path, res.StatusCode, b)
		}
	}
}

// TestClosedWaitingIsNotServed: net/http calls a connection active only
// once its request's headers are read, so a connection closed as the
// longest waiting (a connection beyond --max-conns arriving) may hold a
// whole request. It is not served: the client's call, answered by
// nothing, is not committed either. (Through the binary, a client calling
// task_create on a kept-alive connection while connections were opened
// against --max-conns 4: 46 of 310 calls whose connection was closed
// under them had created their task.) A connection that went active
// before one was closed is served.
func TestClosedWaitingIsNotServed(t *testing.T) {
	cs := &conns{max: 1}
	var served []string
	h := cs.refuseOver(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served = append(served, r.URL.Path)
	}))
	serve := func(ctx context.Context, path string) {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, path, nil).WithContext(ctx))
	}
	pipe := func() net.Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a
	}
	// a served one request and waits for the next; its headers are read
	// (not active yet) when b arrives and closes it.
	a := pipe()
	ctxA := cs.opened(context.Background(), a)
	cs.state(a, http.StateNew)
	cs.state(a, http.StateActive)
	serve(ctxA, "/a1")
	cs.state(a, http.StateIdle)
	b := pipe()
	ctxB := cs.opened(context.Background(), b)
	cs.state(b, http.StateNew)
	cs.state(a, http.StateActive)
	serve(ctxA, "/a2")
	// b went active before c arrived: it is served, c answered 503.
	cs.state(b, http.StateActive)
	cs.state(a, http.StateClosed)
	c := pipe()
	ctxC := cs.opened(context.Background(), c)
	serve(ctxB, "/b1")
	if want := []string{"/a1", "/b1"}; !slices.Equal(served, want) {
		t.Errorf("served %q, want %q (a's second request came on a closed connection)", served, want)
	}
	if over, _ := ctxC.Value(overKey{}).(bool); !over {
		t.Error("c is not over the cap, though b serves a request")
	}
}

// TestClosedWaitingStaysClosed: a connection closed to make room that
// net/http then calls idle (its last request, refused by closedUnder,
// finished) is not taken for a waiting one again: the next connection
// beyond the cap, every other one serving, is answered 503 rather than let
// in for closing a connection already closed.
func TestClosedWaitingStaysClosed(t *testing.T) {
	cs := &conns{max: 1}
	pipe := func() net.Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a
	}
	a := pipe()
	cs.opened(context.Background(), a)
	cs.state(a, http.StateNew)
	b := pipe()
	if over, _ := cs.opened(context.Background(), b).Value(overKey{}).(bool); over {
		t.Fatal("b is over the cap, though a waits")
	}
	cs.state(b, http.StateNew)
	cs.state(b, http.StateActive)
	cs.state(a, http.StateActive) // a request read as a was closed
	cs.state(a, http.StateIdle)
	c := pipe()
	if over, _ := cs.opened(context.Background(), c).Value(overKey{}).(bool); !over {
		t.Error("c is let in by closing a again, though a is closed and b serves a request")
	}
}

// TestAmbiguousRequestRefused: on every route, a request giving a header
// the server decides by more than once, or a body in a Content-Encoding
// the server does not decode, is refused before anything of it is served
// (400, 415), and nothing is recorded. Before, net/http's first value was
// taken: a valid token followed by another called the tools as the first
// (a proxy checking the last one let it through), two Content-Types, two
// sessions or revisions chose by the first; and a body marked gzip was
// read as sent, so a plain body so marked was served and recorded.
func TestAmbiguousRequestRefused(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	tok, _, _ := IssueToken(l, Issue{Agent: "a", Issuer: "op"})
	other, _, _ := IssueToken(l, Issue{Agent: "b", Issuer: "op"})
	addr, stop := startRun(t, l, Options{})
	defer stop()
	head := func() (seq uint64) {
		l.View(func(tx *boltstore.Tx) error { seq = tx.Head().Seq; return nil })
		return seq
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"t","project":"p"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	send := func(method, path, body string, header http.Header) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "task_create")
		for k, v := range header {
			req.Header[http.CanonicalHeaderKey(k)] = v
		}
		res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	// The request as sent is served (the control).
	if code, body, _ := send("POST", "/mcp", call, nil); code != http.StatusOK || !strings.Contains(body, `\"ok\":true`) {
		t.Fatalf("the control call: %d %.300s", code, body)
	}
	before := head()
	for _, path := range []string{"/mcp", "/", "/ledger", "/healthz", "/login"} {
		for name, vals := range map[string][]string{
			"Authorization":        {"Bearer " + tok, "Bearer " + other},
			"Content-Type":         {"application/json", "text/plain"},
			"Mcp-Session-Id":       {"a", "b"},
			"Mcp-Protocol-Version": {"2026-07-28", "2025-06-18"},
			"Mcp-Method":           {"tools/call", "tools/call"},
			"Mcp-Name":             {"task_create", "task_get"},
			"Origin":               {"http://" + addr, "http://evil.example"},
			"Sec-Fetch-Site":       {"same-origin", "cross-site"},
		} {
			code, body, _ := send("POST", path, call, http.Header{name: vals})
			if code != http.StatusBadRequest || !strings.Contains(body, "the request carries 2 "+name+" headers") {
				t.Errorf("%s, %s twice: %d %.200s, want 400", path, name, code, body)
			}
		}
		for _, coding := range []string{"gzip", "deflate, gzip", "br", "identity, gzip"} {
			code, body, h := send("POST", path, call, http.Header{"Content-Encoding": {coding}})
			if code != http.StatusUnsupportedMediaType || h.Get("Accept-Encoding") != "identity" || !strings.Contains(body, "does not decode") {
				t.Errorf("%s, Content-Encoding %s: %d %v %.200s, want 415 with Accept-Encoding: identity", path, coding, code, h, body)
			}
		}
	}
	if h := head(); h != before {
		t.Errorf("refused requests appended %d events", h-before)
	}
	// identity is no encoding.
	if code, body, _ := send("POST", "/mcp", call, http.Header{"Content-Encoding": {"identity"}}); code != http.StatusOK || !strings.Contains(body, `\"ok\":true`) {
		t.Errorf("Content-Encoding: identity: %d %.300s", code, body)
	}
}

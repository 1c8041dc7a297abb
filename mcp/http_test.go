package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
)

// httpFixture is an HTTPHandler on a fake Do, behind httptest, with two
// tokens: "full" (agent a), "scoped" (agent b, task_get and task_create,
// read-only) and "health" (agent c, three tools, server_health among them).
func httpFixture(tb testing.TB) (*httptest.Server, *fakeDo) {
	tb.Helper()
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = f.do
	ids := map[string]*Identity{
		"full":   {Agent: "a", Token: "sum-a"},
		"scoped": {Agent: "b", Token: "sum-b", ReadOnly: true, Tools: []string{"task_get", "task_create"}},
		"health": {Agent: "c", Token: "sum-c", Tools: []string{"server_health", "task_get", "task_list"}},
	}
	h := s.HTTPHandler(HTTPOptions{Authenticate: func(_ context.Context, token string) (*Identity, error) {
		if id := ids[token]; id != nil {
			return id, nil
		}
		return nil, ErrUnauthenticated
	}})
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv, f
}

// agentA authenticates every token as agent a.
func agentA(context.Context, string) (*Identity, error) {
	return &Identity{Agent: "a", Token: "sum-a"}, nil
}

// oneAgentServer is an HTTPHandler with opts on a fake Do, every token
// agent a (agentA), behind httptest.
func oneAgentServer(tb testing.TB, opts HTTPOptions) (*httptest.Server, *fakeDo) {
	tb.Helper()
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = f.do
	opts.Authenticate = agentA
	srv := httptest.NewServer(s.HTTPHandler(opts))
	tb.Cleanup(srv.Close)
	return srv, f
}

// post sends one sessionless (2026-07-28) request and returns the status and body.
func post(tb testing.TB, url, token, body string) (int, string) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	setNewHeaders(req, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func newRequest(id int, method, params string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claims-root","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = "{" + meta + "," + params + "}"
	}
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"` + method + `","params":` + params + `}`
}

// setNewHeaders sets the headers the sessionless revision requires: its
// version, the method and (for tools/call) the tool's name.
func setNewHeaders(req *http.Request, body string) {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal([]byte(body), &msg)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", msg.Method)
	if msg.Params.Name != "" {
		req.Header.Set("Mcp-Name", msg.Params.Name)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestHTTPIdentityScopeAndReadOnly(t *testing.T) {
	srv, f := httpFixture(t)
	if code, _ := post(t, srv.URL, "", newRequest(1, "tools/list", "")); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := post(t, srv.URL, "nope", newRequest(1, "tools/list", "")); code != http.StatusUnauthorized {
		t.Errorf("unknown token: %d", code)
	}
	_, body := post(t, srv.URL, "full", newRequest(1, "tools/list", ""))
	if n := strings.Count(body, `"inputSchema"`); n != len(contractTools) {
		t.Errorf("full token lists %d tools", n)
	}
	_, body = post(t, srv.URL, "scoped", newRequest(2, "tools/list", ""))
	if n := strings.Count(body, `"inputSchema"`); n != 2 || !strings.Contains(body, `"task_get"`) {
		t.Errorf("scoped token lists %d tools: %s", n, body)
	}
	// A token's list is its own: no shared cache may serve it to another.
	if !strings.Contains(body, `"cacheScope":"private"`) {
		t.Errorf("scoped token's list is not private to it: %.300s", body)
	}
	calls := []struct{ token, tool, args, want string }{
		{"full", "task_create", `{"title":"t","project":"p"}`, `"ok":true`},
		{"scoped", "task_list", `{}`, `ERR_FORBIDDEN`},
		{"scoped", "nope", `{}`, `ERR_FORBIDDEN`},
		// Out of scope comes before the arguments: a hidden tool shows
		// none of its rules, and an unknown name answers as it does.
		{"scoped", "task_list", `{"limit":"x","bogus":1}`, `ERR_FORBIDDEN`},
		{"scoped", "nope", `{"bogus":1}`, `ERR_FORBIDDEN`},
		{"scoped", "task_create", `{"title":"t","project":"p"}`, `ERR_READ_ONLY`},
		{"scoped", "task_create", `{"project":"p"}`, `ERR_INVALID_INPUT`},
		{"scoped", "task_get", `{"task_id":"T-0001"}`, `"ok":true`},
	}
	for i, c := range calls {
		_, body := post(t, srv.URL, c.token, newRequest(10+i, "tools/call", `"name":"`+c.tool+`","arguments":`+c.args))
		if !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %s, want %s", c.token, c.tool, body, c.want)
		}
	}
	got := f.recorded()
	if len(got) != len(calls) {
		t.Fatalf("Do got %d calls, want %d (every call, refused or not)", len(got), len(calls))
	}
	for i, call := range got {
		want := map[string]string{"full": "a", "scoped": "b"}[calls[i].token]
		if call.Actor != want || call.Client != "claims-root" || call.Token != "sum-"+want {
			t.Errorf("call %d: actor %q client %q token %q", i, call.Actor, call.Client, call.Token)
		}
	}
}

// TestHTTPHealthCountsScope: server_health's tools.registered is what
// tools/list lists to the caller: every tool for a full token, the tools
// of its scope for a scoped one.
func TestHTTPHealthCountsScope(t *testing.T) {
	srv, f := httpFixture(t)
	f.result = func(commands.Call) (any, error) { return &commands.HealthResult{}, nil }
	for token, want := range map[string]int{"full": len(contractTools), "health": 3} {
		_, body := post(t, srv.URL, token, newRequest(1, "tools/call", `"name":"server_health","arguments":{}`))
		if !strings.Contains(body, fmt.Sprintf(`\"tools\":{\"registered\":%d}`, want)) {
			t.Errorf("%s token: server_health %s, want registered %d", token, body, want)
		}
	}
}

// BenchmarkHTTPHandler is the server side of one tool call over HTTP
// (sessionless revision, fake Do), 16 clients in parallel.
func BenchmarkHTTPHandler(b *testing.B) {
	srv, _ := httpFixture(b)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	client := &http.Client{Transport: tr}
	body := newRequest(1, "tools/call", `"name":"server_ping","arguments":{}`)
	var failed atomic.Bool
	var wg sync.WaitGroup
	var next atomic.Int64
	b.ResetTimer()
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				setNewHeaders(req, body)
				req.Header.Set("Authorization", "Bearer full")
				resp, err := client.Do(req)
				if err != nil || resp.StatusCode != 200 {
					failed.Store(true)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		b.Fatal("a request failed")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// TestHTTPSlowBody: a body that does not arrive within BodyTimeout is
// answered 408 and the connection let go, where only the headers were
// bounded.
func TestHTTPSlowBody(t *testing.T) {
	srv, _ := oneAgentServer(t, HTTPOptions{BodyTimeout: 300 * time.Millisecond})

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := newRequest(1, "tools/list", "")
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer x\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"+
		"Content-Length: %d\r\n\r\n%s", srv.Listener.Addr(), len(body), body[:10])
	// No more of the body is sent: the server must answer on its own.
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a body that never came: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", resp.StatusCode)
	}

	// A body that arrives in time is served.
	code, out := post(t, srv.URL, "x", newRequest(2, "tools/call", `"name":"task_get","arguments":{"task_id":"T-0001"}`))
	if code != http.StatusOK || !strings.Contains(out, `"result"`) {
		t.Fatalf("call: %d %s", code, out)
	}
}

// TestHTTPBodyAnnouncedTooLarge: a request whose Content-Length passes
// MaxBodyBytes is answered 413 on its headers, its body not waited for,
// and takes none of the room for bodies held at once (MaxBodiesBytes: here
// one body's): a body within the limit is served meanwhile. Before, it
// took MaxBodyBytes of that room and waited for a body it would never
// read whole until BodyTimeout, then answered 408.
func TestHTTPBodyAnnouncedTooLarge(t *testing.T) {
	srv, _ := oneAgentServer(t, HTTPOptions{MaxBodyBytes: 1000, MaxBodiesBytes: 1001, BodyTimeout: 2 * time.Second})

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer x\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"+
		"Content-Length: 1001\r\n\r\n{", srv.Listener.Addr())
	// The rest of the body is never sent.
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(out), "exceeds 1000 bytes") {
		t.Fatalf("%d %s, want 413", resp.StatusCode, out)
	}
	if code, out := post(t, srv.URL, "x", newRequest(2, "tools/list", "")); code != http.StatusOK || !strings.Contains(out, `"result"`) {
		t.Errorf("a body within the limit: %d %.200s", code, out)
	}
}

// TestHTTPBodiesBounded: the request bodies held at once, all requests
// together, stay within MaxBodiesBytes (a body is held until its request
// is answered): one more waits for room, at most BodyTimeout, then is
// answered 503; once room is made, requests are served again. Before,
// every connection could hold a body of MaxBodyBytes (its call running,
// or its last byte withheld until the deadline) without limit on how
// many: any token could fill the server's memory.
func TestHTTPBodiesBounded(t *testing.T) {
	entered, release := make(chan struct{}, 2), make(chan struct{})
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = func(ctx context.Context, call commands.Call) ([]byte, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-time.After(time.Minute):
		}
		return f.do(ctx, call)
	}
	h := s.HTTPHandler(HTTPOptions{MaxBodyBytes: 1000, MaxBodiesBytes: 2000, BodyTimeout: 500 * time.Millisecond,
		Authenticate: agentA})
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := newRequest(1, "tools/call", `"name":"server_ping","arguments":{}`)
	body += strings.Repeat(" ", 1000-len(body)) // a body of MaxBodyBytes
	held := make(chan int, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer x")
			setNewHeaders(req, body)
			res, err := (&http.Client{Timeout: time.Minute}).Do(req)
			if err != nil {
				held <- 0
				return
			}
			res.Body.Close()
			held <- res.StatusCode
		}()
	}
	<-entered
	<-entered
	// Both bodies are held while their calls run: a third waits, and is
	// answered 503 at its deadline.
	if code, out := post(t, srv.URL, "x", body); code != http.StatusServiceUnavailable {
		t.Fatalf("a body beyond MaxBodiesBytes: %d %s", code, out)
	}
	close(release)
	for range 2 {
		if code := <-held; code != http.StatusOK {
			t.Errorf("a held call: %d", code)
		}
	}
	if code, out := post(t, srv.URL, "x", body); code != http.StatusOK || !strings.Contains(out, `"result"`) {
		t.Errorf("once room is made: %d %s", code, out)
	}
}

// TestHTTPBodyBoundsAtTheirLimits: a MaxBodyBytes so large that 16 times
// it (the default bound on the bodies held at once) passes an int64 still
// takes calls (the product wrapped negative: semaphore.NewWeighted
// panicked, logbook server --max-body-bytes 576460752303423488 with it);
// and a MaxBodiesBytes below MaxBodyBytes still takes a body of unknown
// length (it reserved MaxBodyBytes+1, which never fit: 503 after its wait).
func TestHTTPBodyBoundsAtTheirLimits(t *testing.T) {
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = (&fakeDo{}).do
	body := newRequest(1, "tools/call", `"name":"server_ping","arguments":{}`)
	for _, o := range []HTTPOptions{{MaxBodyBytes: 1 << 59}, {MaxBodyBytes: math.MaxInt64}, {MaxBodyBytes: 1000, MaxBodiesBytes: 500}} {
		o.BodyTimeout = time.Second
		o.Authenticate = func(context.Context, string) (*Identity, error) { return &Identity{Agent: "a", Token: "sum-a"}, nil }
		srv := httptest.NewServer(s.HTTPHandler(o))
		// A body of unknown length (chunked) reserves the most.
		req, _ := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer x")
		setNewHeaders(req, body)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(out), `"result"`) {
			t.Errorf("%d and %d bytes: %d %s", o.MaxBodyBytes, o.MaxBodiesBytes, res.StatusCode, out)
		}
		srv.Close()
	}
}

// TestHTTPRequestsPerToken: a token with MaxRequestsPerToken requests in
// flight (here two calls held running) gets 429 with Retry-After for one
// more, while another token is served, and is served again once one of
// its requests is answered. Before, nothing bounded one token's requests:
// its holder could take every connection the server keeps (calls held
// long, event streams, bodies sent slowly) and every other client got 503.
func TestHTTPRequestsPerToken(t *testing.T) {
	entered, release := make(chan struct{}, 2), make(chan struct{})
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	var hold atomic.Bool
	hold.Store(true)
	s.do = func(ctx context.Context, call commands.Call) ([]byte, error) {
		if call.Actor == "a" && hold.Load() {
			entered <- struct{}{}
			<-release
		}
		return f.do(ctx, call)
	}
	h := s.HTTPHandler(HTTPOptions{MaxRequestsPerToken: 2, Authenticate: func(_ context.Context, token string) (*Identity, error) {
		return &Identity{Agent: token, Token: "sum-" + token}, nil
	}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := newRequest(1, "tools/call", `"name":"server_ping","arguments":{}`)
	send := func(token string) (*http.Response, string, error) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		setNewHeaders(req, body)
		resp, err := testHTTP.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		return resp, string(out), err
	}
	held := make(chan int, 2)
	for range 2 {
		go func() {
			resp, _, err := send("a")
			if err != nil {
				held <- 0
				return
			}
			held <- resp.StatusCode
		}()
	}
	<-entered
	<-entered
	resp, out, err := send("a")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(out), "2 requests in flight") {
		t.Errorf("a third request of the token: %d %v %s; want 429 with Retry-After", resp.StatusCode, resp.Header, out)
	}
	if code, out := post(t, srv.URL, "b", body); code != http.StatusOK || !strings.Contains(out, `"result"`) {
		t.Errorf("another token meanwhile: %d %s", code, out)
	}
	hold.Store(false)
	close(release)
	for range 2 {
		if code := <-held; code != http.StatusOK {
			t.Errorf("a held call: %d", code)
		}
	}
	if code, out := post(t, srv.URL, "a", body); code != http.StatusOK || !strings.Contains(out, `"result"`) {
		t.Errorf("the token once its calls are answered: %d %s", code, out)
	}
}

// TestTokenRevokedWhileBodyIsRead: a token is checked when its headers
// come and again once its body is read: one revoked while the body was on
// its way (up to the body timeout, 30 s by default) is refused, 401, and
// the call never runs (attack review: it wrote after its revocation).
func TestTokenRevokedWhileBodyIsRead(t *testing.T) {
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = f.do
	var revoked atomic.Bool
	checked := make(chan struct{}, 1) // the first check done: the headers'
	srv := httptest.NewServer(s.HTTPHandler(HTTPOptions{Authenticate: func(_ context.Context, token string) (*Identity, error) {
		defer func() {
			select {
			case checked <- struct{}{}:
			default:
			}
		}()
		if token != "t" || revoked.Load() {
			return nil, ErrUnauthenticated
		}
		return &Identity{Agent: "a", Token: "sum-a"}, nil
	}}))
	defer srv.Close()
	body := newRequest(1, "tools/call", `"name":"task_create","arguments":{"title":"after","project":"p"}`)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, pr)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer t")
	setNewHeaders(req, body)
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	pw.Write([]byte(body[:10]))
	// Revoked once the headers are checked (a sleep stood for it: on a
	// loaded machine the headers could be checked after the revocation,
	// and refused there, not once the body was read).
	select {
	case <-checked:
	case <-time.After(time.Minute): // a hang bound
		t.Fatal("the request's headers were never checked")
	}
	revoked.Store(true)
	pw.Write([]byte(body[10:]))
	pw.Close()
	resp := <-got
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "revoked while its request was read") {
		t.Errorf("a token revoked while its body was read: %d %s, want 401", resp.StatusCode, b)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.calls); n != 0 {
		t.Errorf("the call ran %d times", n)
	}
}

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/logbook-dev/logbook/commands"
)

// A forwarded call whose server never answers (stopped, not dead) is
// answered with a JSON-RPC error once CallTimeout has passed, saying its
// outcome is unknown: the bridge waited for ever, and so did its client.
func TestBridgeCallTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := sdk.NewServer(&sdk.Implementation{Name: "stalled", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-release // the test's end, not the request's: a stopped server
			return &sdk.CallToolResult{}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()

	send, answer := openBridge(t, BridgeOptions{URL: ts.URL, Token: "t", CallTimeout: 200 * time.Millisecond})
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	if l := answer("2"); !strings.Contains(l, `"error":{"code":-32035,`) || !strings.Contains(l, "may or may not have been recorded") {
		t.Errorf("a call the server never answers: %s", l)
	}
}

// runBridge runs a Bridge with opts until the test ends, and returns how
// to send it a line and wait for the answer of a given id.
// openBridge is runBridge with the session open: initialize (2025-06-18)
// answered, notifications/initialized sent.
func openBridge(t *testing.T, opts BridgeOptions) (send func(string), answer func(id string) string) {
	send, answer = runBridge(t, opts)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	answer("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return send, answer
}

func runBridge(t *testing.T, opts BridgeOptions) (send func(string), answer func(id string) string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { inW.Close(); cancel() })
	done := make(chan error, 1)
	go func() {
		done <- Bridge(ctx, opts, inR, outW)
		outW.Close()
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 4<<20) // a tools/list answer is past the default 64 KiB
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send = func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	answer = func(id string) string {
		t.Helper()
		for deadline := time.After(30 * time.Second); ; { // a hang guard, not a timing check
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the bridge ended: %v", <-done)
				}
				if strings.Contains(l, `"id":`+id+`,`) {
					return l
				}
			case <-deadline:
				t.Fatalf("no answer to call %s", id)
			}
		}
	}
	return send, answer
}

// A call the server refuses the bridge's token for (revoked while the
// bridge runs: 401) is not recorded, and neither is one the bridge then
// no longer sends: the bridge says so, and why, rather than that the
// server could not be reached and the call may have been recorded.
func TestBridgeTokenRefused(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "tokens", Version: "1"}, nil)
	var ran atomic.Int32
	srv.AddTool(&sdk.Tool{Name: "rec", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ran.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	var revoked atomic.Bool
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if revoked.Load() {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	send, answer := openBridge(t, BridgeOptions{URL: ts.URL, Token: "t"})
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rec","arguments":{}}}`)
	if l := answer("2"); strings.Contains(l, `"error"`) {
		t.Fatalf("before the revocation: %s", l)
	}
	revoked.Store(true)
	for _, id := range []string{"3", "4"} {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"rec","arguments":{}}}`)
		l := answer(id)
		// Each, the bridge's connection kept (not "not sent": the SDK's
		// client ended it on the first 401), within sdkRoom.
		if !strings.Contains(l, `"error":{"code":-32031,`) || !strings.Contains(l, "restart the bridge with a valid token") {
			t.Errorf("call %s, its token refused: %s", id, l)
		}
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}

// A token the server refuses from the start (401) ends the bridge saying
// so, not with the SDK's bare "Unauthorized".
func TestBridgeTokenRefusedAtStart(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer ts.Close()
	err := Bridge(context.Background(), BridgeOptions{URL: ts.URL, Token: "lbk_bad"}, strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "refused the bridge's token (401") {
		t.Errorf("a bridge whose token is refused at start: %v, want it to say the token was refused", err)
	}
}

// TestBridgeFollowsNoRedirect: a --connect URL that redirects elsewhere
// does not get the bridge's token sent there (the token goes on every
// request the client makes, redirects' included); the bridge ends saying
// the URL redirects (attack review: the token reached the redirect's host).
func TestBridgeFollowsNoRedirect(t *testing.T) {
	var leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.Error(w, "nothing", http.StatusNotFound)
	}))
	defer elsewhere.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/steal", code)
		}))
		err := Bridge(context.Background(), BridgeOptions{URL: ts.URL + "/mcp", Token: "lbk_secret"}, strings.NewReader(""), io.Discard)
		ts.Close()
		if err == nil || !strings.Contains(err.Error(), "a redirect, which the bridge does not follow") {
			t.Errorf("a --connect URL answering %d: %v, want it said to redirect", code, err)
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the token was sent %d times to where the URL redirects", n)
	}
}

// TestBridgeAnswersAsDirect: what serve --connect answers a stdio client is
// what serve's own stdio answers, byte for byte, for a client of each
// protocol: the tool list (the server's tools/list is private to the
// caller, the bridge's was the protocol's default public; the tools'
// schemas, decoded by the SDK's client into maps, were re-encoded with
// their members sorted: the same JSON value, not the same bytes, and not
// the properties in the order the server gives them) and every tool
// call, including the ones refused (the SDK serving the logbook server marks
// each result with _meta io.modelcontextprotocol/serverInfo for the
// bridge's client, of the newest protocol, which the bridge passed on).
func TestBridgeAnswersAsDirect(t *testing.T) {
	srv, _ := httpFixture(t)
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	lines := []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"task_get","arguments":{"task_id":5}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"t","project":"p","x":1}}}`,
	}
	for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		send, answer := runBridge(t, BridgeOptions{URL: srv.URL, Token: "full"})
		direct := startSession(t, s)
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`
		send(init)
		answer("1")
		direct.send(init)
		direct.recvLine()
		for _, l := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
			send(l)
			direct.send(l)
		}
		for i, l := range lines {
			send(l)
			direct.send(l)
			got, want := answer(itoa(i+2)), direct.recvLine()
			if strings.TrimSpace(got) != strings.TrimSpace(want) {
				at := 0
				for at < len(got) && at < len(want) && got[at] == want[at] {
					at++
				}
				t.Errorf("%s: %s\nthrough the bridge, from byte %d: %s\ndirect:                           %s", version, l, at, clipLine(got[at:]), clipLine(want[at:]))
			}
		}
	}
}

func clipLine(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// TestBridgeRefusedRequest: a call the logbook server refuses at the HTTP
// level (400: a tools/call with no tool name, which the SDK's client sends
// without the Mcp-Name header the server requires of its protocol) was
// answered "could not be reached; the call may or may not have been
// recorded"; nothing was recorded, and the bridge now says so, with the
// status.
func TestBridgeRefusedRequest(t *testing.T) {
	srv, f := httpFixture(t)
	send, answer := openBridge(t, BridgeOptions{URL: srv.URL, Token: "full"})
	for i, params := range []string{`{}`, `{"name":""}`, `{"name":"","arguments":{"x":1}}`} {
		id := itoa(i + 2)
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`)
		l := answer(id)
		if !strings.Contains(l, `"error":{"code":-32020,`) || strings.Contains(l, "may or may not") || !strings.Contains(l, "(400 Bad Request); the call was not recorded") {
			t.Errorf("tools/call %s through the bridge: %s", params, l)
		}
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("Do got %d calls, want none", n)
	}
}

// TestBridgeServerDown: a call forwarded once the server has gone (its
// port refuses connections: stopped, restarting) was never sent, and the
// bridge says so: it answered "could not be reached; the call may or may
// not have been recorded", sending the agent to look for a call that
// cannot be there.
func TestBridgeServerDown(t *testing.T) {
	srv, f := httpFixture(t)
	send, answer := openBridge(t, BridgeOptions{URL: srv.URL, Token: "full", CallTimeout: 10 * time.Second})
	srv.Close()
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"t","project":"p"}}}`)
	if l := answer("2"); !strings.Contains(l, `"error":{"code":-32034,`) || strings.Contains(l, "may or may not") || !strings.Contains(l, "was not sent to the logbook server, and was not recorded") {
		t.Errorf("a call to a server that is down: %s", clipLine(l))
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("Do got %d calls, want none", n)
	}
}

// TestBridgeUnsendableName: a tool name holding a control character goes
// into the Mcp-Name header the SDK's client sets, which net/http refuses
// to send; the bridge answered "could not be reached; the call may or may
// not have been recorded", though it never left: it now says it was not
// sent, and not recorded.
//
// The log names such a tool as an error quotes a name, at most 64
// characters of it (attack5: the whole name was logged, 200 KB a line).
func TestBridgeUnsendableName(t *testing.T) {
	srv, f := httpFixture(t)
	var logged syncBuffer
	send, answer := openBridge(t, BridgeOptions{URL: srv.URL, Token: "full", Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	long := "SECRET" + strings.Repeat("x", 100000) + `\u0001`
	for i, name := range []string{`a\nb`, `a\u0000b`, `tab\there\u007f`, long} {
		id := itoa(i + 2)
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`)
		l := answer(id)
		if !strings.Contains(l, `"error":{"code":-32034,`) || strings.Contains(l, "may or may not") || !strings.Contains(l, "was not sent to the logbook server, and was not recorded") {
			t.Errorf("tools/call %s through the bridge: %s", name, l)
		}
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("Do got %d calls, want none", n)
	}
	if log := logged.String(); !strings.Contains(log, "SECRET") || len(log) > 4096 {
		t.Errorf("the log of the failed calls is %d bytes, holding the name whole or none of it:\n%.300s", len(log), log)
	}
}

// TestBridgeRetriesRefusedForNow: a call the logbook server turns away
// because the bridge's token has as many requests in flight as one token
// may (429 with Retry-After: another bridge, or client, using the token
// holds them) was never begun, so the bridge sends it again, after
// Retry-After, until it is served: the call is recorded once. One turned
// away until its deadline is answered saying so (not recorded, the
// server's words, that the bound is the token's), and the bridge serves
// the next. Before, the first 429 was passed to the agent as "refused the
// request (429 Too Many Requests)", saying neither why nor to try again.
func TestBridgeRetriesRefusedForNow(t *testing.T) {
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	entered, release, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	s.do = func(ctx context.Context, call commands.Call) ([]byte, error) {
		if hold.Load() && call.Name == "task_list" {
			entered <- struct{}{}
			select {
			case <-release:
			case <-done: // the test ended early
			}
		}
		return f.do(ctx, call)
	}
	h := s.HTTPHandler(HTTPOptions{MaxRequestsPerToken: 1, Authenticate: agentA}) // every bridge, one token
	var refusals atomic.Int32
	refused := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(rw, r)
		if rw.status == http.StatusTooManyRequests {
			refusals.Add(1)
			refused <- struct{}{}
		}
	}))
	defer srv.Close()
	defer close(done) // before the server's Close, which waits for its requests
	var log syncBuffer
	// The call served after two refusals has the default deadline, a
	// minute: with a deadline of 3 s it had to be sent a third time, after
	// its Retry-After of 1 s each time, before 2 s had passed, the held
	// request released and ended by then, which a loaded machine may not do.
	logger := slog.New(slog.NewTextHandler(&log, nil))
	send, answer := openBridge(t, BridgeOptions{URL: srv.URL, Token: "x", Logger: logger})

	// Another holder of the token has its one request in flight.
	hold.Store(true)
	held := make(chan int, 1)
	go func() {
		code, _ := post(t, srv.URL, "x", newRequest(9, "tools/call", `"name":"task_list","arguments":{}`))
		held <- code
	}()
	<-entered
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"t","project":"p"}}}`)
	for range 2 { // turned away twice: the other request ends
		select {
		case <-refused:
		case <-time.After(30 * time.Second): // a hang guard, not a timing check
			t.Fatalf("the call was not sent again once turned away: %s", clipLine(answer("2")))
		}
	}
	hold.Store(false)
	release <- struct{}{}
	if l := answer("2"); strings.Contains(l, `"error"`) || !strings.Contains(l, `task_create`) {
		t.Errorf("a call turned away twice, then served: %s", clipLine(l))
	}
	if code := <-held; code != http.StatusOK {
		t.Errorf("the held request: %d", code)
	}
	creates := 0
	for _, c := range f.recorded() {
		if c.Name == "task_create" {
			creates++
		}
	}
	if creates != 1 {
		t.Errorf("task_create ran %d times, want once", creates)
	}

	// Held past the call's deadline: answered, not recorded, saying why.
	// Through a bridge whose calls wait 10 s: sent again once at least
	// unless the first refusal took 9 s.
	send, answer = openBridge(t, BridgeOptions{URL: srv.URL, Token: "x", CallTimeout: 10 * time.Second, Logger: logger})
	hold.Store(true)
	go func() {
		code, _ := post(t, srv.URL, "x", newRequest(10, "tools/call", `"name":"task_list","arguments":{}`))
		held <- code
	}()
	<-entered
	before := refusals.Load()
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"u","project":"p"}}}`)
	l := answer("3")
	if !strings.Contains(l, `"error"`) || strings.Contains(l, "may or may not") || !strings.Contains(l, "(429 Too Many Requests: busy for this token); not recorded: call again shortly") {
		t.Errorf("a call turned away until its deadline: %s", clipLine(l))
	}
	// The operator reads in the log what the server said, and what to do.
	if said := log.String(); !strings.Contains(said, `1 requests in flight`) || !strings.Contains(said, "shared by every bridge and client using it") {
		t.Errorf("the bridge's log: %s", said)
	}
	if refusals.Load()-before < 2 {
		t.Errorf("sent %d times, want it sent again", refusals.Load()-before)
	}
	hold.Store(false)
	release <- struct{}{}
	<-held
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`)
	if l := answer("4"); strings.Contains(l, `"error"`) {
		t.Errorf("the next call: %s", clipLine(l))
	}
	creates = 0
	for _, c := range f.recorded() {
		if c.Name == "task_create" {
			creates++
		}
	}
	if creates != 1 {
		t.Errorf("task_create ran %d times in all, want once", creates)
	}
}

// statusWriter notes the status its answer was given.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestBridgeResendsOnlyWhatWasNeverBegun: a 503 is a refusal for now
// (never begun, sent again) only as the logbook server writes its own,
// with Retry-After (connections or bodies at their bound). A 503 without
// it may come from a proxy in front whose upstream connection ended after
// the request was sent (Envoy's "upstream connect error or
// disconnect/reset before headers"): the call may have run. Before, the
// bridge sent such a call again and task_create ran twice; it now sends
// it once and answers that its outcome is unknown. A 503 with Retry-After
// is still sent again.
func TestBridgeResendsOnlyWhatWasNeverBegun(t *testing.T) {
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = f.do
	h := s.HTTPHandler(HTTPOptions{Authenticate: agentA})
	var ranThen503, refusedFirst atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		switch {
		case bytes.Contains(body, []byte(`"title":"ran"`)) && ranThen503.Add(1) == 1:
			// The upstream ran the call; its answer was lost on the way.
			h.ServeHTTP(httptest.NewRecorder(), r)
			http.Error(w, "upstream connect error or disconnect/reset before headers", http.StatusServiceUnavailable)
			return
		case bytes.Contains(body, []byte(`"title":"later"`)) && refusedFirst.Add(1) == 1:
			// The logbook server's own refusal for now: nothing ran.
			w.Header().Set("Retry-After", "0")
			http.Error(w, "too many connections to this server; try again shortly", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	send, answer := openBridge(t, BridgeOptions{URL: srv.URL, Token: "x", CallTimeout: 10 * time.Second})
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"ran","project":"p"}}}`)
	if l := answer("2"); !strings.Contains(l, `"error"`) || !strings.Contains(l, "(or a proxy) answered 503 Service Unavailable; the call may or may not have been recorded") {
		t.Errorf("a call answered 503 without Retry-After: %s", clipLine(l))
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"later","project":"p"}}}`)
	if l := answer("3"); strings.Contains(l, `"error"`) {
		t.Errorf("a call refused for now once (503, Retry-After), then served: %s", clipLine(l))
	}
	titles := map[string]int{}
	for _, c := range f.recorded() {
		if c.Name == "task_create" {
			var a struct{ Title string }
			_ = json.Unmarshal(c.Args, &a)
			titles[a.Title]++
		}
	}
	if titles["ran"] != 1 || titles["later"] != 1 {
		t.Errorf("task_create ran %v, want each title once", titles)
	}
}

// TestBridgeResentCallLostIsUnknown: a call turned away for now (429),
// sent again, and run by the server, whose answer is then lost (the
// server killed, its connection closed), was answered "turned the call
// away 2 times ... not recorded: call again shortly": the first send's
// status was still what the bridge knew of the call. An agent calling
// again would record it twice. Each send now forgets what the one before
// was answered: the call's outcome is unknown, and said to be.
func TestBridgeResentCallLostIsUnknown(t *testing.T) {
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	s.do = f.do
	h := s.HTTPHandler(HTTPOptions{Authenticate: agentA})
	var sends atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"title":"lost"`)) {
			h.ServeHTTP(w, r)
			return
		}
		if sends.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "this token has 1 requests in flight", http.StatusTooManyRequests)
			return
		}
		// Run, then the server is gone before it answers.
		h.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	defer srv.Close()
	send, answer := openBridge(t, BridgeOptions{URL: srv.URL, Token: "x", CallTimeout: 10 * time.Second})
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"lost","project":"p"}}}`)
	if l := answer("2"); !strings.Contains(l, `"error"`) || !strings.Contains(l, "may or may not") || strings.Contains(l, "not recorded") {
		t.Errorf("a call turned away, sent again, run and its answer lost: %s", clipLine(l))
	}
	if n := sends.Load(); n != 2 {
		t.Errorf("sent %d times, want 2", n)
	}
	if n := len(f.recorded()); n != 1 {
		t.Errorf("Do got %d calls, want 1", n)
	}
}

// TestBridgeSurvivesARefusedRequest: a request the logbook server refuses
// at the HTTP level with a plain answer, no JSON-RPC error in it (413, a
// body past --max-body-bytes, refused on its headers; 408, a body late; or
// a proxy in front, 403, 501),
// made the go-sdk's client behind the bridge take its connection for
// broken: the call was answered "refused; not recorded", and so was every
// later call of the agent ("not sent to the logbook server"), until the
// bridge was restarted. A call within serve's own 4 MiB could meet the
// server's 4 MiB bound through the bridge, which adds the client's name to
// it. The refusal is now the one call's, and the bridge serves the next.
func TestBridgeSurvivesARefusedRequest(t *testing.T) {
	srv, f := oneAgentServer(t, HTTPOptions{MaxBodyBytes: 4000})
	quiet := slog.New(slog.DiscardHandler)
	send, answer := openBridge(t, BridgeOptions{URL: srv.URL, Token: "t", Logger: quiet})
	big := strings.Repeat("x", 5000)
	for i := range 3 {
		id := itoa(2 + 2*i)
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"task_list","arguments":{"search":"` + big + `"}}}`)
		if l := answer(id); !strings.Contains(l, `"code":-32032`) || !strings.Contains(l, "(413 Request Entity Too Large); the call was not recorded") {
			t.Errorf("a call past the server's body bound: %s", clipLine(l))
		}
		id = itoa(3 + 2*i)
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`)
		if l := answer(id); strings.Contains(l, `"error"`) {
			t.Errorf("the call after it: %s", clipLine(l))
		}
	}
	if n := len(f.recorded()); n != 3 {
		t.Errorf("Do got %d calls, want the 3 pings", n)
	}

	// The class: any plain 4xx or 5xx but 401 (the token refused: nothing
	// more is sent) and 404 (a session the server no longer has).
	sdkSrv := sdk.NewServer(&sdk.Implementation{Name: "plain", Version: "1"}, nil)
	var ran atomic.Int32
	sdkSrv.AddTool(&sdk.Tool{Name: "rec", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ran.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return sdkSrv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var call struct {
			Params struct {
				Arguments struct {
					Status int `json:"status"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &call) == nil && call.Params.Arguments.Status != 0 {
			http.Error(w, "refused", call.Params.Arguments.Status)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	send, answer = openBridge(t, BridgeOptions{URL: ts.URL, Token: "t", Logger: quiet})
	for i, status := range []int{400, 403, 405, 408, 413, 415, 422, 501, 505} {
		id := itoa(10 + 2*i)
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"rec","arguments":{"status":` + itoa(status) + `}}}`)
		code, said := `"code":-32032`, "the call was not recorded"
		if status >= 500 {
			code, said = `"code":-32035`, "the call may or may not have been recorded"
		}
		if l := answer(id); !strings.Contains(l, code) || !strings.Contains(l, itoa(status)+" "+http.StatusText(status)) || !strings.Contains(l, said) {
			t.Errorf("a call refused %d: %s", status, clipLine(l))
		}
		id = itoa(11 + 2*i)
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"rec","arguments":{}}}`)
		if l := answer(id); strings.Contains(l, `"error"`) {
			t.Errorf("the call after one refused %d: %s", status, clipLine(l))
		}
	}
	if n := ran.Load(); n != 9 {
		t.Errorf("the tool ran %d times, want 9", n)
	}
}

// TestBridgeFailureCodes: each way a forwarded call can fail is answered
// with its own documented JSON-RPC code (TOOLS.md, "serve --connect"),
// saying whether the call was recorded, never the bare -32603 every one
// of them got; and a failure answer that is no JSON-RPC error (401, 403,
// 413 as plain text) no longer ends the bridge's connection to the
// server: the SDK's client closed it, and every later call was answered
// "not sent".
func TestBridgeFailureCodes(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "failing", Version: "1"}, nil)
	var ran atomic.Int32
	for _, name := range []string{"ok", "cut"} {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				ran.Add(1)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ran"}}}, nil
			})
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string
			Params struct{ Name string }
		}
		json.Unmarshal(body, &msg)
		name := msg.Params.Name
		switch status, _ := strconv.Atoi(strings.TrimPrefix(name, "s")); {
		case status != 0:
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "0")
			}
			http.Error(w, "said "+name, status)
		case name == "cut":
			// The call runs, and its answer is lost: the connection
			// closes before it.
			h.ServeHTTP(httptest.NewRecorder(), r)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			h.ServeHTTP(w, r)
		}
	}))
	defer ts.Close()
	send, answer := openBridge(t, BridgeOptions{URL: ts.URL, Token: "t", CallTimeout: 5 * time.Second})
	id := 1
	call := func(name string) string {
		id++
		send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`)
		return answer(itoa(id))
	}
	for _, c := range []struct {
		tool, code, says string
	}{
		{"s401", "-32031", "refused the bridge's token (401: unknown or revoked); not recorded"},
		{"s403", "-32032", "refused the request (403 Forbidden); the call was not recorded: said s403"},
		{"s413", "-32032", "refused the request (413 Request Entity Too Large); the call was not recorded"},
		{"s404", "-32032", "refused the request (404 Not Found); the call was not recorded"},
		{"s429", "-32033", "turned the call away"},
		{"s302", "-32032", "(or a proxy) redirected the request (302 Found); the call was not recorded"},
		{"s307", "-32032", "redirected the request (307 Temporary Redirect); the call was not recorded"},
		{"s500", "-32035", "answered 500 Internal Server Error; the call may or may not have been recorded"},
		{"s501", "-32035", "answered 501 Not Implemented; the call may or may not have been recorded"},
		{"s502", "-32035", "answered 502 Bad Gateway; the call may or may not have been recorded"},
		{"cut", "-32035", "failed before its answer; the call may or may not have been recorded"},
		// The server's own JSON-RPC error, at 200: passed on.
		{"nope", "-32602", `"message":"unknown tool \"nope\""`},
	} {
		l := call(c.tool)
		if !strings.Contains(l, `"error":{"code":`+c.code+`,`) || !strings.Contains(l, c.says) {
			t.Errorf("%s: %s\nwant code %s saying %q", c.tool, l, c.code, c.says)
		}
		// The bridge goes on serving.
		if l := call("ok"); !strings.Contains(l, `"text":"ran"`) {
			t.Errorf("a call after %s: %s", c.tool, l)
		}
	}
}

// TestBridgeSessionEnded: an answer the SDK's client cannot read (a proxy
// in front garbling it) ends its connection for good. That call was sent
// and answered, so it may have run; every later one is never sent, and
// was answered "no connection to the server could be made", though the
// server may be up: it now says the bridge's session ended, and to
// restart the bridge.
func TestBridgeSessionEnded(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "garbled", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ran"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if strings.Contains(string(body), `"garbled"`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "not JSON")
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	send, answer := openBridge(t, BridgeOptions{URL: ts.URL, Token: "t"})
	for i, c := range []struct{ tool, code, says string }{
		{"garbled", "-32035", "may or may not have been recorded"},
		{"ok", "-32034", "was not recorded: its session with the server ended: restart the bridge"},
	} {
		id := itoa(i + 2)
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + c.tool + `","arguments":{}}}`)
		if l := answer(id); !strings.Contains(l, `"error":{"code":`+c.code+`,`) || !strings.Contains(l, c.says) {
			t.Errorf("%s: %s\nwant code %s saying %q", c.tool, l, c.code, c.says)
		}
	}
}

// A call whose deadline passes may have run; the SDK's client then sends
// notifications/cancelled with the call's context values, after the call
// returned. What that notification was answered (403 here; a 429 when the
// token's requests in flight are full, as they are when calls time out)
// was read as the call's answer, and the call told "not recorded" (-32032,
// -32033), so the agent would make it again: half the runs on the old
// code. It is -32035 (may or may not be recorded) whatever the notice
// gets; the RoundTrip part fails on the old code every time.
func TestBridgeCancelNoticeIsNotTheCallsAnswer(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests, http.StatusUnauthorized} {
		var post posted
		post.tried.Store(true) // the call's POST, sent, its answer lost
		b := bearer{token: "t", next: roundTrip(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {"9"}}, Body: io.NopCloser(strings.NewReader("no"))}, nil
		})}
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), postedKey{}, &post), time.Second)
		notice := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"context deadline exceeded"}}`
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://x/mcp", strings.NewReader(notice))
		if resp, err := b.RoundTrip(r); err == nil {
			resp.Body.Close()
		}
		cancel()
		var rpc *jsonrpc.Error
		if !errors.As(callFailure(&post, context.DeadlineExceeded), &rpc) || rpc.Code != CodeBridgeUnknown {
			t.Errorf("a timed-out call whose notifications/cancelled got %d: %v", status, rpc)
		}
	}

	release := make(chan struct{})
	defer close(release)
	srv := sdk.NewServer(&sdk.Implementation{Name: "stalled", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-release
			return &sdk.CallToolResult{}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if strings.Contains(string(body), methodCancelled) {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	send, answer := openBridge(t, BridgeOptions{URL: ts.URL, Token: "t", CallTimeout: 200 * time.Millisecond})
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	if l := answer("2"); !strings.Contains(l, `"error":{"code":-32035,`) {
		t.Errorf("a call that timed out, its cancellation refused: %s", l)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/commands"
)

const parseError = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`

// ping sends a tools/call server_ping and checks that it is answered.
func (c *session) ping() {
	c.t.Helper()
	res := c.toolCall("server_ping", "")
	if res["isError"] == true {
		c.t.Fatalf("server_ping failed: %v", res)
	}
}

func TestMalformedLineGetsParseErrorAndSessionGoesOn(t *testing.T) {
	f := &fakeDo{}
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	c.initialize()
	for _, bad := range []string{`{not json`, `{"jsonrpc":"2.0","id":1,"method":"ping"`, "\x00\x01", `{"a":1}}`, `tru`} {
		c.send(bad)
		if got := c.recvLine(); got != parseError {
			t.Errorf("after %q got %s, want %s", bad, got, parseError)
		}
		c.ping()
	}
}

func TestParseErrorBeforeInitialize(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.send(`garbage`)
	if got := c.recvLine(); got != parseError {
		t.Errorf("got %s, want %s", got, parseError)
	}
	c.initialize()
	c.ping()
}

// TestSDKRefusalsCarryACode: the requests the SDK refuses itself (a call
// before initialize, a second initialize, params it cannot read) were
// answered with code 0, which JSON-RPC does not define: each now has the
// code of what was wrong, and the session goes on.
func TestSDKRefusalsCarryACode(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	initialized := false
	for _, tc := range []struct {
		before bool // sent before initialize
		line   string
		code   float64
		says   string
	}{
		{true, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, -32600, "invalid during session initialization"},
		{true, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`, -32600, "invalid during session initialization"},
		// The SDK wraps what it says of initialize's params in "handling
		// 'initialize': ": still the client's params, not the server failing.
		{true, `{"jsonrpc":"2.0","id":21,"method":"initialize","params":"x"}`, -32602, "unmarshaling"},
		{true, `{"jsonrpc":"2.0","id":22,"method":"initialize","params":null}`, -32600, "missing required"},
		{false, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`, -32600, "duplicate"},
		{false, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"}`, -32602, "unmarshaling"},
		{false, `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":"!!"}}`, -32602, ""},
		{false, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":5,"arguments":{}}}`, -32602, "unmarshaling"},
	} {
		if !tc.before && !initialized {
			c.initialize()
			initialized = true
		}
		c.send(tc.line)
		r := c.recv()
		e, _ := r["error"].(map[string]any)
		if e == nil || e["code"] != tc.code || !strings.Contains(fmt.Sprint(e["message"]), tc.says) {
			t.Errorf("%s: got %v, want error code %v saying %q", tc.line, r, tc.code, tc.says)
		}
	}
	c.ping()
}

// TestLifecycleMistakesAreNotServerErrors: a client's initialize sent
// again in its session, and its initialized notification sent before
// initialize, are the client's mistakes: the second initialize is
// refused -32600 as before, and the session goes on, but neither is
// logged at ERROR (the SDK logged both so), over stdio and HTTP; nor are
// a second initialized notification, a call before initialize (stdio)
// and ping at the sessionless revision (HTTP), which the SDK also logged
// at ERROR (three records on the old code).
func TestLifecycleMistakesAreNotServerErrors(t *testing.T) {
	again := `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`
	refused := func(how string, r map[string]any) {
		t.Helper()
		if e, _ := r["error"].(map[string]any); e == nil || e["code"] != float64(-32600) || !strings.Contains(fmt.Sprint(e["message"]), "duplicate") {
			t.Errorf("%s: second initialize answered %v, want -32600 duplicate", how, r)
		}
	}
	s, logs := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.initialize()
	c.send(again)
	refused("stdio", c.recv())
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`) // a second time
	c.ping()
	// A call before initialize, which the SDK refuses before any
	// middleware (and logged at ERROR, as the two below).
	early := startSession(t, s)
	early.send(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	if r := early.recv(); r["error"] == nil {
		t.Errorf("tools/list before initialize answered %v, want an error", r)
	}

	var httpLogs syncBuffer
	hs := New(nil, Options{Logger: slog.New(slog.NewTextHandler(&httpLogs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	hs.do = (&fakeDo{}).do
	srv := httptest.NewServer(hs.HTTPHandler(HTTPOptions{Authenticate: agentA}))
	t.Cleanup(srv.Close)
	sid := openSession(t, srv.URL, "full")
	_, _, body := statefulPost(t, srv.URL, "full", sid, again)
	var r map[string]any
	json.Unmarshal([]byte(body), &r)
	refused("HTTP", r)
	// A method the sessionless revision removed, sent at that revision.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	resp := mcpRequest(t, http.MethodPost, srv.URL, "full", "", "2026-07-28", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{`+meta+`}}`)
	pinged, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(pinged), `"code":-32601`) {
		t.Errorf("ping at 2026-07-28 answered %d %s, want -32601", resp.StatusCode, pinged)
	}
	for how, l := range map[string]string{"stdio": logs.String(), "HTTP": httpLogs.String()} {
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("%s: a client's mistake logged at ERROR:\n%s", how, l)
		}
	}
}

// TestToolNameNullOrMissingIsEmpty: a tools/call whose name is null or
// missing is read as the empty name (the SDK decodes into a string), so it
// is answered and recorded as the unknown tool "", as TOOLS.md says.
func TestToolNameNullOrMissingIsEmpty(t *testing.T) {
	f := &fakeDo{}
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	c.initialize()
	for _, params := range []string{`{"name":null,"arguments":{}}`, `{"arguments":{}}`} {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`)
		if r := c.recv(); r["result"] == nil {
			t.Errorf("%s: got %v, want a tool result", params, r)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) != 2 || f.calls[0].Name != "" || f.calls[1].Name != "" {
		t.Errorf("Do got %d calls (%+v), want two of the tool \"\"", len(f.calls), f.calls)
	}
}

func TestBlankLinesIgnored(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.send("")
	c.send("   \t")
	c.send("\r")
	c.initialize()
	c.send("")
	c.ping() // the next line out is the ping's answer, not an error for the blanks
}

func TestInvalidRequests(t *testing.T) {
	tests := []struct{ line, want string }{
		{`[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are not supported"}}`},
		{`[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are not supported"}}`},
		{`42`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		// Only JSON's white space is trimmed: a no-break space around a
		// message makes the line no JSON (as an HTTP body), not a ping.
		{"\u00a0" + `{"jsonrpc":"2.0","id":15,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{`"ping"`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{`{"foo":1}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: neither a request (no method) nor a response (an id, and a result or an error)"}}`},
		// A member given twice, a method no string, an id with neither a
		// method nor one answer: refused by id (the SDK read the last copy,
		// answered -32601 for a method null, or never answered).
		{`{"jsonrpc":"2.0","id":1,"method":null}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request: method is not a string"}}`},
		{`{"jsonrpc":"2.0","method":null}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: method is not a string"}}`},
		{`{"jsonrpc":"2.0","id":2}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: neither a request (no method) nor a response (an id, and a result or an error)"}}`},
		{`{"jsonrpc":"2.0","id":"p","params":{}}`, `{"jsonrpc":"2.0","id":"p","error":{"code":-32600,"message":"Invalid Request: neither a request (no method) nor a response (an id, and a result or an error)"}}`},
		// An answer's id is the client's own request's: the error is not
		// sent under it, which would seem to answer that request.
		{`{"jsonrpc":"2.0","id":4,"result":1,"error":{"code":1,"message":"x"}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: neither a request (no method) nor a response (an id, and a result or an error)"}}`},
		{`{"jsonrpc":"2.0","id":6,"method":"ping","method":"tools/call"}`, `{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"Invalid Request: member \"method\" given more than once"}}`},
		{`{"jsonrpc":"2.0","id":6,"method":"ping","\u006dethod":"tools/call"}`, `{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"Invalid Request: member \"method\" given more than once"}}`},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"server_ping","name":"task_create","arguments":{}}}`, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: member \"name\" given more than once"}}`},
		{`{"jsonrpc":"2.0","id":14,"result":{},"result":null}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: member \"result\" given more than once"}}`},
		{`{"jsonrpc":"2.0","id":9,"result":{},"id":10}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: member \"id\" given more than once"}}`},
		{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"b":1,"a":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10}}`, `{"jsonrpc":"2.0","id":12,"error":{"code":-32602,"message":"Invalid params: member \"a\" given more than once"}}`},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"task_create","arguments":{},"arguments":{"title":"t"}}}`, `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params: member \"arguments\" given more than once"}}`},
		{`{"id":7,"method":"ping"}`, `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{`{"jsonrpc":"1.0","id":"a","method":"ping"}`, `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid Request"}}`},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the id must be one string or number of at most 1024 bytes"}}`},
	}
	// What a message holds besides a tool call's arguments is bounded
	// (maxBesideArguments): _meta, another method's params — its name and
	// arguments too.
	for i, m := range []struct {
		line    string
		exempts string // what of it is a tool call's name and arguments
	}{
		{`{"jsonrpc":"2.0","id":16,"method":"ping","params":{"_meta":{"x":"` + strings.Repeat("a", maxBesideArguments) + `"}}}`, ""},
		{`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"server_ping","arguments":{},"_meta":{"x":[` + strings.Repeat(`0,`, maxBesideArguments/2) + `0]}}}`, `{}"server_ping"`},
		{`{"jsonrpc":"2.0","id":18,"method":"prompts/get","params":{"name":"` + strings.Repeat("n", maxBesideArguments) + `","arguments":{}}}`, ""},
		{`{"jsonrpc":"2.0","id":19,"method":"tools\/call","params":{"name":"x","arguments":{},"_meta":{"x":"` + strings.Repeat("a", maxBesideArguments) + `"}}}`, `{}"x"`},
	} {
		tests = append(tests, struct{ line, want string }{m.line, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32600,"message":"Invalid Request: %d bytes besides a tool call's name and arguments; a message may hold at most %d"}}`,
			16+i, len(m.line)-len(m.exempts), maxBesideArguments)})
	}
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	for _, tt := range tests {
		c.send(tt.line)
		if got := c.recvLine(); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.line, got, tt.want)
		}
	}
	// An answer whose error is null (as some libraries write one) is an
	// answer: not refused (the next line is the ping's).
	c.send(`{"jsonrpc":"2.0","id":11,"result":{},"error":null}`)
	c.send(`{"jsonrpc":"2.0","id":13,"result":null}`) // a null result is a result
	c.ping()
}

// hugeCall is a tools/call line of at least n bytes, with the id placed
// before or (as the TypeScript SDK writes it) after the params.
func hugeCall(n int, id string, idLast bool) string {
	pad := strings.Repeat("x", n)
	params := `{"name":"task_create","arguments":{"title":"` + pad + `","project":"p","labels":["a\"b",{"id":3}]}}`
	if idLast {
		return `{"method":"tools/call","params":` + params + `,"jsonrpc":"2.0","id":` + id + `}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
}

func TestHugeLineIsAnsweredAndSessionGoesOn(t *testing.T) {
	f := &fakeDo{}
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	c.initialize()
	for _, tt := range []struct {
		id     string
		idLast bool
	}{{"9001", false}, {`"abc"`, true}} {
		line := hugeCall(20<<20, tt.id, tt.idLast)
		sent := make(chan error, 1)
		go func() { _, err := io.WriteString(c.in, line+"\n"); sent <- err }()
		want := `{"jsonrpc":"2.0","id":` + tt.id + `,"error":{"code":-32600,"message":"Request too large: a message may be at most 4194304 bytes"}}`
		if got := c.recvLine(); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		c.ping()
	}
	if n := len(f.recorded()); n != 2 { // the two pings only
		t.Errorf("Do ran %d times, want 2", n)
	}
}

func TestMessageSizeLimitIsExact(t *testing.T) {
	const limit = 300
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{MaxMessageBytes: limit})
	c := startSession(t, s)
	c.initialize()
	call := func(n int) string { // a ping tools/call of exactly n bytes
		base := `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"server_ping","arguments":{}},"pad":""}`
		return strings.Replace(base, `"pad":""`, `"pad":"`+strings.Repeat("p", n-len(base))+`"`, 1)
	}
	c.send(call(limit))
	if got := c.recv(); got["id"] != float64(77) || got["result"] == nil {
		t.Errorf("a message of exactly the limit: %v", got)
	}
	c.send(call(limit + 1))
	if got := c.recvLine(); !strings.Contains(got, `"id":77,"error":{"code":-32600,"message":"Request too large`) {
		t.Errorf("a message one byte over the limit: %s", got)
	}
	c.send(call(limit) + "\r") // CRLF line ends count as line ends
	if got := c.recv(); got["result"] == nil {
		t.Errorf("CRLF: %v", got)
	}
}

func TestLastLineWithoutNewline(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	io.WriteString(c.in, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"server_ping"}}`)
	c.in.Close()
	if got := c.recv(); got["id"] != float64(5) || got["result"] == nil {
		t.Errorf("got %v", got)
	}
	if err := c.wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestEOFReturnsNil(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	c.ping()
	c.in.Close()
	if err := c.wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if _, err := c.out.ReadByte(); err != io.EOF {
		t.Errorf("output after the session: %v", err)
	}
}

func TestEOFWithoutAnyInput(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.in.Close()
	if err := c.wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// blockingDo is a Do that holds every call until released.
type blockingDo struct {
	entered chan string
	release chan struct{}
	ctxErr  chan error
}

func newBlockingDo() *blockingDo {
	return &blockingDo{entered: make(chan string, 16), release: make(chan struct{}), ctxErr: make(chan error, 16)}
}

func (b *blockingDo) do(ctx context.Context, call commands.Call) ([]byte, error) {
	b.entered <- call.Name
	<-b.release
	b.ctxErr <- ctx.Err()
	_, reply := call.Encode(map[string]any{"tool": call.Name}, call.Invalid)
	return reply, nil
}

func TestInFlightCallsAreAnsweredAfterEOF(t *testing.T) {
	b := newBlockingDo()
	s, _ := newTestServer(t, b.do, Options{})
	c := startSession(t, s)
	c.initialize()
	id1 := c.request("tools/call", map[string]any{"name": "server_ping"})
	if tool := <-b.entered; tool != "server_ping" {
		t.Fatalf("first call in Do: %s", tool)
	}
	// A second call is in flight too, then stdin ends.
	id2 := c.request("tools/call", map[string]any{"name": "task_get", "arguments": map[string]any{"task_id": "T-0001"}})
	c.in.Close()
	close(b.release)
	answered := map[float64]bool{}
	for range 2 {
		resp := c.recv()
		if resp["result"] == nil {
			t.Errorf("got %v, want a result", resp)
		}
		answered[resp["id"].(float64)] = true
	}
	if !answered[float64(id1)] || !answered[float64(id2)] {
		t.Errorf("answered %v, want calls %d and %d", answered, id1, id2)
	}
	if err := c.wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	for range 2 {
		if err := <-b.ctxErr; err != nil {
			t.Errorf("Do's context was cancelled: %v", err)
		}
	}
}

func TestDuplicateIDDoesNotWedgeToolCalls(t *testing.T) {
	b := newBlockingDo()
	s, _ := newTestServer(t, b.do, Options{})
	c := startSession(t, s)
	c.initialize()
	id := c.request("tools/call", map[string]any{"name": "server_ping"})
	<-b.entered
	// The same id while the call runs: the SDK drops such a request
	// unanswered, or serves it if the call has finished by the time it looks.
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	close(b.release)
	c.send(`{"jsonrpc":"2.0","id":999,"method":"tools/call","params":{"name":"server_ping"}}`)
	var sawCall, sawNext bool
	for !sawCall || !sawNext {
		resp := c.recv()
		if resp["id"] == float64(999) {
			if resp["result"] == nil {
				t.Errorf("the next tool call: %v", resp)
			}
			sawNext = true
			continue
		}
		if resp["id"] != float64(id) {
			t.Fatalf("unexpected %v", resp)
		}
		if res, _ := resp["result"].(map[string]any); res["content"] != nil {
			sawCall = true
		}
	}
	if !sawCall {
		t.Errorf("the original call was not answered")
	}
}

func TestPipelinedCallsRunConcurrently(t *testing.T) {
	// Every call waits until all n have arrived: this passes only if the
	// transport hands tool calls out without waiting for earlier replies.
	const n = 8
	var arrived sync.WaitGroup
	arrived.Add(n)
	f := &fakeDo{result: func(call commands.Call) (any, error) {
		arrived.Done()
		arrived.Wait()
		return nil, nil
	}}
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	c.initialize()
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"task_get","arguments":{"task_id":"T-%04d"}}}`+"\n", 100+i, i+1)
	}
	go io.WriteString(c.in, lines.String())
	seen := map[float64]bool{}
	for range n {
		seen[c.recv()["id"].(float64)] = true
	}
	if len(seen) != n {
		t.Errorf("got %d distinct replies, want %d", len(seen), n)
	}
}

func TestCancelDrainsInFlightCalls(t *testing.T) {
	b := newBlockingDo()
	s, _ := newTestServer(t, b.do, Options{})
	c := startSession(t, s)
	c.initialize()
	id := c.request("tools/call", map[string]any{"name": "task_create", "arguments": map[string]any{"title": "t", "project": "p"}})
	<-b.entered
	c.cancel() // SIGTERM
	close(b.release)
	resp := c.recv()
	if resp["id"] != float64(id) || resp["result"] == nil {
		t.Errorf("in-flight call not answered: %v", resp)
	}
	if err := c.wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if err := <-b.ctxErr; err != nil {
		t.Errorf("Do's context was cancelled: %v", err)
	}
}

func TestCancelWhenIdle(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	c.ping()
	c.cancel()
	if err := c.wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestWriteFailureEndsRun(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), inR, failingWriter{}) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`+"\n")
	err := <-done
	inW.Close()
	if err == nil || !strings.Contains(err.Error(), "stdout is gone") {
		t.Errorf("Run = %v, want the write error", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("stdout is gone") }

func TestConcurrentRepliesAreWholeLines(t *testing.T) {
	// Tool calls and tools/list run concurrently, so large replies of both
	// kinds are written concurrently.
	f := &fakeDo{result: func(call commands.Call) (any, error) {
		return map[string]any{"pad": strings.Repeat("s", 100<<10)}, nil
	}}
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	c.initialize()
	const n = 40
	go func() {
		for i := range n {
			if i%2 == 0 {
				c.request("tools/call", map[string]any{"name": "server_health"})
			} else {
				c.request("tools/list", map[string]any{})
			}
		}
	}()
	seen := map[float64]bool{}
	for range n {
		line := c.recvLine()
		var resp struct {
			ID     float64 `json:"id"`
			Result struct {
				StructuredContent json.RawMessage `json:"structuredContent"`
				Tools             []any           `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("a reply is not one JSON line: %v", err)
		}
		seen[resp.ID] = true
		// ids count on from initialize's 1: even ids are the tool calls.
		if int(resp.ID)%2 == 0 && !bytes.Contains(resp.Result.StructuredContent, []byte(strings.Repeat("s", 100<<10))) {
			t.Errorf("tool reply %v lost its payload", resp.ID)
		}
		if int(resp.ID)%2 == 1 && len(resp.Result.Tools) != len(contractTools) {
			t.Errorf("tools/list reply %v has %d tools", resp.ID, len(resp.Result.Tools))
		}
	}
	if len(seen) != n {
		t.Errorf("got %d distinct replies, want %d", len(seen), n)
	}
}

func TestIDScanner(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":12,"method":"x"}`, `12`},
		{`{"method":"x","params":{"id":1,"a":["id",{"id":2}]},"id":"q\"r"}`, `"q\"r"`},
		{`{"id" : -3.5e2 }`, `-3.5e2`},
		{`{"idx":1,"xid":2,"id":3}`, `3`},
		{`{"id":null}`, `null`},
		{`{"id":{"a":1}}`, ``},
		{`{"id":true}`, ``},
		{`{"method":"x"}`, ``},
		{`["id",1]`, ``},
		{`{"a":"\\","id":4}`, `4`},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 3, 1000} { // the scanner must not care how the line is cut
			var sc idScanner
			for i := 0; i < len(tt.in); i += chunk {
				sc.feed([]byte(tt.in[i:min(i+chunk, len(tt.in))]))
			}
			if got := string(sc.result()); got != tt.want {
				t.Errorf("scan(%s) in chunks of %d = %q, want %q", tt.in, chunk, got, tt.want)
			}
		}
	}
}

func TestReadLineKeepsBoundedMemory(t *testing.T) {
	// A 20 MiB line is scanned through, not kept.
	line := hugeCall(20<<20, "1", true) + "\n" + `{"next":1}` + "\n"
	r := bufio.NewReaderSize(strings.NewReader(line), 64<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l := readLine(r, 1<<20)
	runtime.ReadMemStats(&after)
	if !l.tooLong || l.data != nil || string(l.id) != "1" || l.err != nil {
		t.Fatalf("readLine = tooLong %v, %d bytes kept, id %s, err %v", l.tooLong, len(l.data), l.id, l.err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("reading a 20 MiB line allocated %d bytes; want it bounded by the 1 MiB limit, not the line", alloc)
	}
	if l := readLine(r, 1<<20); string(l.data) != `{"next":1}`+"\n" {
		t.Errorf("next line = %q", l.data)
	}
	if l := readLine(r, 1<<20); l.err != io.EOF || len(l.data) != 0 {
		t.Errorf("at the end: %q %v", l.data, l.err)
	}
}

func TestDeeplyNestedRequestIsAnsweredByID(t *testing.T) {
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	c.send(`{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"thought_record","arguments":{"metadata":` + deep + `}}}`)
	resp := c.recv()
	if resp["id"] != float64(77) {
		t.Fatalf("reply %v, want one for id 77", resp)
	}
	if e, _ := resp["error"].(map[string]any); e == nil || e["code"] != float64(-32600) {
		t.Errorf("reply %v, want -32600", resp)
	}
	c.ping() // the session goes on
}

func TestNestedDeeper(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`[[[1]]]`, false},
		{`[[[[1]]]]`, true},
		{`{"a":"[[[[[[["}`, false},
		{`{"a":"\"[[[[[["}`, false},
		{`{"a":{"b":{"c":{}}}}`, true},
	}
	for _, tt := range tests {
		if got := nestedDeeper([]byte(tt.in), 3); got != tt.want {
			t.Errorf("nestedDeeper(%s, 3) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

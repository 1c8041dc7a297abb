package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
)

// TestDirectCallsAgreeWithSDK: a session's transcript is the same bytes
// whether the connection answers the usual tool calls itself (direct.go)
// or leaves them to the SDK, and the connection takes exactly the usual
// ones (an initialized session, params of name and an arguments object).
func TestDirectCallsAgreeWithSDK(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`, // before initialize
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent <&>","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"a <b> & \u2028 é 😀","project":"p"}}}`,
		`{"jsonrpc":"2.0","id":"x-4","method":"tools/call","params":{"arguments":{"task_id":"T-0001"},"name":"task_get"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"server_ping"}}`,
		` { "jsonrpc" : "2.0" , "id" : 6 , "method" : "tools/call" , "params" : { "name" : "task_list" , "arguments" : { "project" : "p" } } } `,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"task_create","arguments":{"title":""}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"task_get","arguments":{"task_id":"T-0404"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"task_get","arguments":{"task_id":"T-0001"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"task_get","arguments":null}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"t\u0061sk_get","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1.0e1,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"server_ping","arguments":{},"name":"x"}}`,
	}
	transcript := func(fast bool) (string, int64) {
		useFastpath = fast
		defer func() { useFastpath = true }()
		f := &fakeDo{result: func(call commands.Call) (any, error) {
			if strings.Contains(string(call.Args), "T-0404") {
				return nil, &commands.NotFoundError{Kind: commands.ErrTaskNotFound, ID: "T-0404"}
			}
			if call.Name == "task_list" {
				return nil, errors.New("secret cause")
			}
			return map[string]any{"tool": call.Name, "args": string(call.Args), "text": "<a href='x'>&amp;</a>\u2028"}, nil
		}}
		s, _ := newTestServer(t, f.do, Options{})
		d := &direct{}
		c := startSessionWith(t, s, d)
		var out bytes.Buffer
		for _, l := range lines {
			c.send(l)
			if strings.Contains(l, `"id"`) {
				out.WriteString(c.recvLine() + "\n")
			}
		}
		return out.String(), d.served.Load()
	}
	sdkOut, viaSDK := transcript(false)
	fastOut, direct := transcript(true)
	if viaSDK != 0 {
		t.Errorf("with the fast path off, %d calls were answered directly", viaSDK)
	}
	if want := int64(8); direct != want { // ids 3 to 9 and 1.0e1
		t.Errorf("%d calls answered directly, want %d", direct, want)
	}
	if sdkOut != fastOut {
		t.Errorf("transcripts differ:\nSDK:\n%s\ndirect:\n%s", sdkOut, fastOut)
	}
}

// FuzzToolCallParams: params toolCallParams takes decode, with encoding/json,
// to the same name and arguments, and carry no other member.
func FuzzToolCallParams(f *testing.F) {
	for _, s := range []string{`{"name":"x","arguments":{"a":[1,"}"]}}`, `{ "arguments" : { } , "name" : "t" }`, `{"name":"x"}`,
		`{"name":"x","arguments":null}`, `{"name":"x","name":"y"}`, `{"name":"x","_meta":{}}`, `{"name":"\u0078"}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.TrimSpace(data)
		if !json.Valid(data) || len(data) == 0 || data[0] != '{' {
			return // params the fast path saw are a valid object
		}
		p, ok := toolCallParams(data)
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		var name string
		if err := json.Unmarshal(m["name"], &name); err != nil || name != p.Name {
			t.Fatalf("%s: name %q, encoding/json %q (%v)", data, p.Name, name, err)
		}
		if !bytes.Equal(m["arguments"], p.Arguments) || len(m) != 1+min(len(p.Arguments), 1) {
			t.Fatalf("%s: arguments %s, encoding/json %s (%d members)", data, p.Arguments, m["arguments"], len(m))
		}
	})
}

// FuzzResultLine: the line the connection writes of a reply is the SDK's
// encoding of toolResult(reply) framed as before (frameResult), byte for
// byte, and it refuses the replies MarshalJSON refuses.
func FuzzResultLine(f *testing.F) {
	for _, s := range []string{`{"ok":true,"data":{}}`, `{"ok":true,"data":{"t":"a <b> & \u2028 é 😀 \" \\ \/ \n"}}`,
		"{\"ok\":false,\"error\":{\"code\":\"ERR_X\",\"message\":\"\u2028\u2029<>&\\u0000\x7f\"}}", ` { "ok" : true , "data" : [ 1 , "a b" ] } `,
		"{\"ok\":true,\"data\":\"\xff\xfe\"}", `{"ok":true`, `null`, `"<"`, "{\"a\":\"\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, reply []byte) {
		want, err := toolResult(reply).MarshalJSON()
		got, ok := appendResultLine([]byte("kept"), json.RawMessage(`"x-1"`), reply)
		if ok != (err == nil) {
			t.Fatalf("appendResultLine ok %v, MarshalJSON error %v", ok, err)
		}
		if ok && !bytes.Equal(got, append([]byte("kept"), frameResult(json.RawMessage(`"x-1"`), want)...)) {
			t.Fatalf("reply %q:\n got %s\nwant %s", reply, got, frameResult(json.RawMessage(`"x-1"`), want))
		}
	})
}

// TestDirectWorkersKeptAndBounded: the calls the connection answers run on
// worker goroutines it keeps for the next calls (direct.work): a burst of
// concurrent calls is answered in full and leaves at most maxIdleWorkers
// behind; a call made while workers wait runs on one of them (no new
// goroutine); and every worker ends with the session.
func TestDirectWorkersKeptAndBounded(t *testing.T) {
	const burst = 3 * maxIdleWorkers
	entered := make(chan struct{}, burst)
	release := make(chan struct{})
	f := &fakeDo{result: func(call commands.Call) (any, error) {
		if strings.Contains(string(call.Args), "burst") {
			entered <- struct{}{}
			<-release
		}
		return map[string]any{"args": string(call.Args)}, nil
	}}
	s, _ := newTestServer(t, f.do, Options{})
	d := &direct{}
	c := startSessionWith(t, s, d)
	c.initialize()
	for i := range burst {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"burst %d","project":"p"}}}`, 100+i, i))
	}
	for i := range burst { // all of them running at once, each on its own worker
		select {
		case <-entered:
		case <-time.After(time.Minute):
			t.Fatalf("the calls are not all running at once: %d of %d (%s)", i, burst, c.recvLine())
		}
	}
	if n := d.live.Load(); n != burst {
		t.Fatalf("%d workers for %d calls in flight", n, burst)
	}
	close(release)
	seen := map[string]bool{}
	for range burst {
		line := c.recvLine()
		if !strings.Contains(line, `burst `) {
			t.Fatalf("unexpected reply %s", line)
		}
		seen[line] = true
	}
	if len(seen) != burst {
		t.Fatalf("%d distinct replies to %d calls", len(seen), burst)
	}
	// settled: every worker left is waiting for a call.
	settled := func(what string, ok func(live, waiting int32) bool) (int32, int32) {
		t.Helper()
		deadline := time.Now().Add(time.Minute) // a hang bound
		for {
			live, waiting := d.live.Load(), d.waiting.Load()
			if ok(live, waiting) {
				return live, waiting
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d workers, %d waiting", what, live, waiting)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// A worker past maxIdleWorkers counts itself waiting for an instant
	// before it leaves (work): live == waiting == 9 is not settled yet; more
	// than maxIdleWorkers kept for good never settles, and fails.
	live, _ := settled("after the burst", func(live, waiting int32) bool { return live == waiting && live <= maxIdleWorkers })
	if live < 1 || live > maxIdleWorkers {
		t.Fatalf("%d workers kept after the burst, want 1 to %d", live, maxIdleWorkers)
	}
	for i := range 5 {
		got := c.toolCall("task_create", fmt.Sprintf(`{"title":"again %d","project":"p"}`, i))
		if got == nil {
			t.Fatal("no reply")
		}
		settled("after a call", func(l, waiting int32) bool { return l == waiting })
		if n := d.live.Load(); n != live {
			t.Fatalf("call %d: %d workers, was %d: the call did not run on a waiting worker", i, n, live)
		}
	}
	c.in.Close()
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	settled("after the session", func(live, _ int32) bool { return live == 0 })
}

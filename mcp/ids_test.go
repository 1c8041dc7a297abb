package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/logbook-dev/logbook/commands"
)

// reply is one response line with its id as sent.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	line string
}

func (c *session) recvReply() reply {
	c.t.Helper()
	line := c.recvLine()
	var r reply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		c.t.Fatalf("not JSON: %q", line)
	}
	r.line = line
	return r
}

// collidingIDs are ids that a float64 (or a string/number confusion) would
// merge: each must get its own reply, under its own bytes.
var collidingIDs = []string{
	`1`, `1.0`, `1.5`, `"1"`, `"\u0031"`, `10`, `1e1`, `-0`, `0`,
	`9007199254740993`, `9007199254740992`, `123456789012345678901234567890`, `1e400`,
	`"a"`, `""`, `"` + strings.Repeat("z", maxIDBytes-2) + `"`,
}

// TestIDsKeptExactly pipelines tools/calls and pings under ids that collide
// as numbers: every request gets exactly one reply carrying its exact id,
// and every tools/call is handed to Do once.
func TestIDsKeptExactly(t *testing.T) {
	f := &fakeDo{}
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	c.initialize()
	before := len(f.recorded())
	var b strings.Builder
	for _, id := range collidingIDs {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`+"\n", id)
	}
	// The same ids again, as pings, sent after the calls are answered.
	c.send(strings.TrimSuffix(b.String(), "\n"))
	got := map[string]int{}
	for range collidingIDs {
		r := c.recvReply()
		if r.Result == nil || r.Result.IsError {
			t.Errorf("tools/call answered %s", r.line)
		}
		got[string(r.ID)]++
	}
	for _, id := range collidingIDs {
		if got[id] != 1 {
			t.Errorf("id %.40s: %d replies, want 1 (replies by id: %v)", id, got[id], keys(got))
		}
	}
	if n := len(f.recorded()) - before; n != len(collidingIDs) {
		t.Errorf("Do ran %d times for %d tools/calls", n, len(collidingIDs))
	}
	for _, id := range collidingIDs {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if r := c.recvReply(); string(r.ID) != id || r.Error != nil {
			t.Errorf("ping %.40s answered %.200s", id, r.line)
		}
	}
	// An unknown method is answered by the SDK, under the client's id.
	c.send(`{"jsonrpc":"2.0","id":2.5,"method":"no/such"}`)
	if r := c.recvReply(); string(r.ID) != `2.5` || r.Error == nil {
		t.Errorf("unknown method answered %s", r.line)
	}
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		if len(k) > 40 {
			k = k[:40] + "…"
		}
		out = append(out, k)
	}
	return out
}

// TestInvalidIDs: an id that is not a string or a number, a repeated id
// member, or an id over maxIDBytes is refused with -32600 (id null) and
// reaches no tool; so is an id null, which MCP forbids a request (before,
// stdio served it and echoed null, as no HTTP client could have it
// served).
func TestInvalidIDs(t *testing.T) {
	f := &fakeDo{}
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	c.initialize()
	before := len(f.recorded())
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"server_ping"}}`,
		`{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{"name":"server_ping"}}`,
		`{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"server_ping"}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"server_ping"}}`,
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("z", maxIDBytes) + `","method":"tools/call","params":{"name":"server_ping"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"server_ping"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id" : null ,"method":"no/such"}`,
	} {
		c.send(line)
		r := c.recvReply()
		want := badIDMessage
		if strings.Contains(line, "null") {
			want = nullIDMessage
		}
		if string(r.ID) != "null" || r.Error == nil || r.Error.Code != -32600 || r.Error.Message != want {
			t.Errorf("%.80s answered %.200s", line, r.line)
		}
	}
	if n := len(f.recorded()) - before; n != 0 {
		t.Errorf("Do ran %d times for refused requests", n)
	}
	c.ping()
}

// gate makes a fakeDo hold every server_health call until released.
type gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate(f *fakeDo) *gate {
	g := &gate{entered: make(chan struct{}, 16), release: make(chan struct{})}
	f.result = func(call commands.Call) (any, error) {
		if call.Name == "server_health" {
			g.entered <- struct{}{}
			<-g.release
		}
		return map[string]any{"tool": call.Name}, nil
	}
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// TestDuplicateInFlightID: a request reusing the id of one in flight gets
// an error under that id at once (not silence); once the first is answered
// the id is free again.
func TestDuplicateInFlightID(t *testing.T) {
	for _, id := range []string{`7`, `"x"`, `1.5`} {
		t.Run(id, func(t *testing.T) {
			f := &fakeDo{}
			g := newGate(f)
			s, _ := newTestServer(t, f.do, Options{})
			c := startSession(t, s)
			t.Cleanup(g.open)
			c.initialize()
			c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"server_health"}}`)
			<-g.entered
			for _, method := range []string{"ping", "tools/call"} {
				c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{"name":"server_ping"}}`)
				if r := c.recvReply(); string(r.ID) != id || r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "in flight") {
					t.Errorf("duplicate %s answered %s", method, r.line)
				}
			}
			g.open()
			if r := c.recvReply(); string(r.ID) != id || r.Result == nil {
				t.Errorf("the first call answered %s", r.line)
			}
			c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
			if r := c.recvReply(); string(r.ID) != id || r.Error != nil {
				t.Errorf("the id once free: %s", r.line)
			}
			if n := len(f.recorded()); n != 1 {
				t.Errorf("Do ran %d times, want 1 (the duplicates reach no tool)", n)
			}
		})
	}
}

// TestCancelledCallStillRunsAndAnswers: notifications/cancelled, sent with
// the call (before its handler can run) or while it runs, never yields an
// error reply of code 0: the call runs, is handed to Do, and is answered.
func TestCancelledCallStillRunsAndAnswers(t *testing.T) {
	f := &fakeDo{}
	g := newGate(f)
	s, _ := newTestServer(t, f.do, Options{})
	c := startSession(t, s)
	t.Cleanup(g.open)
	c.initialize()
	cancel := func(id string) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"x"}}`
	}
	// Before: the call and its cancellation in one write, many times over.
	for i := range 50 {
		id := fmt.Sprint(100 + i)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"server_ping"}}` + "\n" + cancel(id))
		if r := c.recvReply(); string(r.ID) != id || r.Result == nil || r.Error != nil {
			t.Fatalf("cancelled call %s answered %s", id, r.line)
		}
	}
	// While it runs.
	c.send(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"server_health"}}`)
	<-g.entered
	c.send(cancel(`"b"`))
	c.ping() // the cancellation was read, and answered nothing
	g.open()
	if r := c.recvReply(); string(r.ID) != `"b"` || r.Result == nil {
		t.Errorf("cancelled running call answered %s", r.line)
	}
	if n := len(f.recorded()); n != 52 { // with the ping
		t.Errorf("Do ran %d times, want 52", n)
	}
}

// TestHeldBytesBounded: requests are admitted only while the lines in
// flight fit maxHeldBytes, except that one is always admitted; an answer
// frees its bytes. (A stopped connection makes admit return instead of
// waiting: admitStopped proves it would have waited.)
func TestHeldBytesBounded(t *testing.T) {
	c := newConn(strings.NewReader(""), io.Discard, DefaultMaxMessageBytes, slog.New(slog.DiscardHandler))
	defer c.Close()
	const size = 3 << 20
	fit := maxHeldBytes / size
	for i := range fit {
		if got := c.admit(mustID(t, i), held{json.RawMessage(fmt.Sprint(i)), size}); got != admitted {
			t.Fatalf("request %d of %d bytes: admit = %d", i, size, got)
		}
	}
	c.stopReading()
	if got := c.admit(mustID(t, 99), held{json.RawMessage(`99`), size}); got != admitStopped {
		t.Fatalf("request over the budget: admit = %d, want it to wait", got)
	}
	for i := range fit {
		c.answered(mustID(t, i))
	}
	if got := c.admit(mustID(t, 100), held{json.RawMessage(`100`), 4 * maxHeldBytes}); got != admitted {
		t.Fatalf("one request over the budget alone: admit = %d, want admitted", got)
	}
}

func mustID(t *testing.T, n int) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// FuzzTopMember: topMember finds what encoding/json reads of an object's
// top level: how many keys decode to the name (escaped or not), and the
// first one's value, byte for byte.
func FuzzTopMember(f *testing.F) {
	for _, s := range []string{`{"id":1,"method":"x"}`, `{"\u0069d":"a","id":2}`, `{ "i\u0064" : [1,{"id":3}] , "x":{} }`,
		`{"method":"m","params":{"id":4}}`, `{}`, `{"\ud800":1,"id":null}`} {
		f.Add([]byte(s), "id")
		f.Add([]byte(s), "method")
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		data = bytes.TrimSpace(data)
		if !json.Valid(data) || len(data) == 0 || data[0] != '{' {
			t.Skip()
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.Token() // {
		var want int
		var first json.RawMessage
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			if tok.(string) == name {
				if want++; want == 1 {
					first = raw
				}
			}
		}
		start, end, n := topMember(data, name, false)
		if n != want {
			t.Fatalf("topMember(%s, %q) found %d, encoding/json %d", data, name, n, want)
		}
		if n > 0 && !bytes.Equal(data[start:end], first) {
			t.Fatalf("topMember(%s, %q) = %s, encoding/json %s", data, name, data[start:end], first)
		}
		if s, e, m := topMember(data, name, true); n > 0 && (s != start || e != end || m != 1) {
			t.Fatalf("with first: %d %d %d, want %d %d 1", s, e, m, start, end)
		}
	})
}

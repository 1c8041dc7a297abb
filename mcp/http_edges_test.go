package mcp

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPNoEventStream: GET /mcp (and any method but POST and DELETE)
// is answered 405 with Allow: POST, DELETE, in a session or not, as the
// transport lets a server that offers no event stream answer; the session
// still serves its calls. Before, the SDK opened a stream that never
// carried a message and held its connection, and one of the token's
// requests in flight, for as long as the client kept it.
func TestHTTPNoEventStream(t *testing.T) {
	srv, _ := httpFixture(t)
	sid := openSession(t, srv.URL, "full")
	for _, tc := range []struct{ method, sid string }{
		{http.MethodGet, sid}, {http.MethodGet, ""}, {http.MethodHead, sid}, {http.MethodOptions, ""}, {http.MethodPut, sid},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer full")
		if tc.sid != "" {
			req.Header.Set("Mcp-Session-Id", tc.sid)
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		}
		resp, err := testHTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST, DELETE" || resp.Header.Get("Content-Type") == "text/event-stream" {
			t.Errorf("%s (session %v): %d Allow %q %q %q; want 405, Allow: POST, DELETE", tc.method, tc.sid != "", resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), body)
		}
	}
	// Without a token, still 401 first.
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET without a token: %d, want 401", resp.StatusCode)
	}
	if code, _, body := statefulPost(t, srv.URL, "full", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Errorf("the session after: %d %.200s", code, body)
	}
}

// TestHTTPAnswersNoStore: every answer of the MCP endpoint, the SDK's
// included (a call's, initialize's, a batch's, its refusals), says
// Cache-Control: no-store, as every other answer of the server does.
// Before, the SDK's answers said no-cache, which lets a cache keep them.
func TestHTTPAnswersNoStore(t *testing.T) {
	srv, _ := httpFixture(t)
	check := func(what string, resp *http.Response) {
		t.Helper()
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
			t.Errorf("%s (%d): Cache-Control %q, want no-store", what, resp.StatusCode, got)
		}
	}
	send := func(method, token, sid, version, body string) *http.Response {
		t.Helper()
		return mcpRequest(t, method, srv.URL, token, sid, version, body)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	resp := send(http.MethodPost, "full", "", "", init)
	sid := resp.Header.Get("Mcp-Session-Id")
	check("initialize", resp)
	check("initialized", send(http.MethodPost, "full", sid, "2025-03-26", `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	check("a call", send(http.MethodPost, "full", sid, "2025-03-26", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`))
	check("a batch", send(http.MethodPost, "full", sid, "2025-03-26", `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`))
	check("a batch served one by one", send(http.MethodPost, "full", sid, "2025-03-26", `[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"tasks/steal"}]`))
	check("an unknown method", send(http.MethodPost, "full", sid, "2025-03-26", `{"jsonrpc":"2.0","id":7,"method":"tasks/steal"}`))
	check("a sessionless call", send(http.MethodPost, "full", "", sessionlessRevision, newRequest(8, "tools/call", `"name":"server_ping","arguments":{}`)))
	check("no token", send(http.MethodPost, "", "", "", init))
	check("GET", send(http.MethodGet, "full", sid, "2025-03-26", ""))
	check("a session unknown", send(http.MethodPost, "full", "nope", "2025-03-26", `{"jsonrpc":"2.0","id":9,"method":"ping"}`))
	check("DELETE", send(http.MethodDelete, "full", sid, "2025-03-26", ""))
}

// TestHTTPBatchDuplicateIDs: a batch (revision 2025-03-26) in which two
// requests share an id is answered 400 with JSON-RPC error -32600 (id
// null) naming the id, and none of it is served. Before, the SDK ran both
// and answered only the first: the second call was recorded and its
// answer dropped without a word.
func TestHTTPBatchDuplicateIDs(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSessionAs(t, srv.URL, "full", "2025-03-26")
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`
	}
	for _, tc := range []struct{ batch, id string }{
		{`[` + call("1") + `,` + call("1") + `]`, "1"},
		{`[{"jsonrpc":"2.0","id":"a","method":"ping"},` + call(`"a"`) + `]`, `"a"`},
		{`[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":7,"method":"tasks/steal"}]`, "7"},
	} {
		status, ctype, body := batchPost(t, srv.URL, sid, tc.batch)
		var r struct {
			ID    any `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || status != http.StatusBadRequest || ctype != "application/json" ||
			r.ID != nil || !strings.Contains(body, `"id":null`) || r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "id "+tc.id+" is used by more than one request") {
			t.Errorf("%s: %d %q %s; want 400, error -32600 naming id %s", tc.batch, status, ctype, body, tc.id)
		}
	}
	if calls := f.recorded(); len(calls) != 0 {
		t.Errorf("%d calls of refused batches ran", len(calls))
	}
	// The same id in two batches, or 1 and "1", is no duplicate.
	for _, batch := range []string{`[` + call("1") + `,` + call(`"1"`) + `]`, `[` + call("1") + `]`} {
		if status, _, body := batchPost(t, srv.URL, sid, batch); status != http.StatusOK || strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s", batch, status, body)
		}
	}
	if calls := f.recorded(); len(calls) != 3 {
		t.Errorf("%d calls ran, want 3", len(calls))
	}
}

// TestHTTPProtocolVersionHeaderIsTheSessions: a request in a session whose
// MCP-Protocol-Version header names another revision than the one the
// session negotiated is answered 400 with JSON-RPC error -32600 (by the
// request's id, or null), and nothing of it is served; the negotiated
// revision, or no header, is served. Before, the SDK served any revision
// it knows in any session.
func TestHTTPProtocolVersionHeaderIsTheSessions(t *testing.T) {
	srv, f := httpFixture(t)
	send := func(method, sid, version, body string) (int, string) {
		t.Helper()
		resp := mcpRequest(t, method, srv.URL, "full", sid, version, body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	open := func(asked string) string {
		t.Helper()
		resp := mcpRequest(t, http.MethodPost, srv.URL, "full", "", "",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+asked+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id")
	}
	call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"server_ping","arguments":{}}}`
	sid := open("2025-06-18")
	refused := func(what string, code int, body, id string) {
		t.Helper()
		if code != http.StatusBadRequest || !strings.Contains(body, `"id":`+id+`,"error":{"code":-32600`) || !strings.Contains(body, `negotiated \"2025-06-18\"`) {
			t.Errorf("%s: %d %s; want 400, error -32600 by id %s", what, code, body, id)
		}
	}
	code, body := send(http.MethodPost, sid, "2025-03-26", call)
	refused("a call saying 2025-03-26", code, body, `"c1"`)
	code, body = send(http.MethodPost, sid, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	refused("a notification saying 2025-11-25", code, body, "null")
	code, body = send(http.MethodPost, sid, "2025-03-26", `[`+call+`]`)
	refused("a batch saying 2025-03-26", code, body, "null")
	code, body = send(http.MethodPost, sid, "1999-01-01", call)
	refused("a call saying 1999-01-01", code, body, `"c1"`)
	code, body = send(http.MethodDelete, sid, "2024-11-05", "")
	refused("DELETE saying 2024-11-05", code, body, "null")
	if calls := f.recorded(); len(calls) != 0 {
		t.Errorf("%d refused calls ran", len(calls))
	}
	if code, body := send(http.MethodPost, sid, "2025-06-18", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Errorf("initialized saying the session's revision: %d %s", code, body)
	}
	for _, v := range []string{"2025-06-18", ""} {
		if code, body := send(http.MethodPost, sid, v, call); code != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Errorf("a call saying %q: %d %s", v, code, body)
		}
	}
	// A revision the server does not know, asked at initialize, is
	// answered with its latest: the session's is that one.
	sid = open("2099-01-01")
	if code, body := send(http.MethodPost, sid, "2025-11-25", call); code != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("the revision negotiated in place of one unknown: %d %s", code, body)
	}
	if code, body := send(http.MethodPost, sid, "2025-06-18", call); code != http.StatusBadRequest {
		t.Errorf("another revision in it: %d %s", code, body)
	}
	if code, _ := send(http.MethodDelete, sid, "2025-11-25", ""); code != http.StatusNoContent {
		t.Errorf("DELETE saying the session's revision: %d", code)
	}
}

// TestHTTPBodyNotOneJSONValue: a body that is not one JSON value — a
// message with bytes after it, two messages, a batch with bytes after it,
// not JSON at all — is answered 400 with JSON-RPC error -32700 (id null),
// as stdio answers a line that is not JSON, and nothing of it runs. Before,
// the SDK served the first message of such a body and ignored the rest
// (200), and refused one not JSON in plain text.
func TestHTTPBodyNotOneJSONValue(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSessionAs(t, srv.URL, "full", "2025-03-26")
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`
	for _, body := range []string{call + "garbage", call + " " + call, "[" + call + "]x", "{garbage", call + "\x00"} {
		status, ctype, answer := batchPost(t, srv.URL, sid, body)
		if status != http.StatusBadRequest || ctype != "application/json" ||
			answer != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` {
			t.Errorf("%q: %d %q %s; want 400, error -32700 with id null", body, status, ctype, answer)
		}
	}
	if calls := f.recorded(); len(calls) != 0 {
		t.Errorf("%d calls of refused bodies ran", len(calls))
	}
	// Whitespace around one value is one value.
	if status, _, answer := batchPost(t, srv.URL, sid, " \n"+call+"\r\n "); status != http.StatusOK || strings.Contains(answer, `"error"`) {
		t.Errorf("one message with whitespace around it: %d %s", status, answer)
	}
}

// TestHTTPRequestIDRefusedAsOnStdio: a request whose id no request may
// carry — null (MCP forbids it), not a string or a number, over 1,024
// bytes, given twice — is answered over HTTP exactly as over stdio: JSON-RPC
// error -32600 with id null (400), in a session, sessionless and before
// initialize, and nothing of it runs; in a batch (revision 2025-03-26) it
// gets that error as its entry and the batch's other messages are served. Before, HTTP answered an
// id null in plain text (400), served a notification sent with one (202)
// and dropped a request with one from a batch without an answer, refused an
// id of another type in plain text and served the last of two ids, while
// stdio served an id null and echoed it.
func TestHTTPRequestIDRefusedAsOnStdio(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSessionAs(t, srv.URL, "full", "2025-03-26")
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	lines := []string{
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
		`{"jsonrpc":"2.0","id" : null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null,"method":"no/such"}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":null,"id":3,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("z", maxIDBytes) + `","method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
	}
	for _, line := range lines {
		c.send(line)
		want := c.recvLine()
		if !strings.Contains(want, `"id":null,"error":{"code":-32600`) {
			t.Errorf("stdio: %.80s answered %s", line, want)
		}
		status, ctype, got := batchPost(t, srv.URL, sid, line)
		if status != http.StatusBadRequest || ctype != "application/json" || got != want {
			t.Errorf("in a session: %.80s: %d %q %s; want 400 %s", line, status, ctype, got, want)
		}
		resp := mcpRequest(t, http.MethodPost, srv.URL, "full", "", "", line)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || string(b) != want {
			t.Errorf("before initialize: %.80s: %d %s; want 400 %s", line, resp.StatusCode, b, want)
		}
	}
	for _, id := range []string{"null", "true"} {
		resp := mcpRequest(t, http.MethodPost, srv.URL, "full", "", sessionlessRevision,
			strings.Replace(newRequest(1, "tools/call", `"name":"server_ping","arguments":{}`), `"id":1`, `"id":`+id, 1))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"id":null,"error":{"code":-32600`) {
			t.Errorf("sessionless, id %s: %d %s; want 400, -32600 by id null", id, resp.StatusCode, b)
		}
	}
	if calls := f.recorded(); len(calls) != 0 {
		t.Errorf("%d calls of refused requests ran", len(calls))
	}
	// In a batch: an entry, in its place; the rest served.
	status, _, body := batchPost(t, srv.URL, sid, `[{"jsonrpc":"2.0","id":7,"method":"ping"},`+lines[0]+`,`+lines[6]+`,{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}]`)
	var answers []struct {
		ID    any `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &answers); err != nil || status != http.StatusOK || len(answers) != 4 ||
		answers[0].ID != float64(7) || answers[0].Result == nil ||
		answers[1].ID != nil || answers[1].Error == nil || answers[1].Error.Message != nullIDMessage ||
		answers[2].ID != nil || answers[2].Error == nil || answers[2].Error.Message != badIDMessage ||
		answers[3].ID != float64(8) || answers[3].Result == nil {
		t.Errorf("a batch with refused ids: %d %s", status, body)
	}
	if calls := f.recorded(); len(calls) != 1 {
		t.Errorf("%d calls ran, want 1 (the batch's valid one)", len(calls))
	}
	// A revision without batches refuses such a batch whole, as any other.
	sid = openSessionAs(t, srv.URL, "full", "2025-06-18")
	if status, _, body := statefulPost(t, srv.URL, "full", sid, `[`+lines[0]+`,{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}]`); status != http.StatusBadRequest || !strings.Contains(body, "batching is not supported") {
		t.Errorf("a batch at 2025-06-18: %d %s", status, body)
	}
	if calls := f.recorded(); len(calls) != 1 {
		t.Errorf("%d calls ran, want 1", len(calls))
	}
}

// TestHTTPSubscriptionsListenEndsAtOnce: subscriptions/listen — the one
// request the SDK answers with an event stream that could stay open, until
// the client cancels it, holding a connection, one of the token's requests
// in flight and a server's drain — is answered and its stream ended at
// once, whatever notifications it asks for, sessionless or in a session:
// the server offers none (no listChanged, no resources), so none is agreed
// and the SDK has nothing to wait for. The token's one request in flight
// is free again for the next. This guards that: a capability offered one
// day would hold such a stream open, and `logbook server` would then have
// to track it for shutdown, as it does the console's verification stream.
func TestHTTPSubscriptionsListenEndsAtOnce(t *testing.T) {
	srv, _ := oneAgentServer(t, HTTPOptions{MaxRequestsPerToken: 1})
	sid := openSession(t, srv.URL, "a")
	every := `"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["file:///x","logbook://tasks"]}`
	for _, tc := range []struct{ sid, version, body string }{
		{"", sessionlessRevision, newRequest(5, "subscriptions/listen", every)},
		{sid, "2025-06-18", `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{` + every + `}}`},
	} {
		resp := mcpRequest(t, http.MethodPost, srv.URL, "a", tc.sid, tc.version, tc.body)
		b, err := io.ReadAll(resp.Body) // to its end: the stream ended
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"id":5,"result"`) ||
			strings.Contains(string(b), `"toolsListChanged":true`) || strings.Contains(string(b), "resourceSubscriptions") {
			t.Errorf("subscriptions/listen (session %v): %d %v %s; want its answer at once, nothing agreed", tc.sid != "", resp.StatusCode, err, b)
		}
		if code, _ := post(t, srv.URL, "a", newRequest(6, "tools/call", `"name":"server_ping","arguments":{}`)); code != http.StatusOK {
			t.Errorf("the next request of the token: %d, want 200 (its one slot free)", code)
		}
	}
}

// TestHTTPIDsKeptExactly: over HTTP, as over stdio (TestIDsKeptExactly),
// every request is answered under its id exactly as written — a call, a
// ping, an unknown method, a refused revision, initialize, the stream of
// subscriptions/listen, in a session, sessionless, and in a batch (2025-03-26) of ids that collide as numbers, each call run
// once. Before, the SDK wrote an id back from its float64: 1.5 was
// answered as 1, 9007199254740993 as 9007199254740992, a 30-digit id as
// -9223372036854775808, 1e400 refused in plain text, "\u0031" as "1"; a
// batch holding 1 and 1.5 was refused as sharing an id.
func TestHTTPIDsKeptExactly(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSessionAs(t, srv.URL, "full", "2025-03-26")
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`
	}
	answerID := func(body string) string {
		var r struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal([]byte(body), &r) != nil {
			return "(not JSON)"
		}
		return string(r.ID)
	}
	for _, id := range collidingIDs {
		for _, tc := range []struct{ what, body string }{
			{"a call", call(id)},
			{"a ping", `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`},
			{"an unknown method", `{"jsonrpc":"2.0","id":` + id + `,"method":"no/such"}`},
		} {
			status, _, body := batchPost(t, srv.URL, sid, tc.body)
			if got := answerID(body); status != http.StatusOK || got != id {
				t.Errorf("%s, id %.40s: %d, answered under %.40s: %.200s", tc.what, id, status, got, body)
			}
		}
		status, _, body := statefulPostAs(t, srv.URL, "full", sid, "2025-06-18", call(id))
		if got := answerID(body); status != http.StatusBadRequest || got != id {
			t.Errorf("another revision, id %.40s: %d, answered under %.40s", id, status, got)
		}
		resp := mcpRequest(t, http.MethodPost, srv.URL, "full", "", sessionlessRevision,
			strings.Replace(newRequest(1, "tools/call", `"name":"server_ping","arguments":{}`), `"id":1`, `"id":`+id, 1))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := answerID(string(b)); resp.StatusCode != http.StatusOK || got != id {
			t.Errorf("sessionless, id %.40s: %d, answered under %.40s: %.200s", id, resp.StatusCode, got, b)
		}
	}
	// initialize, and subscriptions/listen, whose stream names the request's
	// id as its subscription's.
	code, opened, body := statefulPostAs(t, srv.URL, "full", "", "",
		`{"jsonrpc":"2.0","id":1.5,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if got := answerID(body); code != http.StatusOK || opened == "" || got != "1.5" {
		t.Errorf("initialize, id 1.5: %d %q, answered under %s", code, opened, got)
	}
	if code, _, body := statefulPost(t, srv.URL, "full", opened, call("1.5")); code != http.StatusOK || answerID(body) != "1.5" {
		t.Errorf("a call in the session it opened: %d %.200s", code, body)
	}
	resp := mcpRequest(t, http.MethodPost, srv.URL, "full", "", sessionlessRevision,
		strings.Replace(newRequest(1, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`), `"id":1`, `"id":-0`, 1))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":-0,"result"`) || !strings.Contains(string(b), `"io.modelcontextprotocol/subscriptionId":-0`) || strings.Contains(string(b), "logbook-") {
		t.Errorf("subscriptions/listen, id -0: %d %s", resp.StatusCode, b)
	}
	before := len(f.recorded())
	var batch []string
	for _, id := range collidingIDs {
		batch = append(batch, call(id))
	}
	status, _, body := batchPost(t, srv.URL, sid, "["+strings.Join(batch, ",")+"]")
	var answers []json.RawMessage
	if err := json.Unmarshal([]byte(body), &answers); err != nil || status != http.StatusOK {
		t.Fatalf("the batch: %d %.300s", status, body)
	}
	got := map[string]int{}
	for _, a := range answers {
		if strings.Contains(string(a), `"error"`) {
			t.Errorf("in the batch: %.200s", a)
		}
		got[answerID(string(a))]++
	}
	for _, id := range collidingIDs {
		if got[id] != 1 {
			t.Errorf("the batch, id %.40s: %d answers, want 1", id, got[id])
		}
	}
	if n := len(f.recorded()) - before; n != len(collidingIDs) {
		t.Errorf("the batch ran %d calls, want %d", n, len(collidingIDs))
	}
}

// TestHTTPNotAMessageAsOnStdio: a body that is JSON but no JSON-RPC
// message — not an object, no or another jsonrpc version, a method not a
// string, nested deeper than 1,000 levels — is answered over HTTP exactly
// as stdio answers the line: JSON-RPC error -32600 by its id where one can
// be read, else null (400); in a batch (2025-03-26) each such message gets
// that error as its entry and the others are served; an empty batch is
// -32600 with id null, as JSON-RPC 2.0 answers it. Nothing of it runs.
// Before, the SDK refused each in plain text ("malformed payload: ..."),
// a batch whole for one such message.
func TestHTTPNotAMessageAsOnStdio(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSessionAs(t, srv.URL, "full", "2025-03-26")
	s, _ := newTestServer(t, (&fakeDo{}).do, Options{})
	c := startSession(t, s)
	c.initialize()
	deep := strings.Repeat(`{"a":`, 1100) + "1" + strings.Repeat("}", 1100)
	for _, line := range []string{
		`42`, `"ping"`, `null`, `{}`, `{"foo":1}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"id":"x","method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":5}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"server_ping","arguments":` + deep + `}}`,
		// The SDK read the last of two members, answered a method null
		// -32601, and took an id without a method for an answer (202).
		`{"jsonrpc":"2.0","id":3,"method":null}`,
		`{"jsonrpc":"2.0","id":4}`,
		`{"jsonrpc":"2.0","id":5,"params":{}}`,
		`{"jsonrpc":"2.0","id":6,"result":1,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"b":1,"a":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping","method":"tools/call","params":{"name":"server_ping","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"server_ping","name":"task_create","arguments":{}}}`,
	} {
		c.send(line)
		want := c.recvLine()
		if !strings.Contains(want, `"error":{"code":-3260`) {
			t.Errorf("stdio: %.60s answered %s", line, want)
		}
		status, ctype, got := batchPost(t, srv.URL, sid, line)
		if status != http.StatusBadRequest || ctype != "application/json" || got != want {
			t.Errorf("%.60s: %d %q %.200s; want 400 %s", line, status, ctype, got, want)
		}
	}
	status, _, body := batchPost(t, srv.URL, sid, `[42,{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"server_ping","arguments":{}}},{"jsonrpc":"1.0","id":"b","method":"ping"},{"jsonrpc":"2.0","id":"c","method":"ping","method":"tools/call"}]`)
	if status != http.StatusOK || !strings.HasPrefix(body, `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}},{"jsonrpc":"2.0","id":1,"result":`) ||
		!strings.HasSuffix(body, `,{"jsonrpc":"2.0","id":"b","error":{"code":-32600,"message":"Invalid Request"}},{"jsonrpc":"2.0","id":"c","error":{"code":-32600,"message":"Invalid Request: member \"method\" given more than once"}}]`) {
		t.Errorf("a batch with messages that are none: %d %.400s", status, body)
	}
	// A refused message's id is an answer's too: another request of the
	// batch under it is two answers under one id (one of which ran).
	for _, bad := range []string{`{"jsonrpc":"2.0","id":1,"method":null}`, `{"jsonrpc":"2.0","id":1,"method":"ping","method":"ping"}`} {
		if status, _, body := batchPost(t, srv.URL, sid, `[`+bad+`,{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}]`); status != http.StatusBadRequest ||
			!strings.Contains(body, "id 1 is used by more than one request") {
			t.Errorf("a batch whose refused message shares an id with a call: %d %.300s", status, body)
		}
	}
	if status, _, body := batchPost(t, srv.URL, sid, `[]`); status != http.StatusBadRequest ||
		body != `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the batch is empty"}}` {
		t.Errorf("an empty batch: %d %s", status, body)
	}
	if n := len(f.recorded()); n != 1 {
		t.Errorf("%d calls ran, want 1 (the batch's)", n)
	}
}

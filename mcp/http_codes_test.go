package mcp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/commands"
)

// TestHTTPSDKRefusalsCarryACode: over HTTP too, what the SDK refuses
// itself is answered with a JSON-RPC code, as on stdio
// (TestSDKRefusalsCarryACode): -32600 for the request, -32602 for its
// params. Before, a second initialize, initialize's params unreadable or
// missing, and a call before initialize were answered code 0, which
// JSON-RPC does not define.
func TestHTTPSDKRefusalsCarryACode(t *testing.T) {
	srv, f := httpFixture(t)
	// A result that looks like an uncoded error must pass unchanged.
	f.result = func(commands.Call) (any, error) {
		return map[string]any{"error": map[string]any{"code": 0, "message": "not an error"}, "text": `"code":0,`}, nil
	}
	sid := openSession(t, srv.URL, "full")
	for _, tc := range []struct {
		sid, line string
		code      float64
		says      string
	}{
		{sid, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`, -32600, "duplicate"},
		{"", `{"jsonrpc":"2.0","id":21,"method":"initialize","params":"x"}`, -32602, "unmarshaling"},
		{"", `{"jsonrpc":"2.0","id":22,"method":"initialize","params":null}`, -32600, "missing required"},
		{"", `{"jsonrpc":"2.0","id":"s","method":"tools/list"}`, -32600, "invalid during session initialization"},
		{sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"}`, -32602, "unmarshaling"},
	} {
		_, _, body := statefulPost(t, srv.URL, "full", tc.sid, tc.line)
		var r struct {
			ID    any            `json:"id"`
			Error map[string]any `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Errorf("%s: %v: %s", tc.line, err, body)
			continue
		}
		var sent struct{ ID any }
		json.Unmarshal([]byte(tc.line), &sent)
		if r.Error == nil || r.Error["code"] != tc.code || !strings.Contains(r.Error["message"].(string), tc.says) || r.ID != sent.ID {
			t.Errorf("%s: got %s, want error code %v saying %q", tc.line, body, tc.code, tc.says)
		}
	}
	code, _, body := statefulPost(t, srv.URL, "full", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`)
	if code != http.StatusOK || !strings.Contains(body, `\"code\":0`) || strings.Contains(body, `"error":{"code":-`) {
		t.Errorf("a result holding code 0 was changed: %s", body)
	}
}

// TestHTTPUnknownMethodIsJSONRPC: over HTTP, as on stdio, a request of a
// method the server does not have is answered JSON-RPC error -32601 by its
// id, and one not valid for its method -32600 (200, application/json); a
// notification of an unknown method is accepted, 202 with no body. Before,
// all of them got the SDK's plain-text 400 (revisions before 2026-07-28,
// with or without a session; a notification on 2026-07-28 too), which a
// client reads as the transport failing rather than as the server's answer.
// A request without the id its method needs is a notification, taken (202)
// and not served, as stdio ignores it (it was a plain-text 400); the
// sessionless revision keeps the SDK's 404 with -32601 for an unknown call.
func TestHTTPUnknownMethodIsJSONRPC(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSession(t, srv.URL, "full")
	send := func(sid, version, body string) (int, string, string) {
		t.Helper()
		resp := mcpRequest(t, http.MethodPost, srv.URL, "full", sid, version, body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	for _, tc := range []struct {
		sid, version, line string
		status             int
		code               float64 // 0: no JSON-RPC error expected
		says               string
	}{
		{sid, "2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"tasks/steal","params":{}}`, 200, -32601, `method not found: \"tasks/steal\"`},
		{sid, "2025-06-18", `{"jsonrpc":"2.0","id":"s","method":"tasks/steal"}`, 200, -32601, `method not found: \"tasks/steal\"`},
		{"", "", `{"jsonrpc":"2.0","id":8,"method":"tasks/steal","params":{}}`, 200, -32601, `method not found: \"tasks/steal\"`},
		{sid, "2025-06-18", `{"jsonrpc":"2.0","id":9,"method":"notifications/initialized"}`, 200, -32600, `unexpected id`},
		{sid, "2025-06-18", `{"jsonrpc":"2.0","id":10,"method":"tools/call"}`, 200, -32600, `missing required \"params\"`},
		{sid, "2025-06-18", `{"jsonrpc":"2.0","method":"notifications/steal"}`, 202, 0, ""},
		{"", "", `{"jsonrpc":"2.0","method":"notifications/steal","params":{}}`, 202, 0, ""},
		{"", sessionlessRevision, `{"jsonrpc":"2.0","method":"notifications/steal"}`, 202, 0, ""},
		// A method that wants an id, sent without one, is a notification
		// to JSON-RPC: taken unserved, as stdio ignores it (was a
		// plain-text 400 "missing id").
		{sid, "2025-06-18", `{"jsonrpc":"2.0","method":"tools/list"}`, 202, 0, ""},
		{sid, "2025-06-18", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"task_create","arguments":{"title":"t","project":"p"}}}`, 202, 0, ""},
		{sid, "2025-06-18", `{"jsonrpc":"2.0","method":"initialize","params":{}}`, 202, 0, ""},
		{"", "", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"task_create","arguments":{}}}`, 202, 0, ""},
		{"", sessionlessRevision, strings.Replace(newRequest(13, "tools/call", `"name":"task_create","arguments":{"title":"t","project":"p"}`), `"id":13,`, "", 1), 202, 0, ""},
		// Unchanged: the sessionless revision's 404.
		{"", sessionlessRevision, newRequest(11, "tasks/steal", ""), 404, -32601, "tasks/steal"},
	} {
		status, ctype, body := send(tc.sid, tc.version, tc.line)
		if status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %q %s; want %d saying %q", tc.line, status, ctype, body, tc.status, tc.says)
			continue
		}
		switch {
		case tc.code != 0:
			var r struct {
				ID    any            `json:"id"`
				Error map[string]any `json:"error"`
			}
			var sent struct{ ID any }
			json.Unmarshal([]byte(tc.line), &sent)
			if err := json.Unmarshal([]byte(body), &r); err != nil || ctype != "application/json" || r.Error == nil || r.Error["code"] != tc.code || r.ID != sent.ID {
				t.Errorf("%s: %q %s; want JSON-RPC error %v by its id", tc.line, ctype, body, tc.code)
			}
		case status == http.StatusAccepted && body != "":
			t.Errorf("%s: 202 with a body %q", tc.line, body)
		}
	}
	// The session still serves, and no notification-shaped call ran.
	if status, _, body := send(sid, "2025-06-18", `{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{}}`); status != 200 || !strings.Contains(body, `"tools"`) {
		t.Errorf("tools/list after: %d %.200s", status, body)
	}
	if calls := len(f.recorded()); calls != 0 {
		t.Errorf("%d tool calls ran; want none", calls)
	}
}

// TestForeignHost: on a loopback address, only Host names certainly
// loopback are taken — localhost in any case and fully qualified, the
// loopback addresses, with a port or not — and a request without a Host
// (HTTP/1.0; no browser sends one); beyond loopback, any Host. Before, the
// SDK's check on /mcp refused "localhost." and a request without Host.
func TestForeignHost(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7460}
	beyond := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 7460}
	for _, c := range []struct {
		local   net.Addr
		host    string
		foreign bool
	}{
		{loopback, "localhost:7460", false},
		{loopback, "localhost.:7460", false},
		{loopback, "LocalHost.", false},
		{loopback, "127.0.0.1:7460", false},
		{loopback, "127.9.9.9", false},
		{loopback, "[::1]:7460", false},
		{loopback, "[::1]", false},
		{loopback, "", false},
		{loopback, "evil.example:7460", true},
		{loopback, "localhost..", true},
		{loopback, "localhost.evil.example.", true},
		{loopback, "a.localhost", true},
		{loopback, "127.0.0.1.", true},
		{loopback, "127.0.0.1.nip.io", true},
		{loopback, "192.0.2.1", true},
		{beyond, "evil.example", false},
	} {
		r := httptest.NewRequest("GET", "/mcp", nil)
		r.Host = c.host
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, c.local))
		if got := ForeignHost(r); got != c.foreign {
			t.Errorf("Host %q on %s: foreign %v, want %v", c.host, c.local, got, c.foreign)
		}
	}
}

// TestHTTPSDKErrorsAreBounded: over HTTP as on stdio, what the SDK's
// errors quote of a request is cut (an unknown prompt's name after 128
// characters of the message, then "…"; an unknown method's, answered
// -32601 in place of the SDK's plain-text refusal), and data larger than
// that (a resource's URI) is dropped. Each was echoed whole.
func TestHTTPSDKErrorsAreBounded(t *testing.T) {
	srv, _ := httpFixture(t)
	sid := openSession(t, srv.URL, "full")
	long := strings.Repeat("k", 100000)
	for _, tc := range []struct{ line, says string }{
		{`{"jsonrpc":"2.0","id":3,"method":"` + long + `"}`, `method not found: "kkk`},
		{`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"` + long + `"}}`, `unknown prompt "kkk`},
		{`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"` + long + `"}}`, `Resource not found`},
	} {
		_, _, body := statefulPost(t, srv.URL, "full", sid, tc.line)
		var r struct {
			Error struct {
				Code    int
				Message string
			}
		}
		if json.Unmarshal([]byte(body), &r) != nil {
			r.Error.Code, r.Error.Message = -1, body // plain text
		}
		if r.Error.Code == 0 || !strings.HasPrefix(r.Error.Message, tc.says) || (strings.Contains(body, "kkk") && !strings.Contains(body, "k…")) || len(body) > 512 {
			t.Errorf("%.60s: %d bytes: %.300s", tc.line, len(body), body)
		}
	}
}

// TestHTTPForeignHostIsBounded: the MCP handler's refusal of a foreign
// Host quotes at most domain.MaxQuoted characters of it, as every error
// quotes what a client sent; it echoed the Host whole (a Host of 100,000
// characters: an answer of 100 KB). (The server's edge refuses such a
// Host before, in words of its own; the handler applies the rule alone.)
func TestHTTPForeignHostIsBounded(t *testing.T) {
	srv, _ := httpFixture(t)
	req, err := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil" + strings.Repeat("k", 100000) + ".example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"evilkkk`) || !strings.Contains(string(body), "k…") || len(body) > 256 {
		t.Errorf("%d, %d bytes: %.200s", resp.StatusCode, len(body), body)
	}
}

// batchPost sends body in session sid (token "full", opened with
// openSessionAs of 2025-03-26) as revision 2025-03-26, the one that has
// batches, and returns the status, the
// Content-Type and the body of the answer.
func batchPost(tb testing.TB, url, sid, body string) (int, string, string) {
	tb.Helper()
	resp := mcpRequest(tb, http.MethodPost, url, "full", sid, "2025-03-26", body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestHTTPBatchWithUnknownMethod: a batch (revision 2025-03-26) holding a
// request of a method the server does not have, or one not valid for its
// method, is answered as JSON-RPC answers a batch: one array of the
// answers to its requests, that one -32601 (-32600) by its id and the
// others run and answered; an invalid notification gets no answer, and a
// batch of notifications only 202 without a body. Before, the SDK refused
// the whole batch with a plain-text 400 (ran nothing), which a client
// reads as the transport failing.
func TestHTTPBatchWithUnknownMethod(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSessionAs(t, srv.URL, "full", "2025-03-26")
	send := func(body string) (int, string, string) { return batchPost(t, srv.URL, sid, body) }
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`
	status, ctype, body := send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tasks/steal","params":{}},` +
		call + `,{"jsonrpc":"2.0","method":"tools/list"},{"jsonrpc":"2.0","id":"x","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/steal"}]`)
	var answers []struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &answers); err != nil || status != http.StatusOK || ctype != "application/json" {
		t.Fatalf("%d %q %s: %v; want 200, a JSON array", status, ctype, body, err)
	}
	byID := map[any]int{}
	for i, a := range answers {
		byID[a.ID] = i
	}
	if len(answers) != 4 || len(byID) != 4 {
		t.Fatalf("%d answers (%s); want 4, one per request", len(answers), body)
	}
	for id, want := range map[any]int{1.0: 0, 2.0: -32601, 3.0: 0, "x": -32600} {
		a := answers[byID[id]]
		switch {
		case want == 0 && (a.Error != nil || a.Result == nil):
			t.Errorf("id %v: %s; want a result", id, body)
		case want != 0 && (a.Error == nil || a.Error.Code != want):
			t.Errorf("id %v: %s; want error %d", id, body, want)
		}
	}
	if a := answers[byID[3.0]]; !strings.Contains(string(a.Result), `server_ping`) {
		t.Errorf("the call's answer: %s", a.Result)
	}
	f.mu.Lock()
	n := len(f.calls)
	f.mu.Unlock()
	if n != 1 {
		t.Errorf("Do got %d calls, want 1", n)
	}
	status, ctype, body = send(`[{"jsonrpc":"2.0","method":"notifications/steal"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`)
	if status != http.StatusAccepted || body != "" || ctype != "" {
		t.Errorf("notifications only: %d %q %q; want 202 without a body", status, ctype, body)
	}
	// An invalid notification (a method that wants an id, sent without
	// one) gets no answer in a batch, whatever the batch's other messages:
	// notifications only are 202, as with a valid one beside it.
	for _, batch := range []string{`[{"jsonrpc":"2.0","method":"tools/list"}]`,
		`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"tools/call"}]`,
		`[{"jsonrpc":"2.0","method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/steal"}]`} {
		if status, ctype, body := send(batch); status != http.StatusAccepted || body != "" || ctype != "" {
			t.Errorf("%s: %d %q %q; want 202 without a body", batch, status, ctype, body)
		}
	}
	// A batch opening a session: the messages after its initialize are
	// served in that session, which the answer names.
	status, opened, body := statefulPost(t, srv.URL, "full", "", `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}},`+
		`{"jsonrpc":"2.0","id":2,"method":"tasks/steal"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`)
	if status != http.StatusOK || opened == "" || !strings.Contains(body, `"id":2,"error":{"code":-32601`) || !strings.Contains(body, `"id":3,"result":{`) || !strings.Contains(body, `"tools":[`) {
		t.Fatalf("a batch opening a session: %d, session %q: %.300s", status, opened, body)
	}
	if status, _, body := statefulPostAs(t, srv.URL, "full", opened, "2025-03-26", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`); status != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Errorf("the session the batch opened: %d %.200s", status, body)
	}
}

// TestHTTPBatchBounded: a batch of more than MaxBatch messages is answered
// 400 with JSON-RPC error -32600 (id null) and none of it is served; one of
// MaxBatch is served whole. Before, any size was served: the SDK holds
// kilobytes per message, so a body of 4 MiB (90,000 pings) took the
// server from 47 MB to 410 MB resident, and 16 of them at once (the
// bodies' bound) several gigabytes.
func TestHTTPBatchBounded(t *testing.T) {
	srv, f := httpFixture(t)
	sid := openSessionAs(t, srv.URL, "full", "2025-03-26")
	batch := func(n int) string {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = `{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":"tools/call","params":{"name":"server_ping","arguments":{}}}`
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	status, _, body := batchPost(t, srv.URL, sid, batch(MaxBatch+1))
	var r struct {
		ID    any            `json:"id"`
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || status != http.StatusBadRequest || r.Error == nil || r.Error["code"] != -32600.0 || r.ID != nil ||
		!strings.Contains(r.Error["message"].(string), "at most 128 messages; this one holds 129") || !strings.Contains(body, `"id":null`) {
		t.Errorf("a batch of %d: %d %.300s; want 400 with error -32600", MaxBatch+1, status, body)
	}
	f.mu.Lock()
	n := len(f.calls)
	f.mu.Unlock()
	if n != 0 {
		t.Errorf("%d calls of a batch refused", n)
	}
	status, _, body = batchPost(t, srv.URL, sid, batch(MaxBatch))
	var answers []json.RawMessage
	if err := json.Unmarshal([]byte(body), &answers); err != nil || status != http.StatusOK || len(answers) != MaxBatch {
		t.Errorf("a batch of %d: %d, %d answers: %v", MaxBatch, status, len(answers), err)
	}
}

// TestHTTPSessionlessArgumentsBeyondADouble pins what TOOLS.md says: at
// revision 2026-07-28 (serve --connect's) a call whose arguments hold a
// number beyond a double is refused by the SDK, which cannot read the
// tool's name beside them (400, -32020 by its id), and not recorded; at
// 2025-06-18, as over stdio, it is answered and recorded.
func TestHTTPSessionlessArgumentsBeyondADouble(t *testing.T) {
	srv, f := httpFixture(t)
	resp := mcpRequest(t, http.MethodPost, srv.URL, "full", "", sessionlessRevision, newRequest(3, "tools/call", `"name":"task_get","arguments":{"task_id":1e400}`))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"id":3,"error":{"code":-32020`) || len(f.recorded()) != 0 {
		t.Errorf("2026-07-28: %d %s, %d recorded", resp.StatusCode, b, len(f.recorded()))
	}
	sid := openSession(t, srv.URL, "full")
	code, _, body := statefulPost(t, srv.URL, "full", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"task_get","arguments":{"task_id":1e400}}}`)
	if code != http.StatusOK || !strings.Contains(body, `"id":4,"result"`) || len(f.recorded()) != 1 {
		t.Errorf("2025-06-18: %d %.200s, %d recorded", code, body, len(f.recorded()))
	}
}

// TestRevisionInMetaNotHeader: a request whose _meta names the sessionless
// revision (2026-07-28) but whose MCP-Protocol-Version header does not —
// none, or an older one — is answered as that revision answers a header
// not matching its _meta: 400 with -32020 by its id, nothing served. It
// was answered -32022 "protocol version \"2025-03-26\" is not supported by
// this server" (the header's default, or the header's revision) beside a
// list of supported revisions holding it, and a warning logged for each.
func TestRevisionInMetaNotHeader(t *testing.T) {
	var logs syncBuffer
	f := &fakeDo{}
	s := New(nil, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	s.do = f.do
	srv := httptest.NewServer(s.HTTPHandler(HTTPOptions{Authenticate: agentA}))
	t.Cleanup(srv.Close)
	call := newRequest(7, "tools/call", `"name":"server_ping","arguments":{}`)
	for _, tc := range []struct{ version, says string }{
		{"", `Mcp-Protocol-Version header is required`},
		{"2025-06-18", `Mcp-Protocol-Version header \"2025-06-18\" does not match`},
		{"2024-11-05", `Mcp-Protocol-Version header \"2024-11-05\" does not match`},
	} {
		resp := mcpRequest(t, http.MethodPost, srv.URL, "t", "", tc.version, call)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r struct {
			ID    any            `json:"id"`
			Error map[string]any `json:"error"`
		}
		json.Unmarshal(b, &r)
		if resp.StatusCode != http.StatusBadRequest || r.ID != float64(7) || r.Error == nil || r.Error["code"] != float64(-32020) || !strings.Contains(string(b), tc.says) {
			t.Errorf("header %q: %d %s; want 400, -32020 saying %s", tc.version, resp.StatusCode, b, tc.says)
		}
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("Do got %d calls, want none", n)
	}
	if l := logs.String(); l != "" {
		t.Errorf("logged:\n%s", l)
	}
}

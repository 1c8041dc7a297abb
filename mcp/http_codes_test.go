package mcp

import (
	"encoding/json"
	"net/http"
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

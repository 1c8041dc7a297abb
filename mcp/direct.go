package mcp

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK decodes a tools/call's params twice (its decoder allocates 32 KiB
// each time) and runs it through its generic request machinery. For the
// usual tool call of an initialized stdio session,
//
//	{"jsonrpc":"2.0","id":…,"method":"tools/call","params":{"name":"<plain>","arguments":{…}}}
//
// the connection runs Server.handle itself and writes the reply — the bytes
// the SDK would have written (checked against it in direct_test.go). Any
// other request (no session yet, _meta or other params, the sessionless
// protocol) goes to the SDK as before. Part of the fast path: useFastpath
// turns it off with the rest.

// direct answers tools/calls on a connection without the SDK.
type direct struct {
	ctx     context.Context // the session's, without cancellation
	session atomic.Pointer[sdk.ServerSession]
	ready   chan struct{} // closed once session is stored (serveStdio)
	handle  func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error)
	served  atomic.Int64 // tool calls answered here (direct_test.go reads it)
}

// serve runs req, a request the connection admitted, if it is a usual tool
// call of an initialized session, and reports whether it did; the reply is
// written (and the request marked answered) when the call is done.
func (d *direct) serve(c *conn, req *jsonrpc.Request) bool {
	if d == nil || !useFastpath || req.Method != "tools/call" || !req.IsCall() {
		return false
	}
	// The SDK reads its first messages before Connect hands serveStdio the
	// session; wait for it, or an early call would go to the SDK by chance.
	<-d.ready
	ss := d.session.Load()
	if ss == nil || ss.InitializeParams() == nil {
		return false // the SDK answers calls before initialize
	}
	params, ok := toolCallParams(req.Params)
	if !ok {
		return false
	}
	d.served.Add(1)
	go func() {
		res, _ := d.handle(d.ctx, &sdk.CallToolRequest{Session: ss, Params: params})
		result, err := res.MarshalJSON()
		if err != nil { // a result is an envelope of bytes Encode made; cannot happen
			c.log.Error("encoding a tool result", "error", err)
			result = nil
		}
		id := c.clientID(req.ID)
		var line []byte
		if result != nil {
			line = frameResult(id, result)
		} else {
			line, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}})
			line = append(withID(line, id), '\n')
		}
		if err := c.writeLine(line); err != nil {
			c.log.Error("writing a tool result", "error", err)
		}
		c.answered(req.ID)
	}()
	return true
}

// toolCallParams reads params of the form {"name":"<plain string>"} with an
// optional "arguments" object, members in any order, each at most once,
// nothing else; false for anything else (which the SDK then decodes).
func toolCallParams(params json.RawMessage) (*sdk.CallToolParamsRaw, bool) {
	var name string
	var args json.RawMessage
	var seen uint8
	ok := members(params, func(key, val []byte) bool {
		switch string(key) {
		case "name":
			n, end, ok := plainString(val, 0)
			if !ok || end != len(val) || seen&1 != 0 {
				return false
			}
			name, seen = n, seen|1
		case "arguments":
			if val[0] != '{' || seen&2 != 0 {
				return false
			}
			args, seen = val, seen|2
		default:
			return false
		}
		return true
	})
	if !ok || seen&1 == 0 {
		return nil, false
	}
	return &sdk.CallToolParamsRaw{Name: name, Arguments: args}, true
}

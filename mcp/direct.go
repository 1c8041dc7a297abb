package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK decodes a tools/call's params twice (its decoder allocates 32 KiB
// each time) and runs it through its generic request machinery. For the
// usual tool call of an initialized stdio session,
//
//	{"jsonrpc":"2.0","id":…,"method":"tools/call","params":{"name":"<plain>","arguments":{…}}}
//
// the connection runs the call's stages itself (Server.reply) and writes the
// reply line — the bytes the SDK would have written (appendResultLine; checked
// against the SDK in direct_test.go and FuzzResultLine). Any
// other request (no session yet, _meta or other params, the sessionless
// protocol) goes to the SDK as before. Part of the fast path: useFastpath
// turns it off with the rest.

// direct answers tools/calls on a connection without the SDK.
type direct struct {
	ctx     context.Context // the session's, without cancellation
	session atomic.Pointer[sdk.ServerSession]
	ready   chan struct{}                                      // closed once session is stored (serveStdio)
	reply   func(context.Context, *sdk.CallToolRequest) []byte // Server.reply
	served  atomic.Int64                                       // tool calls answered here (direct_test.go reads it)

	// Calls run on worker goroutines kept between calls (work): a call
	// on a fresh goroutine grew its stack, copying it, several times
	// (5% of a call's CPU). idle hands a call to a worker waiting for
	// one (made by serveStdio); waiting counts those workers, live all
	// (direct_test.go reads it).
	idle    chan func()
	waiting atomic.Int32
	live    atomic.Int32
}

// maxIdleWorkers bounds the workers kept waiting for a call: a burst of
// concurrent calls leaves no more goroutines than this behind.
const maxIdleWorkers = 8

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
	d.run(c, func() {
		reply := d.reply(d.ctx, &sdk.CallToolRequest{Session: ss, Params: params})
		id := c.clientID(req.ID)
		buf := lineBufs.Get().(*[]byte)
		line, ok := appendResultLine((*buf)[:0], id, reply)
		if !ok { // a reply is an envelope Encode made, compact JSON; cannot happen
			c.log.Error("encoding a tool result", "error", "the reply is not JSON")
			line, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}})
			line = append(withID(line, id), '\n')
		}
		if err := c.writeLine(line); err != nil {
			c.log.Error("writing a tool result", "error", err)
		}
		if ok && cap(line) <= 64<<10 { // a rare large reply's buffer is not kept
			*buf = line
			lineBufs.Put(buf)
		}
		c.answered(req.ID)
	})
	return true
}

// run runs f on a worker waiting for a call, or on a new one.
func (d *direct) run(c *conn, f func()) {
	select {
	case d.idle <- f:
	default:
		d.live.Add(1)
		go d.work(c, f)
	}
}

// work runs f, then the calls handed to it while it waits, until the
// connection closes or enough other workers wait.
func (d *direct) work(c *conn, f func()) {
	defer d.live.Add(-1)
	for {
		f()
		if d.waiting.Add(1) > maxIdleWorkers {
			d.waiting.Add(-1)
			return
		}
		select {
		case f = <-d.idle:
			d.waiting.Add(-1)
		case <-c.closed:
			d.waiting.Add(-1)
			return
		}
	}
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

// lineBufs are the buffers serve writes reply lines into (appendResultLine):
// a line is done with once written.
var lineBufs = sync.Pool{New: func() any { return new([]byte) }}

// appendResultLine appends to dst the line (with its newline) of the
// successful response with id (JSON) whose result is toolResult(reply):
// the bytes jsonrpc.EncodeMessage writes of the bytes
// CallToolResult.MarshalJSON makes (encoding/json, HTML escaping on),
// without the SDK's reflection and copies:
//
//	{"jsonrpc":"2.0","id":<id>,"result":{"content":[{"type":"text","text":<reply as a JSON string>}],"structuredContent":<reply>[,"isError":true]}}
//
// It returns false if reply is not valid JSON (MarshalJSON fails then).
func appendResultLine(dst []byte, id json.RawMessage, reply []byte) ([]byte, bool) {
	if !json.Valid(reply) {
		return nil, false
	}
	const (
		head    = `{"jsonrpc":"2.0","id":`
		content = `,"result":{"content":[{"type":"text","text":`
		sc      = `}],"structuredContent":`
		isError = `,"isError":true`
	)
	// Escapes make the text longer; a reply without any needs this much.
	b := slices.Grow(dst, len(head)+len(id)+len(content)+2*len(reply)+len(sc)+2+len(isError)+3+len(reply)/8)
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, content...)
	b = appendHTMLString(b, reply)
	b = append(b, sc...)
	b = appendHTMLCompact(b, reply)
	if !bytes.HasPrefix(reply, okPrefix) {
		b = append(b, isError...)
	}
	return append(b, '}', '}', '\n'), true
}

const hexDigits = "0123456789abcdef"

// appendHTMLString appends s as a JSON string the way encoding/json writes
// a string with HTML escaping on: ", \\ and control characters escaped (\b
// \f \n \r \t short), <, > and & as \u003c \u003e \u0026, U+2028 and
// U+2029 escaped, invalid UTF-8 as \ufffd.
func appendHTMLString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendHTMLCompact appends data, valid JSON, as encoding/json copies a
// json.RawMessage with HTML escaping on: without the space between tokens,
// <, > and & as \u003c \u003e \u0026, and U+2028 and U+2029 escaped.
func appendHTMLCompact(dst, data []byte) []byte {
	start := 0
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, data[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && data[i+2]&^1 == 0xA8:
			dst = append(dst, data[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[data[i+2]&0xF])
			start = i + 3
			i += 2
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			dst = append(dst, data[start:i]...)
			start = i + 1
		}
	}
	return append(dst, data[start:]...)
}

package mcp

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK's JSON-RPC codec is general and costly per message (its decoder
// allocates a 32 KiB buffer for every message). The transport decodes and
// encodes the two messages of a tool call, the request and its successful
// response, itself, byte for byte as the SDK would (checked against it in
// fastpath_test.go), runs the usual tool call without the SDK's request
// machinery (direct.go), and leaves every other message to the SDK.
//
// useFastpath is false only in BenchmarkFastpathAB, which measures what the
// fast path earns: it stays while that is at least 10% of per-call CPU.
var useFastpath = true

// decodeRequest decodes the usual shape of a request line itself:
//
//	{"jsonrpc":"2.0","id":<integer or plain string>,"method":"<plain string>","params":{...}}
//
// (members in any order, "id" and "params" optional, each at most once,
// nothing else). It returns false for anything else, which then goes through
// jsonrpc.DecodeMessage as before, so it decides nothing on its own: for the
// lines it accepts it returns what DecodeMessage returns (FuzzDecodeRequest
// checks this).
//
// data must be one JSON object that json.Valid accepts, without surrounding
// space. The returned Params aliases data.
func decodeRequest(data []byte) (*jsonrpc.Request, bool) {
	if len(data) < 2 || data[0] != '{' || !utf8.Valid(data) {
		return nil, false
	}
	var version, id, method, params []byte
	var seen uint8
	ok := members(data, func(key, val []byte) bool {
		var bit uint8
		switch string(key) {
		case "jsonrpc":
			bit, version = 1, val
		case "id":
			bit, id = 2, val
		case "method":
			bit, method = 4, val
		case "params":
			bit, params = 8, val
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if !ok || string(version) != `"2.0"` || method == nil || (params != nil && params[0] != '{') {
		return nil, false
	}
	name, end, ok := plainString(method, 0)
	if !ok || end != len(method) {
		return nil, false
	}
	req := &jsonrpc.Request{Method: name, Params: params}
	if id != nil {
		var v any
		switch {
		case id[0] == '"':
			s, end, ok := plainString(id, 0)
			if !ok || end != len(id) {
				return nil, false
			}
			v = s
		case len(id) <= 15: // exact as the float64 DecodeMessage goes through
			n, err := strconv.ParseInt(string(id), 10, 64)
			if err != nil {
				return nil, false
			}
			v = float64(n)
		default:
			return nil, false
		}
		var err error
		if req.ID, err = jsonrpc.MakeID(v); err != nil {
			return nil, false
		}
	}
	return req, true
}

// members calls f with each member of data, a JSON object that json.Valid
// accepts, in order: its key and its value's bytes. It returns false if a
// key is not a plain string (see plainString) or f returns false.
func members(data []byte, f func(key, val []byte) bool) bool {
	it := memberIter{data: data}
	for it.next() {
		key, _, ok := plainText(data, it.keyStart)
		if !ok || !f(key, data[it.valueStart:it.valueEnd]) {
			return false
		}
	}
	return !it.bad
}

// plainString reads the JSON string starting at data[i] if it is printable
// ASCII without escapes, returning its text and the index after it.
func plainString(data []byte, i int) (string, int, bool) {
	text, end, ok := plainText(data, i)
	return string(text), end, ok
}

// plainText is plainString's text as bytes of data, without copying it.
func plainText(data []byte, i int) ([]byte, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// encodeResult returns the line (with its newline) of a successful response
// with an integer id, exactly as jsonrpc.EncodeMessage writes it:
//
//	{"jsonrpc":"2.0","id":<id>,"result":<result>}
//
// EncodeMessage copies the result, which the SDK marshalled itself, through
// encoding/json's compaction without HTML escaping: unchanged when it holds
// no space outside strings, which is checked. It returns false for anything
// else.
func encodeResult(msg jsonrpc.Message, id json.RawMessage) ([]byte, bool) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 || !compact(resp.Result) {
		return nil, false
	}
	if id == nil {
		n, ok := resp.ID.Raw().(int64)
		if !ok {
			return nil, false
		}
		id = strconv.AppendInt(nil, n, 10)
	}
	return frameResult(id, resp.Result), true
}

// frameResult is the line of a successful response with id (JSON) and
// result (compact JSON), as jsonrpc.EncodeMessage writes it.
func frameResult(id, result json.RawMessage) []byte {
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	b := make([]byte, 0, len(head)+len(id)+len(mid)+len(result)+2)
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, mid...)
	b = append(b, result...)
	return append(b, '}', '\n')
}

package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The shape of a JSON-RPC message, checked by both transports before the
// SDK sees it (shapeRefusal). The SDK reads a message through a struct:
// a member given twice was read as its last copy ({"method":"ping",
// "method":"tools/call"} ran the call, and a gateway reading the first
// would have let a ping through); a method null was read as "" and
// answered -32601; a message with an id but neither a method nor one of
// result and error (or both) was read as an answer to nothing and never
// answered, the client waiting on it for good.

// Members whose copies shapeRefusal counts.
const (
	memberJSONRPC = iota
	memberID
	memberMethod
	memberParams
	memberResult
	memberError
	envelopeMembers
)

var memberNames = [envelopeMembers]string{"jsonrpc", "id", "method", "params", "result", "error"}

// shapeRefusal is why the JSON object m (valid JSON, starting with '{') is
// no JSON-RPC message, with the code to answer it with: -32600 for a member
// given twice, a method that is no string, or neither a request (a method)
// nor an answer (an id and one of result and error, an error null counting
// as absent, as some libraries write it beside a result); -32602 for a member of params given
// twice. "" if none of these. byID: the answer may carry m's id — not for
// what claims to answer (a result or an error): its id is one of the
// client's own requests, which the error would seem to answer. (A bad id
// of a request is requestIDSpan's to refuse; the rest of a message's form
// is the SDK's.)
func shapeRefusal(m []byte) (code int64, refusal string, byID bool) {
	var n [envelopeMembers]int
	var method, params []byte
	for it := (memberIter{data: m}); it.next(); {
		value := m[it.valueStart:it.valueEnd]
		i := slices.Index(memberNames[:], string(memberKey(m[it.keyStart:it.keyEnd])))
		switch {
		case i < 0, i == memberError && string(value) == "null":
			continue
		case i == memberMethod:
			method = value
		case i == memberParams:
			params = value
		}
		n[i]++
	}
	answer := n[memberMethod] == 0 && n[memberResult]+n[memberError] > 0
	for i, c := range n {
		if c > 1 && (i != memberID || n[memberMethod] == 0) { // (a request's id twice: requestIDSpan)
			return jsonrpc.CodeInvalidRequest, invalidRequestMessage + `: member "` + memberNames[i] + `" given more than once`, !answer && i != memberID
		}
	}
	switch {
	case n[memberMethod] == 1 && method[0] != '"':
		return jsonrpc.CodeInvalidRequest, invalidRequestMessage + ": method is not a string", true
	case n[memberMethod] == 0 && (n[memberID] == 0 || n[memberResult]+n[memberError] != 1):
		return jsonrpc.CodeInvalidRequest, invalidRequestMessage + ": neither a request (no method) nor a response (an id, and a result or an error)", !answer
	}
	if len(params) > 0 && params[0] == '{' {
		if dup := twiceGiven(params); dup != "" {
			b, _ := json.Marshal(dup)
			return jsonrpc.CodeInvalidParams, "Invalid params: member " + string(b) + " given more than once", true
		}
	}
	beside := len(m)
	if isToolCall(method) {
		beside -= toolCallLen(params)
	}
	if beside > maxBesideArguments {
		return jsonrpc.CodeInvalidRequest, fmt.Sprintf("%s: %d bytes besides a tool call's name and arguments; a message may hold at most %d", invalidRequestMessage, beside, maxBesideArguments), !answer
	}
	return 0, "", false
}

// maxBesideArguments bounds what a message holds besides a tool call's
// name and arguments: its _meta, another method's params, an initialize's
// capabilities, a notification's, an answer's result. The SDK decodes
// those into maps, at some 50 times their size, and no bound weighed them:
// 16 HTTP requests with 4 MB of _meta took 3 GB, and a sessionless one 1 s
// of CPU (attack review). The arguments are bounded where they are parsed
// (the commands layer's trees), and a name is one string, refused and
// recorded clipped; what MCP itself puts beside them is a few hundred
// bytes.
const maxBesideArguments = 256 << 10

// isToolCall reports whether method, a JSON value, is the string
// "tools/call" (escapes and all).
func isToolCall(method []byte) bool {
	if string(method) == `"tools/call"` {
		return true
	}
	var s string
	return bytes.IndexByte(method, '\\') >= 0 && json.Unmarshal(method, &s) == nil && s == "tools/call"
}

// toolCallLen is the length of the name and arguments members of params
// (a JSON object, or anything else: then 0).
func toolCallLen(params []byte) int {
	if len(params) == 0 || params[0] != '{' {
		return 0
	}
	n := 0
	for it := (memberIter{data: params}); it.next(); {
		if key := params[it.keyStart:it.keyEnd]; keyIs(key, "arguments") || keyIs(key, "name") {
			n += it.valueEnd - it.valueStart
		}
	}
	return n
}

// twiceGiven is the first member name (in key order) the JSON object obj
// gives twice, "" if none: O(n log n) in its members, which the client
// chooses (params' are usually name, arguments and _meta).
func twiceGiven(obj []byte) string {
	var buf [8][]byte
	keys := buf[:0]
	for it := (memberIter{data: obj}); it.next(); {
		keys = append(keys, memberKey(obj[it.keyStart:it.keyEnd]))
	}
	slices.SortFunc(keys, bytes.Compare)
	for i := 1; i < len(keys); i++ {
		if bytes.Equal(keys[i-1], keys[i]) {
			return string(keys[i])
		}
	}
	return ""
}

// shapeAnswer is shapeRefusal with the id to answer by (null unless
// byID).
func shapeAnswer(m []byte) (id json.RawMessage, code int64, refusal string) {
	code, refusal, byID := shapeRefusal(m)
	if refusal != "" && byID {
		id = requestID(m)
	}
	return id, code, refusal
}

// messageRefusal is why the message m (one of a batch, or a body) is no
// JSON-RPC message, with the id and code to answer it with, as stdio's
// decode answers it: its shape first (shapeRefusal, by its id), then its id
// (requestIDSpan, id null). "" if neither, or m is no object (a batch, or
// not a message: the SDK answers it).
func messageRefusal(m []byte) (id json.RawMessage, code int64, refusal string) {
	m = bytes.TrimSpace(m)
	if len(m) == 0 || m[0] != '{' || nestedDeeper(m, maxNesting) {
		return nil, 0, "" // (nested too deep: answered as such, by its id)
	}
	if id, code, refusal := shapeAnswer(m); refusal != "" {
		return id, code, refusal
	}
	if _, _, _, refusal := requestIDSpan(m); refusal != "" {
		return nil, jsonrpc.CodeInvalidRequest, refusal
	}
	return nil, 0, ""
}

// memberIter walks the top-level members of the JSON object data: each
// next gives the spans of a member's key as written (quoted, maybe
// escaped) and of its value. On bytes that are no JSON object (the fast
// path reads lines before they are checked) it stops where they stop
// making one, bad set.
type memberIter struct {
	data                                   []byte
	at                                     int // where the next member's key begins; 0 before the first
	keyStart, keyEnd, valueStart, valueEnd int
	bad                                    bool
}

func (it *memberIter) next() bool {
	d := it.data
	i := it.at
	switch {
	case i == 0:
		if len(d) < 2 || d[0] != '{' {
			it.bad = true
			return false
		}
		if i = skipSpace(d, 1); i < len(d) && d[i] == '}' {
			return false
		}
	default:
		if i = skipSpace(d, i); i < len(d) && d[i] == '}' {
			return false
		}
		if i >= len(d) || d[i] != ',' {
			it.bad = true
			return false
		}
		i = skipSpace(d, i+1)
	}
	if i >= len(d) || d[i] != '"' {
		it.bad = true
		return false
	}
	it.keyStart, it.keyEnd = i, valueEnd(d, i)
	if i = skipSpace(d, it.keyEnd); i >= len(d) || d[i] != ':' {
		it.bad = true
		return false
	}
	it.valueStart = skipSpace(d, i+1)
	if it.valueStart >= len(d) {
		it.bad = true
		return false
	}
	it.valueEnd = valueEnd(d, it.valueStart)
	if it.valueEnd <= it.valueStart {
		it.bad = true
		return false
	}
	it.at = it.valueEnd
	return true
}

// keyIs reports whether key, a JSON string as written, is name.
func keyIs(key []byte, name string) bool { return string(memberKey(key)) == name }

// memberKey is key, a JSON string as written, decoded (as written if it
// does not decode: valid JSON always does). A plain key, the usual one,
// costs no allocation; only an escaped one is decoded.
func memberKey(key []byte) []byte {
	if text, _, plain := plainText(key, 0); plain {
		return text
	}
	var s string
	if json.Unmarshal(key, &s) != nil {
		return key
	}
	return []byte(s)
}

package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// JSON-RPC ids are kept exactly as the client wrote them. The SDK converts
// ids through float64, so 1.5 and 1, or 9007199254740993 and
// 9007199254740992, would be one id to it, and a reply could go out under
// another request's id. The connection therefore hands the SDK each request
// under an id of its own (a counter, unique for the session) and puts the
// client's bytes back into the reply: ids are compared, and echoed, byte for
// byte; "1" and 1 and 1.0 are three ids.

// maxIDBytes bounds an id; a request with a longer one is refused (-32600,
// id null), since echoing it is what a flood of huge ids would need.
const maxIDBytes = 1024

// How a request whose id cannot be answered is refused (-32600, id null),
// on every transport (requestIDSpan).
var (
	badIDMessage  = invalidRequestMessage + ": the id must be one string or number of at most " + strconv.Itoa(maxIDBytes) + " bytes"
	nullIDMessage = invalidRequestMessage + ": the id must not be null (MCP): a request's id is a string or a number, a notification has none"
)

// requestIDSpan finds the id of data (a JSON object, valid) if it is a
// request: a message with a method and an id member. It returns the span
// of the id's value and isRequest; refusal, if not "", is why the id is not
// one a request may carry (-32600 with id null): not a string or a number,
// longer than maxIDBytes, given more than once, or null, which MCP forbids
// a request's id to be (JSON-RPC discourages it) and which no answer could
// be told by. Both transports refuse such a request before the SDK sees it,
// so that they answer it the same way: the SDK took an id null for none
// (over HTTP: plain-text 400, or in a batch no answer at all).
func requestIDSpan(data []byte) (start, end int, isRequest bool, refusal string) {
	start, end, ids := topMember(data, "id", false)
	if ids == 0 {
		return 0, 0, false, ""
	}
	if _, _, methods := topMember(data, "method", true); methods == 0 {
		return 0, 0, false, "" // an answer, not a request
	}
	switch id := validID(data[start:end]); {
	case id == nil || ids > 1:
		return start, end, true, badIDMessage
	case string(id) == "null":
		return start, end, true, nullIDMessage
	}
	return start, end, true, ""
}

// validID returns raw (without surrounding space) if it is a JSON-RPC id — a
// JSON string, a number or null, at most maxIDBytes — else nil.
func validID(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > maxIDBytes || !json.Valid(raw) {
		return nil
	}
	switch c := raw[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9', string(raw) == "null":
		return raw
	}
	return nil
}

// requestID returns the id of a JSON object if it has one valid id member,
// else nil.
func requestID(data []byte) json.RawMessage {
	start, end, n := topMember(data, "id", false)
	if n != 1 {
		return nil
	}
	return validID(data[start:end])
}

// topMember finds the top-level member name of a JSON object (data is valid
// JSON and starts with '{'; keys may be escaped): the span of its value and
// how many times it occurs (the span is the first's). With first set it
// stops at the first occurrence.
func topMember(data []byte, name string, first bool) (start, end, n int) {
	for it := (memberIter{data: data}); it.next(); {
		if keyIs(data[it.keyStart:it.keyEnd], name) {
			if n++; n == 1 {
				start, end = it.valueStart, it.valueEnd
			}
			if first {
				break
			}
		}
	}
	return start, end, n
}

// replaceSpan returns data with data[start:end] replaced by with, in a new slice.
func replaceSpan(data []byte, start, end int, with []byte) []byte {
	b := make([]byte, 0, len(data)-(end-start)+len(with))
	b = append(b, data[:start]...)
	b = append(b, with...)
	return append(b, data[end:]...)
}

// withID returns the encoded message line with its id replaced by raw.
func withID(line []byte, raw []byte) []byte {
	start, end, n := topMember(line, "id", true)
	if n == 0 {
		return line
	}
	return replaceSpan(line, start, end, raw)
}

// internalID is the id the SDK sees for the n-th request of a session.
func internalID(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The envelope every tool result carries (CONTRACT.md §1), both as
// structuredContent and as the one text content item:
//
//	{"ok":true,"data":{...}}
//	{"ok":false,"error":{"code":"ERR_…","message":"…","details":{...}}}
type failureEnvelope struct {
	OK    bool    `json:"ok"`
	Error failure `json:"error"`
}

// okPrefix begins every success envelope; data, compact JSON as marshal
// writes it, follows it and a closing brace ends it.
var okPrefix = []byte(`{"ok":true,"data":`)

// Encode turns a call's outcome into the contract's outcome code ("OK" or an
// ERR_* code) and the exact reply bytes sent to the client: the success
// envelope around result when err is nil, else the failure envelope of the
// error table (errors.go). It is the Encode of every commands.Call this
// server makes, so the bytes the ledger hashes are the bytes sent.
//
// result must marshal to a JSON object (nil or null is taken as {}). Encode never
// fails or panics: an error it cannot map, a result it cannot marshal, or a
// panic in a MarshalJSON becomes ERR_INTERNAL, with the cause logged.
func (s *Server) Encode(result any, err error) (code string, reply []byte) {
	return s.encode(result, err, len(s.tools))
}

// encode is Encode for a caller that may call registered of the tools (a
// token scoped to some: server_health counts those, as tools/list lists
// them).
func (s *Server) encode(result any, err error, registered int) (code string, reply []byte) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("encode panicked", "panic", p, "stack", string(debug.Stack()))
			code, reply = internalReply()
		}
	}()
	s.describe(result, registered)
	if err != nil {
		f, ok := classify(err)
		if !ok {
			s.log.Error("unmapped error answered as ERR_INTERNAL", "error", err)
		}
		return encodeFailure(f)
	}
	// The envelope is written around the data in one buffer: the prefix,
	// then the data as marshal writes it, then the closing brace where
	// the encoder's newline was.
	var buf bytes.Buffer
	buf.Grow(512)
	buf.Write(okPrefix)
	if merr := encodeJSON(&buf, result); merr != nil {
		s.log.Error("cannot marshal result", "error", merr, "type", fmt.Sprintf("%T", result))
		return internalReply()
	}
	b := buf.Bytes()
	b = b[:len(b)-1] // the encoder's newline
	switch data := b[len(okPrefix):]; {
	case string(data) == "null": // nil, or a nil map or pointer
		return CodeOK, append(okPrefix[:len(okPrefix):len(okPrefix)], '{', '}', '}')
	case data[0] != '{':
		s.log.Error("result is not a JSON object", "type", fmt.Sprintf("%T", result))
		return internalReply()
	}
	return CodeOK, append(b, '}')
}

func encodeFailure(f failure) (string, []byte) {
	b, err := marshal(failureEnvelope{Error: f})
	if err != nil { // the details types all marshal; keep the reply well-formed anyway
		return internalReply()
	}
	return f.Code, b
}

// internalReply is the ERR_INTERNAL envelope; its bytes are fixed.
func internalReply() (string, []byte) {
	return CodeInternal, []byte(`{"ok":false,"error":{"code":"ERR_INTERNAL","message":"` + internalMessage + `","details":{}}}`)
}

// toolResult wraps reply bytes into the MCP result: structuredContent and one
// text item carry the same JSON, and isError is set for a failure envelope.
func toolResult(reply []byte) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(reply)}},
		StructuredContent: json.RawMessage(reply),
		IsError:           !bytes.HasPrefix(reply, okPrefix),
	}
}

// result is a tool's data schema as the envelope publishes it, described,
// with every field a result always carries required, at any depth.
func result(data *schema) *schema {
	d := withRequired(data)
	if d.description == "" {
		d.description = "The tool's result, present when ok is true."
	}
	return d
}

// withRequired is a copy of output schema s in which every object requires
// its properties but those that may be absent (optional, orNull), so a
// client validating structured output can rely on the others.
func withRequired(s *schema) *schema {
	c := *s
	if s.items != nil {
		c.items = withRequired(s.items)
	}
	if s.props != nil {
		c.props, c.required = make([]property, len(s.props)), nil
		for i, p := range s.props {
			c.props[i] = prop(p.name, withRequired(p.s))
			if !p.s.absentOK {
				c.required = append(c.required, p.name)
			}
		}
	}
	return &c
}

// envelopeSchema is a tool's outputSchema: the envelope around the tool's
// data. It accepts both the success and the failure envelope, because the
// TypeScript SDK client validates structuredContent against it on every
// result, isError included. Under data every field a result always carries
// is required; none is closed (additionalProperties:false), so fields may be
// added; a field the contract makes optional may be absent or null.
func envelopeSchema(data *schema) *schema {
	return object("The logbook envelope: {\"ok\":true,\"data\":{...}} on success, {\"ok\":false,\"error\":{...}} on failure (with isError).",
		prop("ok", boolean("Whether the call succeeded.")),
		prop("data", result(data)),
		prop("error", object("Present when ok is false.",
			prop("code", enum("Stable error code.", errorCodes...)),
			prop("message", str("Human-readable explanation.")),
			prop("details", object("Code-specific details, e.g. issues[] for ERR_INVALID_INPUT.")),
		).require("code", "message")),
	).require("ok")
}

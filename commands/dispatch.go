package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
)

// handler runs one tool inside the call's transaction.
type handler func(s *Service, ctx context.Context, tx *Tx, args json.RawMessage) (any, error)

// command is one tool's handler and whether it may append events.
type command struct {
	run     handler
	mutates bool
}

// tool adapts a typed command to a handler: it decodes the arguments
// (already checked against the schema at the edge; decoding is strict
// again here) and runs it.
func tool[In any, Out any](mutates bool, f func(*Service, *Tx, In) (Out, error)) command {
	return command{mutates: mutates, run: func(s *Service, _ context.Context, tx *Tx, args json.RawMessage) (any, error) {
		if mutates && s.opts.ReadOnly {
			return nil, ErrReadOnly
		}
		var in In
		if err := decodeArgs(args, &in); err != nil {
			return nil, err
		}
		return f(s, tx, in)
	}}
}

// Tools maps each contract tool name to its command.
var tools = map[string]command{
	"server_ping":         tool(false, (*Service).Ping),
	"server_health":       tool(false, (*Service).Health),
	"skill_list":          tool(false, (*Service).ListSkills),
	"task_create":         tool(true, (*Service).CreateTask),
	"task_update":         tool(true, (*Service).UpdateTask),
	"task_get":            tool(false, (*Service).GetTask),
	"task_list":           tool(false, (*Service).ListTasks),
	"task_next_actions":   tool(false, (*Service).NextActions),
	"thought_record":      tool(true, (*Service).RecordThought),
	"thought_record_list": tool(false, (*Service).ListThoughts),
	"audit_session_start": tool(true, (*Service).StartSession),
	"audit_verify_chain":  tool(false, (*Service).VerifyChain),
	"merkle_finalize":     tool(true, (*Service).Finalize),
	"merkle_root":         tool(false, (*Service).Root),
}

// ToolNames lists the tools the service runs.
func ToolNames() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	return names
}

func (s *Service) dispatch(ctx context.Context, tx *Tx, call Call) (any, error) {
	h, ok := tools[call.Tool]
	if !ok {
		return nil, Invalid("name", "unknown tool %q", call.Tool)
	}
	return h.run(s, ctx, tx, call.Args)
}

// decodeArgs decodes a JSON object strictly: unknown fields and trailing
// data are input errors.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeIssue(err)
	}
	if dec.More() {
		return Invalid("", "trailing data after the arguments object")
	}
	return nil
}

func decodeIssue(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return Invalid(te.Field, "must be %s, not %s", te.Type.Kind(), te.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return Invalid(strings.Trim(f, `"`), "unknown field")
	}
	return Invalid("", "arguments are not a valid JSON object: %s", strings.TrimPrefix(msg, "json: "))
}

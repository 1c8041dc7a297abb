package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/logbook-dev/logbook/domain"
)

// Command is one thing the service can be asked to do: the domain's rules
// of its arguments, whether it changes domain state, and how it runs. A
// transport maps its own names (MCP tool names, HTTP routes) to these values.
type Command struct {
	rules   *domain.Command
	mutates bool
	// heavy: a read whose work grows with the ledger (see readsAside).
	heavy bool
	run   handler
}

// Rules are the domain's rules of the command's arguments.
func (c *Command) Rules() *domain.Command { return c.rules }

// Mutates reports whether the command changes domain state (it is refused
// with ErrReadOnly by a read-only service). Every call is audited anyway.
func (c *Command) Mutates() bool { return c.mutates }

// handler runs one command inside the call's transaction.
type handler func(s *Service, ctx context.Context, tx *Tx, args json.RawMessage) (any, error)

// command adapts a typed method to a Command: the call's arguments are
// validated against the domain's rules, then decoded strictly into In.
func command[In any, Out any](rules *domain.Command, mutates bool, f func(*Service, *Tx, In) (Out, error)) *Command {
	return &Command{rules: rules, mutates: mutates, run: func(s *Service, _ context.Context, tx *Tx, args json.RawMessage) (any, error) {
		var in In
		if err := decodeArgs(args, &in); err != nil {
			return nil, err
		}
		return f(s, tx, in)
	}}
}

// growing marks a read whose work grows with the ledger.
func (c *Command) growing() *Command { c.heavy = true; return c }

// The commands, one per domain rule set.
var (
	CreateTask    = command(&domain.CreateTask, true, (*Service).CreateTask)
	UpdateTask    = command(&domain.UpdateTask, true, (*Service).UpdateTask)
	GetTask       = command(&domain.GetTask, false, (*Service).GetTask)
	ListTasks     = command(&domain.ListTasks, false, (*Service).ListTasks).growing()
	NextActions   = command(&domain.NextActions, false, (*Service).NextActions).growing()
	RecordThought = command(&domain.RecordThought, true, (*Service).RecordThought)
	ListThoughts  = command(&domain.ListThoughts, false, (*Service).ListThoughts).growing()
	StartSession  = command(&domain.StartSession, true, (*Service).StartSession)
	Finalize      = command(&domain.Finalize, true, (*Service).Finalize)
	Root          = command(&domain.Root, false, (*Service).Root).growing()
	VerifyChain   = command(&domain.VerifyChain, false, (*Service).VerifyChain).growing()
	ListSkills    = command(&domain.ListSkills, false, (*Service).ListSkills)
	Ping          = command(&domain.Ping, false, (*Service).Ping)
	Health        = command(&domain.Health, false, (*Service).Health)
)

// Commands lists every command, in the contract's order.
var Commands = []*Command{
	CreateTask, UpdateTask, GetTask, ListTasks, NextActions,
	RecordThought, ListThoughts,
	StartSession, Finalize, Root, VerifyChain,
	ListSkills, Ping, Health,
}

// dispatch validates the call's arguments with the domain's rules (whatever
// the edge checked before) and runs its command.
func (s *Service) dispatch(ctx context.Context, tx *Tx, call Call) (any, error) {
	c := call.Command
	if c == nil {
		return nil, Invalid("name", "unknown command %q", call.Name)
	}
	if c.mutates && s.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if c.rules != nil {
		if err := c.rules.ValidateJSON(call.Args); err != nil {
			return nil, err
		}
	}
	return c.run(s, ctx, tx, call.Args)
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

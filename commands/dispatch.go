package commands

import (
	"context"
	"reflect"
	"runtime/debug"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
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

// handler runs one command inside the call's transaction, on its
// arguments object (which has passed the command's rules).
type handler func(s *Service, ctx context.Context, tx *Tx, args *domain.Value) (any, error)

// command adapts a typed method to a Command: the call's arguments, once
// they pass the domain's rules, are decoded from their tree into In.
func command[In any, Out any](rules *domain.Command, mutates bool, f func(*Service, *Tx, In) (Out, error)) *Command {
	fields := fieldsOf(reflect.TypeFor[In]())
	return &Command{rules: rules, mutates: mutates, run: func(s *Service, _ context.Context, tx *Tx, args *domain.Value) (any, error) {
		if err := emptyID(rules, args); err != nil {
			return nil, err
		}
		var in In
		if err := fields.decode(args, &in); err != nil {
			return nil, err
		}
		return f(s, tx, in)
	}}
}

// emptyID refuses an id argument given as "": it names nothing, so it is
// not found, as any id that names nothing. The typed inputs hold an
// optional id as a string whose "" means "not given"; without this, a
// given "" was taken for an absent argument (merkle_finalize sealing every
// leaf, audit_verify_chain verifying the whole ledger, a task created
// with no parent).
func emptyID(rules *domain.Command, args *domain.Value) error {
	for _, f := range rules.Fields {
		if f.IDOf == "" {
			continue
		}
		v := args.Get(f.Name)
		if v == nil || v.Kind() != domain.String || v.Text() != "" {
			continue
		}
		switch f.IDOf {
		case domain.TaskPrefix:
			return &NotFoundError{Kind: ErrTaskNotFound, ID: ""}
		case domain.SessionPrefix:
			return &NotFoundError{Kind: ErrSessionNotFound, ID: ""}
		default:
			return Invalid(f.Name, "names nothing: an id must not be empty")
		}
	}
	return nil
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

	RecordFinding     = command(&domain.RecordFinding, true, (*Service).RecordFinding)
	RecordLearning    = command(&domain.RecordLearning, true, (*Service).RecordLearning)
	SupersedeLearning = command(&domain.SupersedeLearning, true, (*Service).SupersedeLearning)
	WriteMemory       = command(&domain.WriteMemory, true, (*Service).WriteMemory)
	ReadMemory        = command(&domain.ReadMemory, false, (*Service).ReadMemory)
	MemoryHistory     = command(&domain.MemoryHistory, false, (*Service).MemoryHistory)
	SearchKnowledge   = command(&domain.SearchKnowledge, false, (*Service).SearchKnowledge).growing()
)

// Commands lists every command, in the contract's order.
var Commands = []*Command{
	CreateTask, UpdateTask, GetTask, ListTasks, NextActions,
	RecordThought, ListThoughts,
	StartSession, Finalize, Root, VerifyChain,
	ListSkills, Ping, Health,
	RecordFinding, RecordLearning, SupersedeLearning,
	WriteMemory, ReadMemory, MemoryHistory,
	SearchKnowledge,
}

// check validates a call's arguments with the domain's rules: what they
// need of no ledger, worked out before the call queues for a commit
// (readArgs), which every writer waits for (50,000 metadata members took
// seconds to check).
// A panic of the rules is the call's internal error, logged and recorded
// as one in the commit's, as when they ran there.
func check(call Call, args *domain.Args) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &boltstore.PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	c := call.Command
	if c == nil {
		return Invalid("name", "unknown command %q", domain.Clip(call.Name))
	}
	if c.rules != nil {
		return c.rules.ValidateArgs(args)
	}
	return nil
}

// dispatch runs the call's command. Invalid arguments (args.invalid,
// check) are refused first, then a mutating command of a read-only
// service or caller.
func (s *Service) dispatch(ctx context.Context, tx *Tx, call Call, args callArgs) (any, error) {
	if args.invalid != nil {
		return nil, args.invalid
	}
	c := call.Command
	if c.mutates && s.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if c.mutates && call.ReadOnly {
		return nil, ErrReadOnlyCaller
	}
	return c.run(s, ctx, tx, args.parsed.Object())
}

package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/projections"
)

// Call is one MCP tool call as the edge received it.
type Call struct {
	Tool   string          // the tool name as called (may be unknown)
	Args   json.RawMessage // the raw arguments as received; hashed canonically into tool.called
	Client string          // the MCP client's clientInfo.name ("" if unknown)
	// Invalid, when non-nil, is the edge's rejection of the arguments (schema,
	// UTF-8, unknown tool): Do records the call with this error and runs nothing.
	Invalid error
	// Encode turns the call's outcome into the outcome code written to the
	// tool.called event ("OK" or an ERR_* code) and the exact reply bytes sent
	// to the client (whose SHA-256 is written too). The edge owns both.
	Encode func(result any, err error) (code string, reply []byte)
}

// Options configure a Service.
type Options struct {
	Agent    string // identity bound at launch; "" means the MCP client's name
	Project  string // default project of task_next_actions
	ReadOnly bool   // refuse mutating tools with ErrReadOnly
	Skills   *projections.Skills
	Skipped  []projections.SkippedSkill // skill files that failed to load
	Version  string                     // the binary's version, for server_health
	Logger   *slog.Logger
	// Edge describes the MCP layer for server_health (see SetEdge).
	Edge Edge
}

// Edge is what the MCP layer reports about itself in server_health.
type Edge struct {
	Stages []string
	Tools  int
}

// Service runs tool calls against the ledger.
type Service struct {
	l       *ledger.Ledger
	opts    Options
	started time.Time
	log     *slog.Logger

	// The skills.loaded record goes into the first committed call, when the
	// actor is known; firstMu keeps concurrent first calls from writing it twice.
	firstMu   sync.Mutex
	firstDone bool
}

// ErrInternal is what an unexpected failure becomes at the edge: Do has
// already logged its cause, which is never sent.
var ErrInternal = errors.New("internal error")

// New brings the projections up to date — rebuilding them from the log if
// they were built by another projection version — and returns a Service.
func New(l *ledger.Ledger, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{l: l, opts: opts, started: time.Now(), log: opts.Logger}
	if err := Rebuild(l, false, func(done, total uint64) {
		s.log.Info("rebuilding projections", "done", done, "total", total)
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// Rebuild brings the projections in the file up to the log's head. With
// force, or when the stored projection version differs from the binary's, it
// first drops them and refolds the whole log. It commits in chunks, so other
// processes keep working; their calls fold whatever is left first.
func Rebuild(l *ledger.Ledger, force bool, progress func(done, total uint64)) error {
	var need bool
	var head, applied uint64
	err := l.View(func(tx *ledger.Tx) error {
		var err error
		need, err = projections.NeedsRebuild(tx)
		_, applied, _ = projections.State(tx)
		head = tx.Head().Seq
		return err
	})
	if err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	if !force && !need && applied == head {
		return nil
	}
	if force || need {
		if err := l.Update(projections.Reset); err != nil {
			return fmt.Errorf("reset projections: %w", err)
		}
		applied = 0
	}
	const chunk = 20000
	for {
		var n uint64
		err := l.Update(func(tx *ledger.Tx) error {
			var err error
			n, err = projections.CatchUp(tx, chunk)
			head = tx.Head().Seq
			return err
		})
		if err != nil {
			return fmt.Errorf("rebuild projections: %w", err)
		}
		applied += n
		if progress != nil && (n > 0 || force || need) {
			progress(applied, head)
		}
		if n < chunk {
			return nil
		}
	}
}

// SetEdge records what the MCP layer reports about itself in server_health.
// Call it before serving.
func (s *Service) SetEdge(e Edge) { s.opts.Edge = e }

// Tx is one call's view of the ledger transaction: it appends events as the
// service's actor and folds them into the projections.
type Tx struct {
	lt      *ledger.Tx
	actor   string
	emitted int
}

// emit appends one domain event and folds it.
func (tx *Tx) emit(typ string, subjects []string, payload any) (ledger.Record, error) {
	b, err := ledger.EncodePayload(payload)
	if err != nil {
		return ledger.Record{}, err
	}
	rec, err := tx.lt.Append(ledger.Event{Type: typ, Version: projections.CurrentVersion(typ), Actor: tx.actor, Subjects: subjects, Payload: b})
	if err != nil {
		return rec, err
	}
	tx.emitted++
	return rec, projections.Apply(tx.lt, rec)
}

// rejected carries a domain error raised after the handler had emitted
// events: the commit is rolled back and the call recorded alone.
type rejected struct{ err error }

func (r *rejected) Error() string { return r.err.Error() }

// Do runs one tool call as one atomic, durable commit: the domain events it
// decides plus exactly one tool.called event. It returns the reply bytes
// produced by call.Encode once the commit is durable. A non-nil error means
// the commit failed (errors.Is(err, ErrStorage)) and nothing of the call is in
// the ledger; reply is then nil.
func (s *Service) Do(ctx context.Context, call Call) (reply []byte, err error) {
	start := time.Now()
	actor := s.actor(call.Client)
	// What tool.called records of the arguments depends on them alone:
	// worked out here, not in the commit that calls queue for.
	sum, err := ArgsSHA256(projections.CurrentVersion(projections.TypeToolCalled), call.Args)
	if err != nil {
		return nil, err
	}
	args := callArgs{sum: sum, ids: namedIDs(call.Args)}
	if !s.first() {
		s.firstMu.Lock()
		defer s.firstMu.Unlock()
	}
	firstPending := !s.firstDone
	body := func(lt *ledger.Tx) error {
		tx := &Tx{lt: lt, actor: actor}
		if _, err := projections.CatchUp(lt, 0); err != nil {
			return err
		}
		if firstPending {
			if _, err := tx.emit(projections.TypeSkillsLoaded, nil, s.opts.Skills.Loaded(s.opts.Skipped)); err != nil {
				return err
			}
		}
		var result any
		var herr error
		if call.Invalid != nil {
			herr = call.Invalid
		} else {
			before := tx.emitted
			result, herr = s.dispatch(ctx, tx, call)
			if herr != nil && isDomain(herr) && tx.emitted > before {
				return &rejected{herr}
			}
			if herr != nil && !isDomain(herr) {
				return herr
			}
		}
		return s.record(tx, call, args, start, result, herr, &reply)
	}
	err = s.l.Update(func(lt *ledger.Tx) error {
		err := body(lt)
		var rej *rejected
		if err != nil && !errors.As(err, &rej) {
			return &funcError{err}
		}
		return err
	})
	var rej *rejected
	switch {
	case err == nil:
		if firstPending {
			s.firstDone = true
		}
		return reply, nil
	case errors.As(err, &rej):
		err = rej.err
	case isStorage(err), errors.Is(err, projections.ErrVersionChanged):
		return nil, s.storageError(call.Tool, err)
	default:
		s.logInternal(call.Tool, err)
		err = ErrInternal
	}
	// Record the call alone, with its error.
	herr := err
	err = s.l.Update(func(lt *ledger.Tx) error {
		tx := &Tx{lt: lt, actor: actor}
		if _, err := projections.CatchUp(lt, 0); err != nil {
			return &funcError{err}
		}
		if err := s.record(tx, call, args, start, nil, herr, &reply); err != nil {
			return &funcError{err}
		}
		return nil
	})
	switch {
	case err == nil:
		return reply, nil
	case isStorage(err), errors.Is(err, projections.ErrVersionChanged):
		return nil, s.storageError(call.Tool, err)
	}
	// Even the call alone could not be recorded: answer, unaudited, and
	// say why on stderr.
	s.logInternal(call.Tool, err)
	_, reply = call.Encode(nil, ErrInternal)
	return reply, nil
}

func (s *Service) first() bool {
	s.firstMu.Lock()
	defer s.firstMu.Unlock()
	return s.firstDone
}

// callArgs is what tool.called records of a call's arguments: their
// canonical hash and the ids they name (the event's subjects).
type callArgs struct {
	sum string
	ids []string
}

// record encodes the reply and appends the call's tool.called event.
func (s *Service) record(tx *Tx, call Call, args callArgs, start time.Time, result any, herr error, reply *[]byte) error {
	code, out := call.Encode(result, herr)
	*reply = out
	resultSum := sha256.Sum256(out)
	_, err := tx.emit(projections.TypeToolCalled, args.ids, projections.ToolCalled{
		Tool:         call.Tool,
		ArgsSHA256:   args.sum,
		Outcome:      code,
		ResultSHA256: hex.EncodeToString(resultSum[:]),
		DurationUS:   time.Since(start).Microseconds(),
		Client:       call.Client,
	})
	return err
}

func (s *Service) actor(client string) string {
	switch {
	case s.opts.Agent != "":
		return s.opts.Agent
	case client != "":
		return client
	}
	return "unknown"
}

// isStorage tells a failed commit (lock timeout, I/O) from a failure of the
// call's own logic: the ledger reports the former as anything but the
// function's error.
func isStorage(err error) bool {
	var pe *ledger.PanicError
	var rej *rejected
	if errors.As(err, &pe) || errors.As(err, &rej) {
		return false
	}
	var fe *funcError
	return !errors.As(err, &fe)
}

// funcError marks an error raised inside a call's own function (not by
// the commit), so Do can tell the two apart.
type funcError struct{ err error }

func (e *funcError) Error() string { return e.err.Error() }
func (e *funcError) Unwrap() error { return e.err }

func (s *Service) storageError(tool string, err error) error {
	reason := "the ledger could not commit"
	switch {
	case errors.Is(err, projections.ErrVersionChanged):
		reason = "another logbook version rebuilt the projections; restart this server"
	case errors.Is(err, ledger.ErrLocked):
		reason = "the ledger file is locked by another process (timed out)"
	case errors.Is(err, ledger.ErrClosed):
		reason = "the server is shutting down"
	}
	s.log.Error("commit failed", "tool", tool, "err", err)
	return &StorageError{Reason: reason, Err: err}
}

func (s *Service) logInternal(tool string, err error) {
	var pe *ledger.PanicError
	if errors.As(err, &pe) {
		s.log.Error("panic in tool call", "tool", tool, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		return
	}
	s.log.Error("tool call failed", "tool", tool, "err", err)
}

// isDomain reports whether err is one of the contract's answers (rather than
// an internal failure).
func isDomain(err error) bool {
	for _, e := range []error{ErrInvalidInput, ErrTaskNotFound, ErrProjectNotFound, ErrSessionNotFound,
		ErrInvalidTransition, ErrTaskClosed, ErrWritebackRequired, ErrCircularDependency, ErrAlreadyFinalized, ErrReadOnly} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// namedIDs are the ids an argument object names (task_id, parent_id,
// session_id): the subjects of its tool.called event.
func namedIDs(raw json.RawMessage) []string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var ids []string
	for _, k := range []string{"task_id", "parent_id", "session_id"} {
		id, _ := m[k].(string)
		_, task := projections.ParseID(projections.TaskPrefix, id)
		_, session := projections.ParseID(projections.SessionPrefix, id)
		if task || session {
			ids = append(ids, id)
		}
	}
	return ids
}

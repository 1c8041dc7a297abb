package commands

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// contractDetails are the details CONTRACT.md §2 gives each code, read from
// the typed error (nil when the code has none).
func contractDetails(err error) map[string]any {
	var (
		invalid    *InvalidInputError
		notFound   *NotFoundError
		transition *TransitionError
		closed     *TaskClosedError
		writeback  *WritebackError
		cycle      *CycleError
		finalized  *FinalizedError
	)
	switch {
	case errors.As(err, &invalid):
		issues := []any{}
		for _, is := range invalid.Issues {
			issues = append(issues, map[string]any{"path": is.Path, "message": is.Message})
		}
		return map[string]any{"issues": issues}
	case errors.As(err, &notFound):
		switch {
		case errors.Is(err, ErrTaskNotFound):
			return map[string]any{"task_id": notFound.ID}
		case errors.Is(err, ErrProjectNotFound):
			return map[string]any{"project": notFound.ID}
		default:
			return map[string]any{"session_id": notFound.ID}
		}
	case errors.As(err, &transition):
		allowed := []any{}
		for _, a := range transition.Allowed {
			allowed = append(allowed, a)
		}
		return map[string]any{"from": transition.From, "to": transition.To, "allowed": allowed}
	case errors.As(err, &closed):
		return map[string]any{"task_id": closed.TaskID, "status": closed.Status}
	case errors.As(err, &writeback):
		missing := []any{}
		for _, m := range writeback.Missing {
			missing = append(missing, m)
		}
		return map[string]any{"task_id": writeback.TaskID, "missing_fields": missing}
	case errors.As(err, &cycle):
		return map[string]any{"task_id": cycle.TaskID, "parent_id": cycle.ParentID}
	case errors.As(err, &finalized):
		return map[string]any{"session_id": finalized.SessionID}
	}
	return nil
}

// issuePaths are the paths of an ERR_INVALID_INPUT's issues.
func issuePaths(err error) []string {
	var invalid *InvalidInputError
	if !errors.As(err, &invalid) {
		return nil
	}
	var paths []string
	for _, is := range invalid.Issues {
		paths = append(paths, is.Path)
	}
	return paths
}

// errorFixture builds a ledger with one of everything the error cases need:
//
//	T-0001 core, backlog          T-0002 other, backlog
//	T-0003 core, done             T-0004 core, cancelled
//	T-0005 core, review, no thought   T-0006 core, todo
//	T-0007 core, blocked          T-0008 core, the open session's task
//	A-0001 on T-0001, finalized   A-0002 on T-0008, open, shallow
//
// No error case names T-0008, so a rejected call adds no session leaf.
func errorFixture(t *testing.T, opts Options) *harness {
	h := newHarness(t, opts)
	for i, p := range []string{"core", "other", "core", "core", "core", "core", "core", "core"} {
		h.call("task_create", map[string]any{"title": "task " + string(rune('A'+i)), "project": p}, "OK")
	}
	walk := func(id string, states ...string) {
		for _, st := range states {
			args := map[string]any{"task_id": id, "status": st}
			if st == "blocked" {
				args["blocked_reason"] = "waiting"
			}
			h.call("task_update", args, "OK")
		}
	}
	h.call("thought_record", map[string]any{"task_id": "T-0003", "type": "plan", "content": "p"}, "OK")
	walk("T-0003", "todo", "in_progress", "review", "done")
	walk("T-0004", "cancelled")
	walk("T-0005", "todo", "in_progress", "review")
	walk("T-0006", "todo")
	walk("T-0007", "todo", "blocked")
	h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "aud"}, "OK")
	h.call("merkle_finalize", map[string]any{"session_id": "A-0001"}, "OK")
	h.call("audit_session_start", map[string]any{"task_id": "T-0008", "auditor_id": "aud"}, "OK")
	return h
}

// TestErrorCodes reaches every error code commands raise, checks its
// details, and that the rejected call appended only its tool.called event
// (recording the code) and changed no read model.
func TestErrorCodes(t *testing.T) {
	h := errorFixture(t, Options{})
	big := strings.Repeat("x", 16<<10)
	type m = map[string]any
	cases := []struct {
		name    string
		tool    string
		args    any
		code    string
		details map[string]any // nil: check paths only
		paths   []string       // for ERR_INVALID_INPUT
	}{
		{"blank title", "task_create", m{"title": " \t", "project": "core"}, "ERR_INVALID_INPUT", nil, []string{"title"}},
		{"parent in another project", "task_create", m{"title": "x", "project": "core", "parent_id": "T-0002"}, "ERR_INVALID_INPUT", nil, []string{"parent_id"}},
		{"unknown parent", "task_create", m{"title": "x", "project": "core", "parent_id": "T-0999"}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0999"}, nil},
		{"unknown field", "task_create", m{"title": "x", "project": "core", "colour": "red"}, "ERR_INVALID_INPUT", nil, []string{"colour"}},
		{"wrong type", "task_create", m{"title": 7, "project": "core"}, "ERR_INVALID_INPUT", nil, []string{"title"}},
		{"not an object", "task_create", json.RawMessage(`[1]`), "ERR_INVALID_INPUT", nil, []string{""}},
		{"unknown tool", "task_delete", m{"task_id": "T-0001"}, "ERR_INVALID_INPUT", nil, []string{"name"}},

		{"update blank title", "task_update", m{"task_id": "T-0001", "title": "  "}, "ERR_INVALID_INPUT", nil, []string{"title"}},
		{"update nothing", "task_update", m{"task_id": "T-0001"}, "ERR_INVALID_INPUT", nil, []string{""}},
		{"blocked without reason", "task_update", m{"task_id": "T-0006", "status": "blocked"}, "ERR_INVALID_INPUT", nil, []string{"blocked_reason"}},
		{"blocked with blank reason", "task_update", m{"task_id": "T-0006", "status": "blocked", "blocked_reason": " "}, "ERR_INVALID_INPUT", nil, []string{"blocked_reason"}},
		{"reason on a task not blocked", "task_update", m{"task_id": "T-0006", "blocked_reason": "why"}, "ERR_INVALID_INPUT", nil, []string{"blocked_reason"}},
		{"reason while leaving blocked", "task_update", m{"task_id": "T-0007", "status": "todo", "blocked_reason": "why"}, "ERR_INVALID_INPUT", nil, []string{"blocked_reason"}},
		{"blank reason while blocked", "task_update", m{"task_id": "T-0007", "blocked_reason": ""}, "ERR_INVALID_INPUT", nil, []string{"blocked_reason"}},
		{"update unknown task", "task_update", m{"task_id": "T-0999", "status": "todo"}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0999"}, nil},
		{"update malformed id", "task_update", m{"task_id": "nope", "status": "todo"}, "ERR_TASK_NOT_FOUND", m{"task_id": "nope"}, nil},
		{"backlog to done", "task_update", m{"task_id": "T-0001", "status": "done"}, "ERR_INVALID_TRANSITION", m{"from": "backlog", "to": "done", "allowed": []any{"todo", "cancelled"}}, nil},
		{"todo to review", "task_update", m{"task_id": "T-0006", "status": "review", "title": "renamed too"}, "ERR_INVALID_TRANSITION", m{"from": "todo", "to": "review", "allowed": []any{"in_progress", "blocked", "cancelled"}}, nil},
		{"update done task", "task_update", m{"task_id": "T-0003", "title": "x"}, "ERR_TASK_CLOSED", m{"task_id": "T-0003", "status": "done"}, nil},
		{"reopen done task", "task_update", m{"task_id": "T-0003", "status": "todo"}, "ERR_TASK_CLOSED", m{"task_id": "T-0003", "status": "done"}, nil},
		{"done task to done", "task_update", m{"task_id": "T-0003", "status": "done"}, "ERR_TASK_CLOSED", m{"task_id": "T-0003", "status": "done"}, nil},
		{"update cancelled task", "task_update", m{"task_id": "T-0004", "progress": 5}, "ERR_TASK_CLOSED", m{"task_id": "T-0004", "status": "cancelled"}, nil},
		{"done without thought", "task_update", m{"task_id": "T-0005", "status": "done"}, "ERR_WRITEBACK_REQUIRED", m{"task_id": "T-0005", "missing_fields": []any{"thought_record"}}, nil},

		{"get unknown task", "task_get", m{"task_id": "T-0999"}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0999"}, nil},
		{"as_of_seq beyond head", "task_get", m{"task_id": "T-0001", "as_of_seq": 1 << 40}, "ERR_INVALID_INPUT", nil, []string{"as_of_seq"}},
		{"as_of_seq before creation", "task_get", m{"task_id": "T-0002", "as_of_seq": 1}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0002"}, nil},
		{"as_of_seq zero", "task_get", m{"task_id": "T-0001", "as_of_seq": 0}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0001"}, nil},
		{"bad created_after", "task_list", m{"created_after": "yesterday"}, "ERR_INVALID_INPUT", nil, []string{"created_after"}},
		{"bad created_before", "task_list", m{"created_before": "2026-13-01T00:00:00Z"}, "ERR_INVALID_INPUT", nil, []string{"created_before"}},
		{"unknown project", "task_next_actions", m{"project": "nope"}, "ERR_PROJECT_NOT_FOUND", m{"project": "nope"}, nil},

		{"whitespace content", "thought_record", m{"task_id": "T-0001", "type": "plan", "content": " \n\t"}, "ERR_INVALID_INPUT", nil, []string{"content"}},
		{"metadata over 16 KiB", "thought_record", m{"task_id": "T-0001", "type": "plan", "content": "c", "metadata": m{"k": big}}, "ERR_INVALID_INPUT", nil, []string{"metadata"}},
		{"metadata not an object", "thought_record", m{"task_id": "T-0001", "type": "plan", "content": "c", "metadata": []int{1}}, "ERR_INVALID_INPUT", nil, []string{"metadata"}},
		{"thought on unknown task", "thought_record", m{"task_id": "T-0999", "type": "plan", "content": "c"}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0999"}, nil},
		{"thought into unknown session", "thought_record", m{"task_id": "T-0001", "type": "plan", "content": "c", "session_id": "A-0099"}, "ERR_SESSION_NOT_FOUND", m{"session_id": "A-0099"}, nil},
		{"thought into finalized session", "thought_record", m{"task_id": "T-0001", "type": "plan", "content": "c", "session_id": "A-0001"}, "ERR_ALREADY_FINALIZED", m{"session_id": "A-0001"}, nil},
		{"list thoughts of unknown task", "thought_record_list", m{"task_id": "T-0999"}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0999"}, nil},
		{"list thoughts of unknown session", "thought_record_list", m{"session_id": "A-0099"}, "ERR_SESSION_NOT_FOUND", m{"session_id": "A-0099"}, nil},
		{"list thoughts, task and unknown session", "thought_record_list", m{"task_id": "T-0001", "session_id": "A-0099"}, "ERR_SESSION_NOT_FOUND", m{"session_id": "A-0099"}, nil},

		{"session on unknown task", "audit_session_start", m{"task_id": "T-0999", "auditor_id": "a"}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0999"}, nil},
		{"finalize unknown session", "merkle_finalize", m{"session_id": "A-0099"}, "ERR_SESSION_NOT_FOUND", m{"session_id": "A-0099"}, nil},
		{"finalize twice", "merkle_finalize", m{"session_id": "A-0001"}, "ERR_ALREADY_FINALIZED", m{"session_id": "A-0001"}, nil},
		{"finalize task out of scope", "merkle_finalize", m{"session_id": "A-0002", "task_id": "T-0002"}, "ERR_INVALID_INPUT", nil, []string{"task_id"}},
		{"finalize unknown task", "merkle_finalize", m{"session_id": "A-0002", "task_id": "T-0999"}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0999"}, nil},
		{"root of unknown session", "merkle_root", m{"session_id": "A-0099"}, "ERR_SESSION_NOT_FOUND", m{"session_id": "A-0099"}, nil},
		{"verify unknown session", "audit_verify_chain", m{"session_id": "A-0099"}, "ERR_SESSION_NOT_FOUND", m{"session_id": "A-0099"}, nil},
		{"verify unknown task", "audit_verify_chain", m{"task_id": "T-0999"}, "ERR_TASK_NOT_FOUND", m{"task_id": "T-0999"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			head, state := h.head(), h.stateFingerprint()
			o := h.do(c.tool, c.args)
			if o.Code != c.code {
				t.Fatalf("%s = %s, want %s: %s", c.tool, o.Code, c.code, o.Reply)
			}
			if c.details != nil {
				if got := contractDetails(o.Err); !reflect.DeepEqual(got, c.details) {
					t.Errorf("details = %v, want %v", got, c.details)
				}
			}
			if c.paths != nil {
				if got := issuePaths(o.Err); !reflect.DeepEqual(got, c.paths) {
					t.Errorf("issue paths = %q, want %q (%v)", got, c.paths, o.Err)
				}
			}
			wantOnlyToolCalled(t, h, head, state, c.tool, c.code)
		})
	}
}

// wantOnlyToolCalled checks that the last call appended exactly one event,
// its tool.called with the outcome code, and left the read models as they
// were (state: stateFingerprint before the call).
func wantOnlyToolCalled(t *testing.T, h *harness, head uint64, state uint64, tool, code string) {
	t.Helper()
	if got := h.head(); got != head+1 {
		t.Errorf("the call appended %d events, want 1", got-head)
	}
	calls := h.toolCalls()
	last := calls[len(calls)-1]
	if last.Seq != head+1 || last.P.Tool != tool || last.P.Outcome != code {
		t.Errorf("last tool.called = seq %d %+v, want seq %d tool %s outcome %s", last.Seq, last.P, head+1, tool, code)
	}
	if got := h.stateFingerprint(); got != state {
		t.Errorf("a rejected call changed the read models")
	}
}

// TestBoundaries accepts what is just within the limits commands check.
func TestBoundaries(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "x", "project": "core"}, "OK")
	// 16 KiB of compact JSON exactly: {"k":"…"} is 8 bytes around the value.
	meta := map[string]any{"k": strings.Repeat("x", 16<<10-8)}
	h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "plan", "content": "c", "metadata": meta}, "OK")
	meta["k"] = strings.Repeat("x", 16<<10-7)
	h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "plan", "content": "c", "metadata": meta}, "ERR_INVALID_INPUT")
	// Metadata is measured compact: insignificant space does not count.
	spaced := json.RawMessage(`{"task_id":"T-0001","type":"plan","content":"c","metadata":{    "k"   :   "` + strings.Repeat("x", 16<<10-8) + `"   }}`)
	h.call("thought_record", spaced, "OK")
	head := h.head()
	h.call("task_get", map[string]any{"task_id": "T-0001", "as_of_seq": head}, "OK")
	h.call("task_get", map[string]any{"task_id": "T-0001", "as_of_seq": head + 2}, "ERR_INVALID_INPUT")
	h.call("task_list", map[string]any{"created_after": "2026-04-08T22:15:30.123+02:00", "created_before": "2999-01-01T00:00:00Z"}, "OK")
}

// TestReadOnly: every mutating tool with valid arguments is refused
// (invalid arguments are refused as such first, as for every caller);
// reads work; every call is still recorded by one tool.called.
func TestReadOnly(t *testing.T) {
	h := errorFixture(t, Options{})
	h.reopen(Options{ReadOnly: true})
	h.call("server_ping", map[string]any{}, "OK") // the new process's first call also records skills.loaded
	type m = map[string]any
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"task_create", m{"title": "x", "project": "core"}, "ERR_READ_ONLY"},
		{"task_create", m{"title": "", "bogus": 1}, "ERR_INVALID_INPUT"},
		{"task_update", m{"task_id": "T-0001", "status": "todo"}, "ERR_READ_ONLY"},
		{"task_update", m{"task_id": "T-0999"}, "ERR_INVALID_INPUT"},
		{"task_update", m{"task_id": "T-0999", "status": "todo"}, "ERR_READ_ONLY"},
		{"thought_record", m{"task_id": "T-0001", "type": "plan", "content": "c"}, "ERR_READ_ONLY"},
		{"audit_session_start", m{"task_id": "T-0001", "auditor_id": "a"}, "ERR_READ_ONLY"},
		{"merkle_finalize", m{"session_id": "A-0002"}, "ERR_READ_ONLY"},
		{"merkle_finalize", m{"session_id": "A-0001"}, "ERR_READ_ONLY"},
	} {
		head, state := h.head(), h.stateFingerprint()
		o := h.do(c.tool, c.args)
		if o.Code != c.want || (c.want == "ERR_READ_ONLY") != errors.Is(o.Err, ErrReadOnly) {
			t.Errorf("%s(%v) = %s, want %s", c.tool, c.args, o.Code, c.want)
		}
		wantOnlyToolCalled(t, h, head, state, c.tool, c.want)
	}
	for _, c := range []struct {
		tool string
		args any
	}{
		{"server_ping", m{}},
		{"server_health", m{}},
		{"skill_list", m{}},
		{"task_get", m{"task_id": "T-0001", "include_thought_trail": true}},
		{"task_list", m{}},
		{"task_next_actions", m{"project": "core"}},
		{"thought_record_list", m{"verify_chain": true}},
		{"merkle_root", m{"session_id": "A-0001"}},
		{"audit_verify_chain", m{}},
	} {
		head := h.head()
		d := h.call(c.tool, c.args, "OK")
		if h.head() != head+1 {
			t.Errorf("%s appended %d events, want 1", c.tool, h.head()-head)
		}
		if c.tool == "server_health" && d["mode"] != "READONLY" {
			t.Errorf("health mode = %v, want READONLY", d["mode"])
		}
	}
}

// TestInternalErrors: an edge rejection that is not a domain error, a
// handler that panics, and a handler that fails after emitting events are
// all recorded alone, with ERR_INTERNAL, and leak no cause to the client.
func TestInternalErrors(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "x", "project": "core"}, "OK")

	emitTask := func(tx *Tx) error {
		id, err := projections.NextTaskID(tx.lt)
		if err != nil {
			return err
		}
		_, err = tx.emit(events.TypeTaskCreated, []string{id}, events.TaskCreated{TaskID: id, Project: "core", Title: "ghost", Priority: "normal", Assignee: "unassigned"})
		return err
	}
	secret := errors.New("disk path /secret/x")
	testCommands := map[string]*Command{}
	for name, hd := range map[string]handler{
		"test_panic": func(*Service, context.Context, *Tx, *domain.Value) (any, error) { panic("boom /secret/x") },
		"test_emit_then_fail": func(_ *Service, _ context.Context, tx *Tx, _ *domain.Value) (any, error) {
			if err := emitTask(tx); err != nil {
				return nil, err
			}
			return nil, secret
		},
		"test_emit_then_panic": func(_ *Service, _ context.Context, tx *Tx, _ *domain.Value) (any, error) {
			if err := emitTask(tx); err != nil {
				return nil, err
			}
			panic("boom")
		},
		"test_emit_then_reject": func(_ *Service, _ context.Context, tx *Tx, _ *domain.Value) (any, error) {
			if err := emitTask(tx); err != nil {
				return nil, err
			}
			return nil, &NotFoundError{Kind: ErrTaskNotFound, ID: "T-0042"}
		},
	} {
		testCommands[name] = &Command{run: hd, mutates: true}
	}

	for _, c := range []struct {
		name string
		call Call
		code string
	}{
		{"edge rejection, not a domain error", Call{Name: "task_get", Args: json.RawMessage(`{"task_id":"T-0001"}`), Invalid: secret}, "ERR_INTERNAL"},
		{"edge rejection, a domain error", Call{Name: "task_get", Args: json.RawMessage(`{"task_id":`), Invalid: Invalid("", "not JSON")}, "ERR_INVALID_INPUT"},
		{"handler panics", Call{Name: "test_panic", Args: json.RawMessage(`{}`)}, "ERR_INTERNAL"},
		{"handler emits then fails", Call{Name: "test_emit_then_fail", Args: json.RawMessage(`{}`)}, "ERR_INTERNAL"},
		{"handler emits then panics", Call{Name: "test_emit_then_panic", Args: json.RawMessage(`{}`)}, "ERR_INTERNAL"},
		{"handler emits then rejects", Call{Name: "test_emit_then_reject", Args: json.RawMessage(`{}`)}, "ERR_TASK_NOT_FOUND"},
	} {
		if tc := testCommands[c.call.Name]; tc != nil {
			c.call.Command = tc
		}
		t.Run(c.name, func(t *testing.T) {
			head, state := h.head(), h.stateFingerprint()
			o := h.doCall(c.call)
			if o.Code != c.code {
				t.Fatalf("code = %s, want %s: %s", o.Code, c.code, o.Reply)
			}
			if c.code == "ERR_INTERNAL" && c.call.Invalid == nil && o.Err != ErrInternal {
				t.Errorf("Encode got %v, want ErrInternal (the cause stays in the log)", o.Err)
			}
			if strings.Contains(string(o.Reply), "boom") || (c.call.Invalid == nil && strings.Contains(string(o.Reply), "secret")) {
				t.Errorf("reply leaks the cause: %s", o.Reply)
			}
			wantOnlyToolCalled(t, h, head, state, c.call.Name, c.code)
		})
	}
	var ghost bool
	h.l.View(func(tx *boltstore.Tx) error {
		_, ghost, _ = projections.GetTask(tx, "T-0002")
		return nil
	})
	if ghost {
		t.Errorf("an event emitted by a failed call survived")
	}
	h.call("task_create", map[string]any{"title": "y", "project": "core"}, "OK")
}

// TestStorageError: a call the ledger cannot commit returns ErrStorage and
// leaves nothing of itself in the ledger.
func TestStorageError(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "x", "project": "core"}, "OK")
	head := h.head()
	h.l.Close()
	var encoded bool
	reply, err := h.svc.Do(context.Background(), Call{Name: "task_create", Args: json.RawMessage(`{"title":"y","project":"core"}`),
		Encode: func(r any, err error) (string, []byte) { encoded = true; return testEncode(r, err) }})
	var se *StorageError
	if reply != nil || !errors.Is(err, ErrStorage) || !errors.As(err, &se) || se.Reason != "the server is shutting down" {
		t.Errorf("Do on a closed ledger = %q, %v; want ErrStorage", reply, err)
	}
	if encoded {
		t.Errorf("a reply was encoded for a call that was not committed")
	}
	h.reopen(Options{})
	if got := h.head(); got != head {
		t.Errorf("head %d after a failed commit, want %d", got, head)
	}
}

// TestFailureLogIsRateLimited: a burst of failures logs one line, then one
// per interval carrying how many were suppressed.
func TestFailureLogIsRateLimited(t *testing.T) {
	var r rateLimit
	t0 := time.Unix(1000, 0)
	if _, ok := r.allow(t0); !ok {
		t.Fatal("the first failure was not logged")
	}
	for i := range 100 {
		if _, ok := r.allow(t0.Add(time.Duration(i) * time.Millisecond)); ok {
			t.Fatalf("failure %d within the interval was logged", i)
		}
	}
	n, ok := r.allow(t0.Add(failLogInterval))
	if !ok || n != 100 {
		t.Fatalf("after the interval: logged %v, suppressed %d; want true, 100", ok, n)
	}
}

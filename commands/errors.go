package commands

import (
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/domain"
)

// Sentinel errors. The MCP edge maps them (with errors.Is / errors.As) to the
// contract's ERR_* codes; the typed errors below carry the details.
var (
	ErrInvalidInput       = domain.ErrInvalidInput
	ErrTaskNotFound       = errors.New("task not found")
	ErrProjectNotFound    = errors.New("project not found")
	ErrSessionNotFound    = errors.New("audit session not found")
	ErrInvalidTransition  = errors.New("invalid status transition")
	ErrTaskClosed         = errors.New("task is closed")
	ErrWritebackRequired  = errors.New("a thought record is required before done")
	ErrCircularDependency = errors.New("circular dependency")
	ErrAlreadyFinalized   = errors.New("audit session already finalized")
	ErrReadOnly           = errors.New("server is read-only")
	ErrDuplicate          = errors.New("near-duplicate of an existing learning")
	// ErrReadOnlyCaller: a mutating command from a caller that may only
	// read (a read-only token) on a server that writes. errors.Is(err,
	// ErrReadOnly) holds.
	ErrReadOnlyCaller error = readOnlyCaller{}
)

type readOnlyCaller struct{}

func (readOnlyCaller) Error() string        { return "this caller's token is read-only" }
func (readOnlyCaller) Is(target error) bool { return target == ErrReadOnly }

// TokenRevokedError: the token that proved the caller (server mode) was
// revoked before the call committed (Options.LedgerTokens). The call ran
// nothing; it is recorded with this error.
type TokenRevokedError struct{ Tool string }

func (e *TokenRevokedError) Error() string {
	return "this caller's token was revoked before the call to " + e.Tool + " was committed"
}

// Issue is one failed rule of an input (domain.Issue).
type Issue = domain.Issue

// InvalidInputError lists every rule the input broke (domain.InvalidInputError).
// errors.Is(err, ErrInvalidInput) holds.
type InvalidInputError = domain.InvalidInputError

// Invalid returns an *InvalidInputError with one issue.
func Invalid(path, format string, args ...any) error {
	return domain.Invalid(path, "%s", fmt.Sprintf(format, args...))
}

// NotFoundError names the missing object. Kind is ErrTaskNotFound,
// ErrProjectNotFound or ErrSessionNotFound; errors.Is(err, Kind) holds.
type NotFoundError struct {
	Kind error
	ID   string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%v: %s", e.Kind, e.ID) }
func (e *NotFoundError) Unwrap() error { return e.Kind }

// TransitionError is a status change the state machine forbids.
type TransitionError struct {
	From, To string
	Allowed  []string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("invalid status transition %s → %s", e.From, e.To)
}
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// TaskClosedError is any update of a done or cancelled task.
type TaskClosedError struct{ TaskID, Status string }

func (e *TaskClosedError) Error() string { return fmt.Sprintf("task %s is %s", e.TaskID, e.Status) }
func (e *TaskClosedError) Unwrap() error { return ErrTaskClosed }

// WritebackError is status → done on a task with no thought record.
type WritebackError struct {
	TaskID  string
	Missing []string
}

func (e *WritebackError) Error() string {
	return fmt.Sprintf("task %s needs a thought record before done", e.TaskID)
}
func (e *WritebackError) Unwrap() error { return ErrWritebackRequired }

// CycleError is a parent link that would make a cycle.
type CycleError struct{ TaskID, ParentID string }

func (e *CycleError) Error() string {
	return fmt.Sprintf("parent %s of %s would make a cycle", e.ParentID, e.TaskID)
}
func (e *CycleError) Unwrap() error { return ErrCircularDependency }

// FinalizedError is finalizing twice or recording into a finalized session.
type FinalizedError struct{ SessionID string }

func (e *FinalizedError) Error() string {
	return fmt.Sprintf("audit session %s is finalized", e.SessionID)
}
func (e *FinalizedError) Unwrap() error { return ErrAlreadyFinalized }

// DuplicateError is a learning too close to a live one of its project:
// their Similarity (domain.Similarity) is at least domain.DuplicateSimilarity.
type DuplicateError struct {
	ExistingID string
	Similarity float64
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("near-duplicate of learning %s (similarity %.2f)", e.ExistingID, e.Similarity)
}
func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// ErrStorage: the ledger could not commit; nothing of the call was written
// (unless a *StorageError says its outcome is Unknown).
var ErrStorage = errors.New("storage failure")

// StorageError wraps the cause of a failed commit. Reason is safe to show a
// client (no paths); the cause goes to the log.
type StorageError struct {
	Reason string
	Err    error
	// Unknown: the call may have been committed (by the process it was
	// handed to, which went away before answering; by a commit whose sync
	// failed; by a replicated log's append not resolved); otherwise
	// nothing of it is in the ledger.
	Unknown bool
}

func (e *StorageError) Error() string        { return fmt.Sprintf("storage: %s: %v", e.Reason, e.Err) }
func (e *StorageError) Is(target error) bool { return target == ErrStorage }
func (e *StorageError) Unwrap() error        { return e.Err }

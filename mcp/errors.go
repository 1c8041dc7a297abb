package mcp

import (
	"errors"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
)

// The contract's error codes (CONTRACT.md §2). They are public API: add, never rename.
const (
	CodeOK                 = "OK"
	CodeInvalidInput       = "ERR_INVALID_INPUT"
	CodeTaskNotFound       = "ERR_TASK_NOT_FOUND"
	CodeProjectNotFound    = "ERR_PROJECT_NOT_FOUND"
	CodeSessionNotFound    = "ERR_SESSION_NOT_FOUND"
	CodeInvalidTransition  = "ERR_INVALID_TRANSITION"
	CodeTaskClosed         = "ERR_TASK_CLOSED"
	CodeWritebackRequired  = "ERR_WRITEBACK_REQUIRED"
	CodeCircularDependency = "ERR_CIRCULAR_DEPENDENCY"
	CodeAlreadyFinalized   = "ERR_ALREADY_FINALIZED"
	CodeReadOnly           = "ERR_READ_ONLY"
	CodeForbidden          = "ERR_FORBIDDEN"
	CodeDuplicate          = "ERR_DUPLICATE"
	CodeStorage            = "ERR_STORAGE"
	CodeInternal           = "ERR_INTERNAL"
)

const (
	internalMessage      = "internal error; the cause was logged on the server"
	storageMessage       = "the ledger could not commit the call; nothing of it was recorded"
	unknownMessage       = "the call's outcome is unknown: it may or may not have been recorded"
	defaultStorageReason = "storage failure"
)

// errorCodes lists every code a failure envelope can carry, in table order.
var errorCodes = []string{
	CodeInvalidInput, CodeTaskNotFound, CodeProjectNotFound, CodeSessionNotFound,
	CodeInvalidTransition, CodeTaskClosed, CodeWritebackRequired, CodeCircularDependency,
	CodeAlreadyFinalized, CodeReadOnly, CodeForbidden, CodeDuplicate, CodeStorage, CodeInternal,
}

// failure is the error object of a failure envelope.
type failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details"`
}

// Details of each code, as CONTRACT.md §2 names them.
type (
	issuesDetails struct {
		Issues []commands.Issue `json:"issues"`
	}
	taskDetails struct {
		TaskID string `json:"task_id"`
	}
	projectDetails struct {
		Project string `json:"project"`
	}
	sessionDetails struct {
		SessionID string `json:"session_id"`
	}
	transitionDetails struct {
		From    string   `json:"from"`
		To      string   `json:"to"`
		Allowed []string `json:"allowed"`
	}
	closedDetails struct {
		TaskID string `json:"task_id"`
		Status string `json:"status"`
	}
	writebackDetails struct {
		TaskID        string   `json:"task_id"`
		MissingFields []string `json:"missing_fields"`
	}
	cycleDetails struct {
		TaskID   string `json:"task_id"`
		ParentID string `json:"parent_id"`
	}
	forbiddenDetails struct {
		Tool string `json:"tool"`
	}
	duplicateDetails struct {
		ExistingID string  `json:"existing_id"`
		Similarity float64 `json:"similarity"`
	}
	storageDetails struct {
		Reason string `json:"reason"`
	}
	noDetails struct{}
)

// classify is the one place that maps an error to the contract's code and
// details. It uses errors.Is / errors.As only, so commands may wrap its errors.
// A message is taken from the typed (or sentinel) error that matched, never
// from the wrapping chain, which may name internal things. ok is false when
// nothing matched: the caller then answers ERR_INTERNAL and logs err.
func classify(err error) (f failure, ok bool) {
	var (
		invalid    *commands.InvalidInputError
		notFound   *commands.NotFoundError
		transition *commands.TransitionError
		closed     *commands.TaskClosedError
		writeback  *commands.WritebackError
		cycle      *commands.CycleError
		finalized  *commands.FinalizedError
		storage    *commands.StorageError
		forbidden  *forbiddenError
		revoked    *commands.TokenRevokedError
		duplicate  *commands.DuplicateError
	)
	switch {
	case errors.As(err, &invalid):
		return failure{CodeInvalidInput, invalidMessage(invalid.Issues), issuesDetails{nonNil(invalid.Issues)}}, true
	case errors.Is(err, commands.ErrInvalidInput):
		return failure{CodeInvalidInput, commands.ErrInvalidInput.Error(), issuesDetails{[]commands.Issue{}}}, true

	case errors.As(err, &notFound) && errors.Is(notFound.Kind, commands.ErrTaskNotFound):
		return failure{CodeTaskNotFound, notFound.Error(), taskDetails{notFound.ID}}, true
	case errors.As(err, &notFound) && errors.Is(notFound.Kind, commands.ErrProjectNotFound):
		return failure{CodeProjectNotFound, notFound.Error(), projectDetails{notFound.ID}}, true
	case errors.As(err, &notFound) && errors.Is(notFound.Kind, commands.ErrSessionNotFound):
		return failure{CodeSessionNotFound, notFound.Error(), sessionDetails{notFound.ID}}, true
	case errors.Is(err, commands.ErrTaskNotFound):
		return failure{CodeTaskNotFound, commands.ErrTaskNotFound.Error(), noDetails{}}, true
	case errors.Is(err, commands.ErrProjectNotFound):
		return failure{CodeProjectNotFound, commands.ErrProjectNotFound.Error(), noDetails{}}, true
	case errors.Is(err, commands.ErrSessionNotFound):
		return failure{CodeSessionNotFound, commands.ErrSessionNotFound.Error(), noDetails{}}, true

	case errors.As(err, &transition):
		return failure{CodeInvalidTransition, transition.Error(), transitionDetails{transition.From, transition.To, nonNil(transition.Allowed)}}, true
	case errors.Is(err, commands.ErrInvalidTransition):
		return failure{CodeInvalidTransition, commands.ErrInvalidTransition.Error(), noDetails{}}, true

	case errors.As(err, &closed):
		return failure{CodeTaskClosed, closed.Error(), closedDetails{closed.TaskID, closed.Status}}, true
	case errors.Is(err, commands.ErrTaskClosed):
		return failure{CodeTaskClosed, commands.ErrTaskClosed.Error(), noDetails{}}, true

	case errors.As(err, &writeback):
		missing := writeback.Missing
		if len(missing) == 0 {
			missing = []string{"thought_record"}
		}
		return failure{CodeWritebackRequired, writeback.Error(), writebackDetails{writeback.TaskID, missing}}, true
	case errors.Is(err, commands.ErrWritebackRequired):
		return failure{CodeWritebackRequired, commands.ErrWritebackRequired.Error(), noDetails{}}, true

	case errors.As(err, &cycle):
		return failure{CodeCircularDependency, cycle.Error(), cycleDetails{cycle.TaskID, cycle.ParentID}}, true
	case errors.Is(err, commands.ErrCircularDependency):
		return failure{CodeCircularDependency, commands.ErrCircularDependency.Error(), noDetails{}}, true

	case errors.As(err, &finalized):
		return failure{CodeAlreadyFinalized, finalized.Error(), sessionDetails{finalized.SessionID}}, true
	case errors.Is(err, commands.ErrAlreadyFinalized):
		return failure{CodeAlreadyFinalized, commands.ErrAlreadyFinalized.Error(), noDetails{}}, true

	case errors.Is(err, commands.ErrReadOnlyCaller):
		return failure{CodeReadOnly, commands.ErrReadOnlyCaller.Error(), noDetails{}}, true
	case errors.Is(err, commands.ErrReadOnly):
		return failure{CodeReadOnly, commands.ErrReadOnly.Error(), noDetails{}}, true

	case errors.As(err, &forbidden):
		return failure{CodeForbidden, forbidden.Error(), forbiddenDetails{forbidden.tool}}, true
	case errors.As(err, &revoked):
		return failure{CodeForbidden, revoked.Error(), forbiddenDetails{revoked.Tool}}, true

	case errors.As(err, &duplicate):
		return failure{CodeDuplicate, duplicate.Error(), duplicateDetails{duplicate.ExistingID, duplicate.Similarity}}, true
	case errors.Is(err, commands.ErrDuplicate):
		return failure{CodeDuplicate, commands.ErrDuplicate.Error(), noDetails{}}, true

	case errors.As(err, &storage):
		reason := storage.Reason
		if reason == "" {
			reason = defaultStorageReason
		}
		if storage.Unknown {
			return failure{CodeStorage, unknownMessage, storageDetails{reason}}, true
		}
		return failure{CodeStorage, storageMessage, storageDetails{reason}}, true
	case errors.Is(err, commands.ErrStorage):
		return failure{CodeStorage, storageMessage, storageDetails{defaultStorageReason}}, true
	case errors.Is(err, commands.ErrInternal): // its cause is logged already
		return failure{CodeInternal, internalMessage, noDetails{}}, true
	}
	return failure{CodeInternal, internalMessage, noDetails{}}, false
}

// invalidMessage names the first issue and counts the rest.
func invalidMessage(list []commands.Issue) string {
	if len(list) == 0 {
		return commands.ErrInvalidInput.Error()
	}
	msg := commands.ErrInvalidInput.Error() + ": "
	if list[0].Path != "" {
		msg += list[0].Path + ": "
	}
	msg += list[0].Message
	if len(list) > 1 {
		msg += " (and " + domain.Plural(len(list)-1, "more issue") + ")"
	}
	return msg
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

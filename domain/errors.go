package domain

import (
	"errors"
	"fmt"
)

// ErrInvalidInput is what every validation failure is: errors.Is(err,
// ErrInvalidInput) holds for each *InvalidInputError.
var ErrInvalidInput = errors.New("invalid input")

// Issue is one failed rule of an input: a path into the arguments ("title",
// "labels[3]", "metadata.k"; "" for the whole object) and a human message.
type Issue struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// InvalidInputError lists every rule the input broke, in the order found.
type InvalidInputError struct{ Issues []Issue }

func (e *InvalidInputError) Error() string {
	if len(e.Issues) == 0 {
		return ErrInvalidInput.Error()
	}
	return fmt.Sprintf("invalid input: %s: %s", e.Issues[0].Path, e.Issues[0].Message)
}

// Is makes errors.Is(err, ErrInvalidInput) hold.
func (e *InvalidInputError) Is(target error) bool { return target == ErrInvalidInput }

// Invalid returns an *InvalidInputError with one issue.
func Invalid(path, format string, args ...any) error {
	return &InvalidInputError{Issues: []Issue{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// MaxQuoted is how many characters of a name or value the client sent an
// error message or an issue's path quotes: a longer one is cut there and
// marked with "…" (Clip), so that what a client sent is never echoed back
// whole, however long; the first characters still say which it was.
const MaxQuoted = 64

// Clip is s as an error quotes it: s itself if it has at most MaxQuoted
// characters, else its first MaxQuoted and "…".
func Clip(s string) string { return ClipAt(s, MaxQuoted) }

// ClipAt is s cut after n characters (runes), marked with "…".
func ClipAt(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i] + "…"
		}
		n--
	}
	return s
}

// MaxIssues caps how many issues one rejection lists; a final issue says how
// many more there were.
const MaxIssues = 50

// Issues collects issues, dropping exact repeats and stopping at MaxIssues.
// The zero value is ready to use.
type Issues struct {
	list    []Issue
	dropped int
}

// Add records one issue.
func (is *Issues) Add(path, msg string) {
	for _, x := range is.list {
		if x.Path == path && x.Message == msg {
			return
		}
	}
	if len(is.list) >= MaxIssues {
		is.dropped++
		return
	}
	is.list = append(is.list, Issue{Path: path, Message: msg})
}

// Err returns nil if no issue was added, else an *InvalidInputError.
func (is *Issues) Err() error {
	if len(is.list) == 0 {
		return nil
	}
	list := is.list
	if is.dropped > 0 {
		list = append(list, Issue{Path: "", Message: fmt.Sprintf("%d more issues not shown", is.dropped)})
	}
	return &InvalidInputError{Issues: list}
}

package audit

import "fmt"

// An OptionError is a request its options rule out: a value out of range
// (a seq or a tree size beyond the ledger's head among them), or two
// options that exclude each other. Options are named as their fields are,
// in lower case, which are also the names of logbook's flags. It is the
// caller's mistake, never the ledger's: no *Problem is ever one.
type OptionError struct {
	Option  string // the option at fault
	With    string // the option it excludes, when that is the fault
	Problem string // otherwise, what is wrong with its value
}

func (e *OptionError) Error() string { return e.Format("") }

// Format is the error with each option's name prefixed: Format("--")
// speaks of command-line flags.
func (e *OptionError) Format(prefix string) string {
	if e.With != "" {
		return fmt.Sprintf("%s%s and %s%s exclude each other", prefix, e.Option, prefix, e.With)
	}
	return prefix + e.Option + " " + e.Problem
}

// BadOption is an *OptionError about option: what is wrong with it, formatted.
func BadOption(option, format string, args ...any) *OptionError {
	return &OptionError{Option: option, Problem: fmt.Sprintf(format, args...)}
}

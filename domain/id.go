package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// Identifiers: a prefix and a number from 1, zero-padded to at least 4 digits.
const (
	TaskPrefix     = "T-"
	ThoughtPrefix  = "Θ-"
	SessionPrefix  = "A-"
	FindingPrefix  = "F-"
	LearningPrefix = "L-"
	MemoryPrefix   = "M-" // one memory version
)

// MaxIDLength bounds an id argument: far above T-0001's form, far below
// anything that could weigh on the ledger. A well-formed id that names
// nothing is not found; an over-long one is invalid input.
const MaxIDLength = 32

// FormatID renders prefix and n as "T-0001".
func FormatID(prefix string, n uint64) string { return fmt.Sprintf("%s%04d", prefix, n) }

// ParseID returns the number of an id with the prefix, ok false otherwise.
func ParseID(prefix, id string) (uint64, bool) {
	rest, found := strings.CutPrefix(id, prefix)
	if !found || len(rest) < 4 || rest[0] == '+' || rest[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	if err != nil || n == 0 || (len(rest) > 4 && rest[0] == '0') {
		return 0, false
	}
	return n, true
}

func idOf(prefix, doc string) Rule {
	r := str(doc).length(0, MaxIDLength)
	r.IDOf = prefix
	return r
}

func taskID(doc string) Rule    { return idOf(TaskPrefix, doc) }
func sessionID(doc string) Rule { return idOf(SessionPrefix, doc) }

package domain

import (
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

// FormatID renders prefix and n as "T-0001": n in decimal, at least four
// digits (fmt's "%s%04d", in one allocation rather than three: every call
// that records something formats an id or two).
func FormatID(prefix string, n uint64) string {
	var b [32]byte
	return string(AppendID(b[:0], prefix, n))
}

// AppendID appends FormatID(prefix, n) to b.
func AppendID(b []byte, prefix string, n uint64) []byte {
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], n, 10)
	b = append(b, prefix...)
	for range 4 - min(4, len(d)) {
		b = append(b, '0')
	}
	return append(b, d...)
}

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

package domain

import (
	"errors"
	"strings"
	"time"
)

// ParseDateTime parses an RFC 3339 date-time, the JSON Schema format
// "date-time" the schemas publish: "T" and "Z" in either case (RFC 3339
// §5.6), fractional seconds after a period only. Go's time.RFC3339Nano
// layout alone refuses "t" and "z" and takes a comma before the fraction,
// which RFC 3339 does not allow.
func ParseDateTime(s string) (time.Time, error) {
	if strings.Contains(s, ",") {
		return time.Time{}, errors.New("not an RFC 3339 date-time: a comma before the fractional seconds")
	}
	// Only "t" and "z" are letters of the grammar, so upper-casing the ASCII
	// letters of a valid date-time changes nothing else.
	b := []byte(s)
	for i, c := range b {
		if c == 't' || c == 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return time.Parse(time.RFC3339Nano, string(b))
}

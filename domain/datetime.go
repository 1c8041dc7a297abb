package domain

import (
	"errors"
	"regexp"
	"strings"
	"time"
)

// dateTimeGrammar is RFC 3339 §5.6's date-time: "T" and "Z" in either case,
// fractional seconds after a period only, an offset of hours 00–23 and
// minutes 00–59 (Go's time.RFC3339Nano layout alone refuses "t" and "z",
// takes a comma before the fraction and offsets up to +24:60). The ranges
// of the other fields, the month's days and the leap second are checked by
// ParseDateTime.
var dateTimeGrammar = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:(\d{2})(?:\.\d+)?(?:[Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$`)

// ParseDateTime parses an RFC 3339 date-time, the JSON Schema format
// "date-time" the schemas publish (dateTimeGrammar). A leap second (second
// 60, RFC 3339 §5.7) is allowed where it can occur, at 23:59 UTC, as JSON
// Schema validators allow it; Go's time has no leap seconds, so it is read
// as the last nanosecond before the next day: earlier than every instant
// after it and later than every one before, which is all a filter asks.
func ParseDateTime(s string) (time.Time, error) {
	m := dateTimeGrammar.FindStringSubmatchIndex(s)
	if m == nil {
		return time.Time{}, errors.New("not an RFC 3339 date-time")
	}
	// Only "t" and "z" are letters of the grammar, so upper-casing the ASCII
	// letters of a valid date-time changes nothing else.
	b := []byte(strings.ToUpper(s))
	leap := s[m[2]:m[3]] == "60"
	if leap {
		copy(b[m[2]:m[3]], "59")
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil || !leap {
		return t, err
	}
	if u := t.UTC(); u.Hour() != 23 || u.Minute() != 59 {
		return time.Time{}, errors.New("not an RFC 3339 date-time: a leap second is 23:59:60 UTC")
	}
	return t.Truncate(time.Second).Add(time.Second - time.Nanosecond), nil
}

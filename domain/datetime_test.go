package domain

import (
	"testing"
	"time"
)

// TestParseDateTime holds ParseDateTime to RFC 3339 §5.6 as JSON Schema's
// "date-time" reads it (the cases of the JSON Schema test suite's
// format/date-time and ajv-formats among them): an offset's hour is 00–23
// and its minute 00–59, a leap second is 23:59:60 UTC and nothing else.
func TestParseDateTime(t *testing.T) {
	valid := map[string]time.Time{
		"2026-04-08T22:15:30Z":            time.Date(2026, 4, 8, 22, 15, 30, 0, time.UTC),
		"2026-04-08t22:15:30.5z":          time.Date(2026, 4, 8, 22, 15, 30, 5e8, time.UTC),
		"2026-04-08T22:15:30+23:59":       time.Date(2026, 4, 7, 22, 16, 30, 0, time.UTC),
		"2026-04-08T22:15:30-00:00":       time.Date(2026, 4, 8, 22, 15, 30, 0, time.UTC),
		"2026-04-08T22:15:30.1234567891Z": time.Date(2026, 4, 8, 22, 15, 30, 123456789, time.UTC),
		// Leap seconds: the last nanosecond of the day (UTC).
		"1998-12-31T23:59:60Z":          time.Date(1998, 12, 31, 23, 59, 59, 999999999, time.UTC),
		"1998-12-31T23:59:60.123Z":      time.Date(1998, 12, 31, 23, 59, 59, 999999999, time.UTC),
		"1998-12-31T15:59:60.123-08:00": time.Date(1998, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	for s, want := range valid {
		got, err := ParseDateTime(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseDateTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{
		"2026-04-08T22:15:30+24:00", // offset hour beyond 23 (Go's layout takes it)
		"2026-04-08T22:15:30+23:60", // offset minute beyond 59 (likewise)
		"2026-04-08T22:15:30-99:00",
		"2026-04-08T22:15:30+0100",
		"2026-04-08T22:15:30,5Z",
		"2026-04-08T22:15:30.Z",
		"2026-04-08 22:15:30Z",
		"2026-04-08T22:15:30",
		"2026-02-30T00:00:00Z",
		"2026-04-08T24:00:00Z",
		"1998-12-31T23:59:61Z",
		"1998-12-31T23:58:60Z",      // leap second on the wrong minute
		"1998-12-31T22:59:60Z",      // on the wrong hour
		"1998-12-31T23:59:60+01:00", // 22:59:60 UTC
		"+2026-04-08T22:15:30Z",
		"2026-04-08T22:15:30Z\n",
		"２026-04-08T22:15:30Z",
	} {
		if got, err := ParseDateTime(s); err == nil {
			t.Errorf("ParseDateTime(%q) = %v, want an error", s, got)
		}
	}
}

package audit_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/logbook-dev/logbook/audit"
)

// TestSafeJSON: C1 and bidirectional controls leave as \u escapes, the
// value read back is the same, and other text is untouched.
func TestSafeJSON(t *testing.T) {
	for _, s := range []string{
		"plain", "café ✓ 日本語 🎉", "\u009b2J\u0085", "approved: \u202eon\u202c amount 100",
		"\u061c\u200e\u200f\u2066x\u2069", "\x1b[2J\x00", "", "é\u009b",
	} {
		in, err := json.Marshal(map[string]string{"k": s})
		if err != nil {
			t.Fatal(err)
		}
		out := audit.SafeJSON(in)
		if strings.ContainsFunc(string(out), func(r rune) bool {
			return (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r) || r < 0x20
		}) {
			t.Errorf("%q: %q still holds a control", s, out)
		}
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil || back["k"] != s {
			t.Errorf("%q: %q reads back as %q (%v)", s, out, back["k"], err)
		}
		if !strings.ContainsFunc(s, func(r rune) bool { return (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r) }) && string(out) != string(in) {
			t.Errorf("%q: changed to %q", in, out)
		}
	}
}

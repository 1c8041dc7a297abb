package audit_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

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

// TestSafeJSONEveryRune: every character, in runs of 4,096 after "é", is
// escaped exactly when it is a C1 or bidirectional control (each escape
// six bytes, nothing else changed), and reads back as itself: SafeJSON
// looks only at the bytes that may begin one, so a character its table
// missed would pass as it is.
func TestSafeJSONEveryRune(t *testing.T) {
	control := func(r rune) bool { return (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r) }
	for lo := rune(0); lo <= unicode.MaxRune; lo += 4096 {
		var b strings.Builder
		b.WriteString("é")
		grow := 0
		for r := lo; r < lo+4096; r++ {
			if r >= 0xd800 && r <= 0xdfff {
				continue // no UTF-8 encoding
			}
			b.WriteRune(r)
			if control(r) {
				grow += 6 - utf8.RuneLen(r)
			}
		}
		s := b.String()
		in, _ := json.Marshal(s)
		out := audit.SafeJSON(in)
		if i := strings.IndexFunc(string(out), control); i >= 0 {
			t.Fatalf("U+%04X passed as it is", []rune(string(out[i:]))[0])
		}
		if len(out) != len(in)+grow {
			t.Fatalf("U+%04X to U+%04X: %d bytes became %d, want %d", lo, lo+4095, len(in), len(out), len(in)+grow)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != s {
			t.Fatalf("U+%04X to U+%04X do not read back as themselves (%v)", lo, lo+4095, err)
		}
	}
}

// TestNoBidiEveryRune: every character, alone and between others, is a
// space exactly when it is a bidirectional control; the rest of the text
// is as it was.
func TestNoBidiEveryRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // no UTF-8 encoding
		}
		in := "é" + string(r) + "x" + string(r)
		want := in
		if unicode.Is(unicode.Bidi_Control, r) {
			want = "é x "
		}
		if got := string(audit.NoBidi([]byte(in))); got != want {
			t.Fatalf("U+%04X: %q became %q, want %q", r, in, got, want)
		}
	}
	if got := string(audit.NoBidi([]byte("\xff\u202e\xc2"))); got != "\xff \xc2" {
		t.Errorf("invalid UTF-8 around an override: %q", got)
	}
}

// BenchmarkNoBidi: the console passes every page through NoBidi.
func BenchmarkNoBidi(b *testing.B) {
	page := []byte(strings.Repeat(`<tr><td class="id"><a href="/tasks/T-0001">T-0001</a></td><td>Θ-0001 made the thing work — café</td></tr>`+"\n", 5000))
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		audit.NoBidi(page)
	}
}

// BenchmarkSafeJSON: replay passes every event's line through SafeJSON;
// a thought's line holds its id's Θ, and most lines nothing to escape.
func BenchmarkSafeJSON(b *testing.B) {
	line := []byte(`{"seq":5,"time":"2026-11-29T13:15:00.020Z","type":"thought.recorded","payload_version":3,"actor":"aider","subjects":["Θ-0001","T-0001"],` +
		`"prev":"50d14275d94c22caadbe07646e8028edd1949bd6f1bb27a166c907bb1f136393","hash":"e79c1220835c4d1175b24b98a7d2c55a3b2fbc14f5f43a30263d73b2b04ca0e8",` +
		`"payload":{"content":"Looked at the parser — the loop ends one byte early → fixed it; café, 日本語.","metadata":"{}","task_id":"T-0001","thought_id":"Θ-0001","type":"analysis"}}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		audit.SafeJSON(line)
	}
}

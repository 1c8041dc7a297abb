package views

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/projections"
)

// hostile is text no view may pass to a terminal as it is: C0 and C1
// controls (erase the screen, an OSC 8 hyperlink, OSC 52 writing the
// clipboard, a C1 CSI), NUL, and bidirectional controls.
const hostile = "x\x1b[2J\x1b]8;;http://evil\x07link\x1b]8;;\x07\x1b]52;c;ZXZpbA==\x07\u009b31m\x00\r\t\u202e\u2066y"

// fill sets every string of v, at any depth (fields, slices, embedded
// structs), to hostile, and gives each slice of strings or structs two
// elements: as a ledger written before its text was checked, or forged,
// could hold.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem())
	case reflect.String:
		v.SetString(hostile)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i))
		}
	}
}

// TestViewsNeverPassControls: whatever text a ledger holds in whatever
// field, the terminal views print no control character but the newlines
// ending their lines, and no bidirectional control, with colour off and on
// (whose escape codes are the views' own: only SGR, "\x1b[…m").
func TestViewsNeverPassControls(t *testing.T) {
	var task Task
	var ses Session
	var sum SessionSummary
	var tok projections.Token
	var ptask projections.Task
	var failed, passed audit.Report // what verify found in a forged ledger
	for _, v := range []any{&task, &ses, &sum, &tok, &ptask, &failed, &passed} {
		fill(reflect.ValueOf(v))
	}
	passed.OK = true
	passed.Projections.Checked = false // its note is printed
	for _, color := range []bool{false, true} {
		for name, print := range map[string]func(s *Screen) error{
			"Task":        func(s *Screen) error { return s.Task(&task) },
			"TaskList":    func(s *Screen) error { return s.TaskList([]projections.Task{ptask, ptask}) },
			"Session":     func(s *Screen) error { return s.Session(&ses, hostile) },
			"SessionList": func(s *Screen) error { return s.SessionList([]SessionSummary{sum, sum}) },
			"TokenList":   func(s *Screen) error { return TokenList(s.W, []projections.Token{tok, tok}) },
			"VerifyFAIL":  func(s *Screen) error { VerifyReport(s.W, &failed); return nil },
			"VerifyOK":    func(s *Screen) error { VerifyReport(s.W, &passed); return nil },
		} {
			var b bytes.Buffer
			if err := print(&Screen{W: &b, Width: 80, Color: color}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out := b.String()
			if color { // the views' own colour codes
				for _, sgr := range colourCodes() {
					out = strings.ReplaceAll(out, sgr, "")
				}
			}
			if i := strings.IndexFunc(out, func(r rune) bool {
				return (unicode.IsControl(r) && r != '\n') || unicode.Is(unicode.Bidi_Control, r)
			}); i >= 0 {
				t.Errorf("%s (colour %v) prints a control: %q", name, color, out[max(0, i-30):min(len(out), i+30)])
			}
		}
	}
}

// colourCodes are the escape codes paint writes.
func colourCodes() []string {
	codes := []string{"\x1b[0m"}
	for _, sgr := range colours {
		codes = append(codes, "\x1b["+sgr+"m")
	}
	return codes
}

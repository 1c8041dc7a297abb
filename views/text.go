package views

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"
	eaw "golang.org/x/text/width"
)

// Screen is where a human view is printed: its width, and whether colour
// may be used (a terminal, and NO_COLOR unset: https://no-color.org).
type Screen struct {
	W     io.Writer
	Width int
	Color bool
}

// DefaultWidth is the width of a view printed to a pipe or a file, so its
// lines stay the same wherever it is redirected.
const DefaultWidth = 100

// NewScreen is w as a screen: a terminal's width and colour (unless
// noColor), else DefaultWidth and no colour.
func NewScreen(w io.Writer, noColor bool) *Screen {
	s := &Screen{W: w, Width: DefaultWidth}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			s.Width = w
		}
		s.Color = !noColor
	}
	return s
}

// colours are the SGR codes a task status (in the contract's order) or a
// session state is shown in on a terminal.
var colours = map[string]string{
	"backlog": "2", "todo": "36", "in_progress": "33", "blocked": "31",
	"review": "35", "done": "32", "cancelled": "2;9", "open": "33", "finalized": "32",
}

// painted is text, cleaned, in the escape codes of its colour: printf
// prints it as it is.
type painted string

// paint wraps text (cleaned) in the colour of status (a task status, or a
// session's open/finalized) when colour is on.
func (s *Screen) paint(status, text string) painted {
	text = clean(text)
	sgr := colours[status]
	if !s.Color || sgr == "" {
		return painted(text)
	}
	return painted("\x1b[" + sgr + "m" + text + "\x1b[0m")
}

// printf prints format with args, each string, error and Stringer among
// them cleaned: a view prints the ledger's text, any of which (an id, a
// status, a time, as a ledger written before its text was checked or forged
// may hold them; a problem verify found in it) must never drive the
// reader's terminal. The only escape codes a view writes are its colours
// (painted).
func (s *Screen) printf(format string, args ...any) error {
	for i, a := range args {
		switch a := a.(type) {
		case string:
			args[i] = clean(a)
		case error, fmt.Stringer:
			// As fmt prints them ("<nil>" for a nil pointer whose
			// method would panic), then cleaned.
			args[i] = clean(fmt.Sprint(a))
		}
	}
	_, err := fmt.Fprintf(s.W, format, args...)
	return err
}

// Table is rows under a header, columns padded to their widest cell.
// The column flex (the last, usually a title) is cut with "…" so that a
// line fits the screen; colour, if any, is applied to column painted by the
// cell's own text, after padding, so escape codes never count as width.
type Table struct {
	Header  []string
	Rows    [][]string
	Flex    int // index of the column that is cut to fit; it must be the last when Wrap > 1
	Wrap    int // > 1: the flex column wraps onto up to this many lines before it is cut
	Painted int // index of the column painted by its value; -1: none
	Right   map[int]bool
	// Names are the columns of names (an assignee, an actor), up to 128
	// characters each: they are cut at NameWidth columns, else one long
	// name widened every line of the table past the screen, the flex column
	// squeezed to its 10.
	Names []int
}

// NameWidth is the widest a Names column is printed.
const NameWidth = 24

// Print prints t, columns padded to their widest cell.
func (s *Screen) Print(t *Table) error {
	widths := make([]int, len(t.Header))
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		for i, c := range row {
			widths[i] = max(widths[i], width(clean(c)))
		}
	}
	for _, i := range t.Names {
		widths[i] = min(widths[i], NameWidth)
	}
	used := 0
	for i, w := range widths {
		if i != t.Flex {
			used += w + 2
		}
	}
	widths[t.Flex] = min(widths[t.Flex], max(s.Width-used, 10))
	var b strings.Builder
	line := func(row []string, header bool) {
		var more []string // the flex cell's wrapped lines after its first
		for i, c := range row {
			c = clean(c)
			if i == t.Flex && t.Wrap > 1 {
				lines := wrap(c, widths[i], t.Wrap)
				c, more = lines[0], lines[1:]
			}
			c = cut(c, widths[i])
			pad := strings.Repeat(" ", widths[i]-width(c))
			if t.Right[i] {
				c = pad + c
			} else if i < len(row)-1 {
				c += pad
			}
			if !header && i == t.Painted {
				c = string(s.paint(row[i], c))
			}
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString("  ")
			}
		}
		b.WriteString("\n")
		for _, m := range more {
			b.WriteString(strings.Repeat(" ", used) + m + "\n")
		}
	}
	line(t.Header, true)
	for _, row := range t.Rows {
		line(row, false)
	}
	_, err := io.WriteString(s.W, b.String())
	return err
}

// wrap splits s at spaces into lines at most n columns wide, at most max
// of them; the last is cut with "…" when s does not fit.
func wrap(s string, n, max int) []string {
	var lines []string
	if width(s) > n {
		s = strings.TrimLeft(s, " ") // wrapped, it would begin with a blank line
	}
	for len(lines) < max-1 && width(s) > n {
		at := fits(s, n) // < len(s): s is wider than n
		if s[at] != ' ' {
			if sp := strings.LastIndex(s[:at], " "); sp > 0 {
				at = sp
			} else if at == 0 {
				_, at = utf8.DecodeRuneInString(s) // a character wider than n
			}
		}
		lines = append(lines, strings.TrimRight(s[:at], " "))
		s = strings.TrimLeft(s[at:], " ")
	}
	return append(lines, cut(s, n))
}

// cut shortens s to at most n columns, ending it with "…" when it was cut.
func cut(s string, n int) string {
	if width(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return strings.TrimRight(s[:fits(s, n-1)], " ") + "…"
}

// fits is the length in bytes of the longest start of s at most n columns
// wide, with the zero-width characters that follow it.
func fits(s string, n int) int {
	w := 0
	for i, r := range s {
		if w += runeWidth(r); w > n {
			return i
		}
	}
	return len(s)
}

// width is how many columns s takes on a terminal (runeWidth).
func width(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

// runeWidth is how many columns a terminal gives r: none to a combining
// mark or a format character (a zero-width joiner or space, a variation
// selector), two to a wide East Asian character (Chinese, Japanese,
// Korean) or an emoji, one to the rest. (A sequence of emoji joined into
// one picture is counted as its parts: terminals differ on it.)
func runeWidth(r rune) int {
	if unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) {
		return 0
	}
	switch eaw.LookupRune(r).Kind() {
	case eaw.EastAsianWide, eaw.EastAsianFullwidth:
		return 2
	}
	return 1
}

// clean replaces control characters (newlines, tabs, escape sequences an
// agent may have put in a title) and bidirectional controls (an override
// that shows "txt.exe" as "exe.txt", or reorders a row's columns) with
// spaces: a view is one line per row, and a ledger's text must never drive
// the reader's terminal.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
}

// firstLine is the first non-blank line of s, trimmed, with "…" appended
// when more lines follow.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	first, rest, more := strings.Cut(s, "\n")
	first = strings.TrimSpace(first)
	if more && strings.TrimSpace(rest) != "" {
		first += " …"
	}
	return clean(first)
}

// shortTime is an event time as a view shows it, to the second:
// "2026-01-02T15:04:05.000Z" becomes "2026-01-02 15:04:05".
func shortTime(t string) string {
	if len(t) < 19 {
		return t
	}
	return strings.Replace(t[:19], "T", " ", 1)
}

// shortHash is the first 12 hex digits of a hash: enough to tell events
// apart by eye and to find one in replay's output.
func shortHash(h string) string { return h[:min(len(h), 12)] }

// orDash is s, or "-" for an empty value in a table cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// field prints one "label: value" line of a detail view (printf).
func (s *Screen) field(label, format string, args ...any) {
	s.printf("  %-10s "+format+"\n", append([]any{label + ":"}, args...)...)
}

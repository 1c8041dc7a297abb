package views

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/projections"
)

// TestTableColour: on a colour screen only the status cell is painted, and
// the padding is outside the escape codes, so the columns still line up.
func TestTableColour(t *testing.T) {
	var b bytes.Buffer
	s := &Screen{W: &b, Width: 40, Color: true}
	err := s.Print(&Table{Header: []string{"ID", "STATUS", "TITLE"}, Flex: 2, Painted: 1, Rows: [][]string{
		{"T-0001", "done", "a title long enough to be cut at forty columns"},
		{"T-0002", "in_progress", "short"},
		{"T-0003", "unheard_of", "no colour for an unknown status"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "ID      STATUS       TITLE\n" +
		"T-0001  \x1b[32mdone       \x1b[0m  a title long enoug…\n" +
		"T-0002  \x1b[33min_progress\x1b[0m  short\n" +
		"T-0003  unheard_of   no colour for an u…\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	s.Color = false
	s.Print(&Table{Header: []string{"STATUS"}, Painted: 0, Rows: [][]string{{"done"}}})
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("colour off, yet escape codes: %q", b.String())
	}
}

// TestNewScreenPipe: a view written anywhere but a terminal is 100 columns
// and never coloured, whatever NO_COLOR says.
func TestNewScreenPipe(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []io.Writer{f, &bytes.Buffer{}} {
		s := NewScreen(w, false)
		if s.Width != DefaultWidth || s.Color {
			t.Errorf("%T: width %d colour %v, want %d and no colour", w, s.Width, s.Color, DefaultWidth)
		}
	}
}

// TestCleanText: control characters (which the domain refuses in new titles,
// but a ledger written before it may hold) never reach the terminal; a
// thought's first line says when more follow.
func TestCleanText(t *testing.T) {
	if got := clean("a\u202eb\u2066c\u200fd"); got != "a b c d" {
		t.Errorf("clean kept a bidirectional control: %q", got)
	}
	if got := clean("a\x1b[31mb\tc\nd\u009be"); got != "a [31mb c d e" {
		t.Errorf("clean: got %q", got)
	}
	if got := firstLine("\n  first \x07line \n\nsecond"); got != "first  line …" {
		t.Errorf("firstLine: got %q", got)
	}
	if got := firstLine("only\n  \n"); got != "only" {
		t.Errorf("firstLine of one line: got %q", got)
	}
}

// TestVerifyReportCounts: verify's ok line counts in words that agree with
// the number ("1 Merkle node", "2 events"; it said "1 Merkle nodes").
func TestVerifyReportCounts(t *testing.T) {
	for _, c := range []struct {
		size, nodes uint64
		want        string
	}{
		{1, 0, "ok: 1 event, head "},
		{20, 1, ", 1 Merkle node ("},
		{32, 3, "ok: 32 events, head "},
		{32, 3, ", 3 Merkle nodes ("},
	} {
		var b bytes.Buffer
		VerifyReport(&b, &audit.Report{OK: true, Size: c.size, Nodes: c.nodes})
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%d events, %d nodes: %q, want it to hold %q", c.size, c.nodes, b.String(), c.want)
		}
	}
}

// TestTableWidth: a table's columns are measured in the columns a terminal
// gives each character, not in characters: none for a combining mark or a
// zero-width joiner, two for a Chinese character or an emoji. Before, "éé"
// written with combining accents was four wide and shifted the columns,
// and a Chinese title cut at 20 characters took 40 columns, past the
// screen's width.
func TestTableWidth(t *testing.T) {
	var b bytes.Buffer
	s := &Screen{W: &b, Width: 30}
	err := s.Print(&Table{Header: []string{"ID", "WHO", "TITLE"}, Flex: 2, Painted: -1, Rows: [][]string{
		{"T-1", "e\u0301e\u0301", "数据库连接失败数据库连接失败数据库连接失败"},
		{"T-2", "👍", "ok"},
		{"T-3", "bob", "a 数据库连接失败数据库连接失败"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "ID   WHO  TITLE\n" +
		"T-1  e\u0301e\u0301   数据库连接失败数据…\n" +
		"T-2  👍   ok\n" +
		"T-3  bob  a 数据库连接失败数…\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	for _, c := range []struct {
		s     string
		n     int
		lines []string
	}{
		{"数据库 连接失败数据库", 8, []string{"数据库", "连接失败", "数据库"}},
		{"数据库连接失败数据库", 8, []string{"数据库连", "接失败数", "据库"}},
		{"数据库连接失败数据库连接失败", 8, []string{"数据库连", "接失败数", "据库连…"}},
		{"   abc def", 5, []string{"abc", "def"}}, // no blank first line
	} {
		if got := wrap(c.s, c.n, 3); !slices.Equal(got, c.lines) {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.s, c.n, got, c.lines)
		}
	}
}

// TestTableNamesCut: a name column (an assignee, an actor: up to 128
// characters) is cut at NameWidth, so a line still fits the screen and the
// title keeps its room (attack5: one assignee of 128 characters, or of 100
// Chinese ones, made every line of logbook tasks 170 to 250 columns wide,
// every title cut to 10).
func TestTableNamesCut(t *testing.T) {
	for _, name := range []string{strings.Repeat("a", 128), strings.Repeat("宁", 100)} {
		var b bytes.Buffer
		s := &Screen{W: &b, Width: 100}
		err := s.TaskList([]projections.Task{
			{TaskState: projections.TaskState{ID: "T-0001", Status: "todo", Priority: "high", Assignee: name, Title: strings.Repeat("title ", 10)}},
			{TaskState: projections.TaskState{ID: "T-0002", Status: "todo", Priority: "high", Assignee: "bob", Title: "short"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if width(line) > 100 {
				t.Errorf("a line %d columns wide on a screen of 100:\n%s", width(line), line)
			}
		}
		if !strings.Contains(b.String(), strings.Repeat("title ", 5)) || !strings.Contains(b.String(), "…") {
			t.Errorf("the title lost its room, or the name is not cut:\n%s", b.String())
		}
	}
}

// TestTokenListWidth: token list's columns are measured as a table's are,
// in terminal columns: an agent's name may be any visible text (a Chinese
// name, an accent written as a combining mark), and measured in
// characters by text/tabwriter it shifted every column after it.
func TestTokenListWidth(t *testing.T) {
	var b bytes.Buffer
	tok := func(agent string, revoked uint64) projections.Token {
		return projections.Token{SHA256: "aa", Agent: agent, Issuer: "me", IssuedSeq: 1, RevokedSeq: revoked}
	}
	if err := TokenList(&b, []projections.Token{tok("代理人", 0), tok("e\u0301e\u0301", 0), tok("bob", 9)}); err != nil {
		t.Fatal(err)
	}
	want := "SHA256  AGENT   SCOPE      ISSUER  ISSUED  STATE\n" +
		"aa      代理人  all tools  me      1       valid\n" +
		"aa      e\u0301e\u0301      all tools  me      1       valid\n" +
		"aa      bob     all tools  me      1       revoked at 9\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

type nilStringer struct{ s string }

func (n *nilStringer) String() string { return n.s }

// TestPrintfAsFmt: printf cleans an error or a Stringer as fmt prints it:
// a nil pointer among them is "<nil>", as fmt says, where calling its
// method panicked (audit.Problem's Error reads its fields).
func TestPrintfAsFmt(t *testing.T) {
	var b bytes.Buffer
	s := &Screen{W: &b}
	var p *audit.Problem
	if err := s.printf("FAIL %s %v\n", error(p), fmt.Stringer((*nilStringer)(nil))); err != nil {
		t.Fatal(err)
	}
	if b.String() != "FAIL <nil> <nil>\n" {
		t.Errorf("got %q", b.String())
	}
}

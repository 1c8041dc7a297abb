package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// badCase is one invalid input generated from a rule: the arguments and the
// path the issue must be reported at.
type badCase struct {
	why  string
	args map[string]any
	path string
}

// TestRulesEnforcedByCommands generates, from the domain's rule set, an
// invalid input for every tool and every rule, and checks that the MCP edge
// refuses it and that commands.Service.Do, called directly (no edge
// validation), answers ERR_INVALID_INPUT with an issue at the same path and
// changes nothing: the ledger grows by exactly the call's tool.called event
// and the read models stay as they were.
func TestRulesEnforcedByCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	svc, err := commands.New(l, commands.Options{Agent: "rules-test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(svc, Options{})
	direct := func(tl *tool, args json.RawMessage) envelope {
		reply, err := svc.Do(context.Background(), commands.Call{Name: tl.name, Command: tl.cmd, Args: args, Encode: srv.Encode})
		if err != nil {
			t.Fatalf("%s: %v", tl.name, err)
		}
		var env envelope
		if err := json.Unmarshal(reply, &env); err != nil {
			t.Fatalf("%s: reply %s: %v", tl.name, reply, err)
		}
		return env
	}
	// Some state to leave unchanged (and the first call's skills.loaded).
	// The session is finalized: an open one would rightly collect the
	// tool.called events that name its task.
	for _, c := range []struct{ tool, args string }{
		{"task_create", `{"title":"a","project":"core"}`},
		{"thought_record", `{"task_id":"T-0001","type":"plan","content":"c"}`},
		{"audit_session_start", `{"task_id":"T-0001","auditor_id":"x"}`},
		{"merkle_finalize", `{"session_id":"A-0001"}`},
	} {
		if env := direct(srv.byName[c.tool], json.RawMessage(c.args)); !env.OK {
			t.Fatalf("%s %s: %+v", c.tool, c.args, env.Error)
		}
	}
	n := 0
	for _, tl := range srv.tools {
		for _, bc := range badCases(tl.cmd.Rules()) {
			n++
			t.Run(tl.name+"/"+bc.why, func(t *testing.T) {
				raw, err := json.Marshal(bc.args)
				if err != nil {
					t.Fatal(err)
				}
				if err := validate(tl, raw); !hasPath(err, bc.path) {
					t.Fatalf("the domain's rules do not refuse %s at %q: %v", raw, bc.path, err)
				}
				head, state := headSeq(t, l), readModels(t, l)
				env := direct(tl, raw)
				if env.OK || env.Error.Code != CodeInvalidInput {
					t.Fatalf("commands answered %s with %+v, want %s", raw, env, CodeInvalidInput)
				}
				var got []string
				for _, is := range env.Error.Details.Issues {
					got = append(got, is.Path)
				}
				if !slices.Contains(got, bc.path) {
					t.Errorf("commands: issues at %q, want one at %q (%s)", got, bc.path, raw)
				}
				if h := headSeq(t, l); h != head+1 {
					t.Errorf("the call appended %d events, want 1 (tool.called)", h-head)
				}
				if typ := eventType(t, l, head+1); typ != projections.TypeToolCalled {
					t.Errorf("event %d is %s, want %s", head+1, typ, projections.TypeToolCalled)
				}
				if readModels(t, l) != state {
					t.Errorf("a refused call changed the read models")
				}
			})
		}
	}
	if n < 100 {
		t.Errorf("only %d cases generated from the rule set", n)
	}
}

type envelope struct {
	OK    bool `json:"ok"`
	Error struct {
		Code    string `json:"code"`
		Details struct {
			Issues []domain.Issue `json:"issues"`
		} `json:"details"`
	} `json:"error"`
}

func hasPath(err error, path string) bool {
	var ie *commands.InvalidInputError
	if !errors.As(err, &ie) {
		return false
	}
	return slices.ContainsFunc(ie.Issues, func(is commands.Issue) bool { return is.Path == path })
}

func headSeq(t *testing.T, l *boltstore.Store) uint64 {
	t.Helper()
	var seq uint64
	if err := l.View(func(tx *boltstore.Tx) error { seq = tx.Head().Seq; return nil }); err != nil {
		t.Fatal(err)
	}
	return seq
}

func eventType(t *testing.T, l *boltstore.Store, seq uint64) string {
	t.Helper()
	var typ string
	if err := l.View(func(tx *boltstore.Tx) error {
		r, err := tx.Event(seq)
		typ = r.Type
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return typ
}

// readModels is the projections' fingerprint with the applied seq left out
// (zeroed in a transaction that is rolled back).
func readModels(t *testing.T, l *boltstore.Store) uint64 {
	t.Helper()
	var fp uint64
	errRollback := errors.New("roll back")
	err := l.Update(func(tx *boltstore.Tx) error {
		meta, err := tx.Space("meta")
		if err != nil {
			return err
		}
		if err := meta.Put([]byte("applied"), make([]byte, 8)); err != nil {
			return err
		}
		if fp, err = projections.Fingerprint(tx); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	return fp
}

// badCases generates the invalid inputs of command c: for each field, one
// per rule the field has, the other arguments valid; then a missing
// required field, an unknown field, and no field of AnyOf.
func badCases(c *domain.Command) []badCase {
	var cases []badCase
	base := func(except string) map[string]any {
		args := map[string]any{}
		for _, name := range c.Required {
			args[name] = validValue(c.Field(name), name)
		}
		if len(c.AnyOf) > 0 {
			for _, name := range c.AnyOf {
				if name != except {
					args[name] = validValue(c.Field(name), name)
					break
				}
			}
		}
		return args
	}
	for _, f := range c.Fields {
		for _, b := range badValues(&f.Rule, f.Name) {
			args := base(f.Name)
			args[f.Name] = b.val
			cases = append(cases, badCase{f.Name + ": " + b.why, args, b.path})
		}
	}
	for _, name := range c.Required {
		args := base("")
		delete(args, name)
		cases = append(cases, badCase{name + ": missing", args, name})
	}
	args := base("")
	args["no_such_field"] = 1
	cases = append(cases, badCase{"unknown field", args, "no_such_field"})
	if len(c.AnyOf) > 0 {
		args := base("")
		for _, name := range c.AnyOf {
			delete(args, name)
		}
		cases = append(cases, badCase{"none of " + strings.Join(c.AnyOf, ","), args, ""})
	}
	return cases
}

type badValue struct {
	why  string
	val  any
	path string
}

// badValues are values that break r, one per constraint it has, each with
// the path of its issue.
func badValues(r *domain.Rule, path string) []badValue {
	var out []badValue
	add := func(why string, v any) { out = append(out, badValue{why, v, path}) }
	if r.Kind == domain.String {
		add("not a string", json.Number("5"))
	} else {
		add("not "+string(r.Kind), "x")
	}
	if r.Enum != nil {
		add("not in enum", "urgent")
	}
	if r.MinLen > 0 {
		add("too short", strings.Repeat("a", r.MinLen-1))
	}
	if r.MaxLen > 0 {
		add("too long", strings.Repeat("a", r.MaxLen+1))
	}
	if re := r.Regexp(); re != nil {
		if v, ok := firstNot(re, "../../Etc Passwd", " \t ", "xyz"); ok {
			add("pattern", v)
		}
	}
	if r.DateTime {
		add("not a date-time", "yesterday")
	}
	if r.Kind == domain.Integer {
		add("fraction", json.Number("1.5"))
	}
	if r.Min != nil {
		add("below minimum", json.Number(strconv.FormatFloat(*r.Min-1, 'f', -1, 64)))
	}
	if r.Max != nil {
		add("above maximum", json.Number(strconv.FormatFloat(*r.Max+1, 'f', -1, 64)))
	}
	if r.MaxItems > 0 {
		items := make([]any, r.MaxItems+1)
		for i := range items {
			items[i] = validValue(r.Items, "item")
		}
		add("too many items", items)
	}
	if r.Items != nil {
		for _, b := range badValues(r.Items, path+"[0]") {
			out = append(out, badValue{"item " + b.why, []any{b.val}, b.path})
		}
	}
	if r.MaxBytes > 0 {
		add("too big", map[string]any{"k": strings.Repeat("a", r.MaxBytes)})
	}
	switch r.Text {
	case domain.Line:
		add("NUL", "a\x00b")
		add("newline", "a\nb")
		add("zero width space only", "\u200b")
		add("Unicode space only", "\u3000\u00a0")
	case domain.Prose:
		add("NUL", "a\x00b")
		add("zero width space only", "\u200b\ufeff")
	case domain.Notes:
		add("control character", "a\x01b")
	}
	return out
}

func firstNot(re *regexp.Regexp, candidates ...string) (string, bool) {
	for _, c := range candidates {
		if !re.MatchString(c) {
			return c, true
		}
	}
	return "", false
}

// validValue is a value r accepts; name says which kind of id a string is.
func validValue(r *domain.Rule, name string) any {
	switch r.Kind {
	case domain.String:
		switch {
		case r.Enum != nil:
			return r.Enum[0]
		case strings.HasSuffix(name, "task_id"), name == "parent_id":
			return "T-0001"
		case name == "session_id":
			return "A-0001"
		case r.DateTime:
			return "2026-01-02T03:04:05Z"
		}
		if re := r.Regexp(); re != nil {
			for _, c := range []string{"core", "abcdef0"} {
				if re.MatchString(c) {
					return c
				}
			}
			panic(fmt.Sprintf("no valid value for %s (%s)", name, r.Pattern))
		}
		return "x"
	case domain.Integer, domain.Number:
		if r.Min != nil {
			return json.Number(strconv.FormatFloat(*r.Min, 'f', -1, 64))
		}
		return json.Number("1")
	case domain.Boolean:
		return true
	case domain.Array:
		return []any{validValue(r.Items, name)}
	case domain.Object:
		return map[string]any{}
	}
	panic("unknown kind " + string(r.Kind))
}

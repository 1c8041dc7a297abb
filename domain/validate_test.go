package domain

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		cmd  *Command
		args string
		want []Issue // nil: valid
	}{
		{&CreateTask, `{"title":"a","project":"core"}`, nil},
		{&CreateTask, `{"title":"a","project":"../../Etc Passwd"}`, []Issue{{"project", "must be a lowercase slug: a letter or digit, then up to 63 letters, digits or dashes"}}},
		{&CreateTask, `{"title":"a","project":"core","priority":"urgent"}`, []Issue{{"priority", "must be one of: low, normal, high, critical"}}},
		{&CreateTask, `{"title":"\u200b","project":"core"}`, []Issue{{"title", "must not be only whitespace or invisible characters"}}},
		{&CreateTask, `{"title":"\u3000 ","project":"core"}`, []Issue{{"title", "must not be only whitespace"}}},
		{&CreateTask, `{"title":"a\u0000b","project":"core"}`, []Issue{{"title", "must not contain control characters (such as NUL, tab or newline)"}}},
		{&CreateTask, `{"title":"a\u2028b","project":"core"}`, []Issue{{"title", "must not contain line or paragraph separators (U+2028, U+2029)"}}},
		{&CreateTask, `{"title":"a","project":"core","labels":["ok","x\u2029"]}`, []Issue{{"labels[1]", "must not contain line or paragraph separators (U+2028, U+2029)"}}},
		{&CreateTask, `{"title":"a","project":"core","description":"para 1\u2029para 2\u2028line"}`, nil},
		{&CreateTask, `{"title":"a","project":"core","labels":["ok","\u2060"]}`, []Issue{{"labels[1]", "must not be only whitespace or invisible characters"}}},
		{&CreateTask, `{"title":"a","project":"core","description":"line 1\n\tline 2"}`, nil},
		{&CreateTask, `{"title":"a","project":"core","description":"line 1\r\nline 2"}`, nil},
		{&CreateTask, `{"title":"a","project":"core","description":"bell\u0007"}`, []Issue{{"description", "must not contain control characters other than tab, newline and carriage return"}}},
		{&CreateTask, `{"project":"core","x":1}`, []Issue{{"x", "is not a known field; known fields: title, project, description, parent_id, priority, labels, assignee, estimate_hours"}, {"title", "is required"}}},
		{&CreateTask, `{"title":"a","project":"core","estimate_hours":1001}`, []Issue{{"estimate_hours", "must be at most 1000"}}},
		{&CreateTask, `[]`, []Issue{{"", "arguments must be a JSON object"}}},
		{&UpdateTask, `{"task_id":"T-0001"}`, []Issue{{"", "at least one of status, progress, title, description, priority, assignee, labels, blocked_reason is required"}}},
		{&UpdateTask, `{"task_id":"T-0001","progress":1.0}`, nil},
		{&UpdateTask, `{"task_id":"T-0001","progress":1.5}`, []Issue{{"progress", "must be an integer (a whole number)"}}},
		{&UpdateTask, `{"task_id":"T-0001","status":"blocked"}`, []Issue{{"blocked_reason", `is required when status is "blocked"`}}},
		{&UpdateTask, `{"task_id":"T-0001","status":"blocked","blocked_reason":"\u200b"}`, []Issue{{"blocked_reason", `must not be blank when status is "blocked"`}}},
		{&UpdateTask, `{"task_id":"T-0001","status":"todo","blocked_reason":" "}`, nil},
		{&RecordThought, `{"task_id":"T-0001","type":"plan","content":"  "}`, []Issue{{"content", "must not be only whitespace"}}},
		{&RecordThought, `{"task_id":"T-0001","type":"plan","content":"c","metadata":{"k":"<&>"}}`, nil},
		{&ListTasks, `{"status":["todo","nope"],"created_after":"today"}`, []Issue{{"status[1]", "must be one of: backlog, todo, in_progress, blocked, review, done, cancelled"}, {"created_after", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"}}},
		{&Ping, ``, nil},
		{&Ping, `{"a":1}`, []Issue{{"a", "is not a known field; known fields: none"}}},
	} {
		err := c.cmd.ValidateJSON([]byte(c.args))
		var got []Issue
		var ie *InvalidInputError
		if errors.As(err, &ie) {
			got = ie.Issues
		} else if err != nil {
			t.Errorf("%s %s: %v, not an *InvalidInputError", c.cmd.Name, c.args, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s %s: errors.Is(err, ErrInvalidInput) is false", c.cmd.Name, c.args)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s\n got %q\nwant %q", c.cmd.Name, c.args, got, c.want)
		}
	}
}

// TestEveryTextIsChecked: every string argument that is free text — no
// enum, pattern, date-time or id to constrain it — has a Text rule, so a
// control character in it is refused (attack5: task_list's and skill_list's
// search and skill_list's capability took NUL or an escape, the one
// filtering nothing, the others everything, where knowledge_search's query
// refused them).
func TestEveryTextIsChecked(t *testing.T) {
	var check func(cmd, path string, r *Rule)
	check = func(cmd, path string, r *Rule) {
		switch {
		case r.Kind == Array && r.Items != nil:
			check(cmd, path+"[]", r.Items)
		case r.Kind == String && r.Text == AnyText && r.Enum == nil && r.Pattern == "" && !r.DateTime && r.IDOf == "":
			t.Errorf("%s: %s is free text without a Text rule", cmd, path)
		}
	}
	for _, c := range Commands {
		for i := range c.Fields {
			check(c.Name, c.Fields[i].Name, &c.Fields[i].Rule)
		}
	}
	for _, c := range []struct {
		cmd  *Command
		args string
	}{
		{&ListTasks, `{"search":"a\u0000b"}`},
		{&ListSkills, `{"search":"\u001b[2J"}`},
		{&ListSkills, `{"capability":"x\u0085"}`},
	} {
		if err := c.cmd.ValidateJSON([]byte(c.args)); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s %s: %v, want invalid input", c.cmd.Name, c.args, err)
		}
	}
	// A search of tabs and newlines, or of spaces only, is still words
	// (or none): it filters as before.
	for _, args := range []string{`{"search":"a\tb\nc"}`, `{"search":"   "}`, `{"search":""}`} {
		if err := ListTasks.ValidateJSON([]byte(args)); err != nil {
			t.Errorf("task_list %s: %v", args, err)
		}
	}
}

func TestPriorityRank(t *testing.T) {
	for i, p := range []string{"critical", "high", "normal", "low", "urgent", ""} {
		want := min(i, len(Priorities))
		if got := PriorityRank(p); got != want {
			t.Errorf("PriorityRank(%q) = %d, want %d", p, got, want)
		}
	}
}

func TestStateMachine(t *testing.T) {
	for _, from := range Statuses {
		for _, to := range Statuses {
			want := slices.Contains(transitions[from], to)
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v", from, to, got)
			}
		}
		if Closed(from) != (len(Transitions(from)) == 0) {
			t.Errorf("%s: closed %v but %d moves", from, Closed(from), len(Transitions(from)))
		}
	}
	if CanTransition("done", "todo") || CanTransition("nope", "todo") {
		t.Error("a closed or unknown status moves")
	}
}

func TestIDs(t *testing.T) {
	for _, c := range []struct {
		id string
		n  uint64
		ok bool
	}{{"T-0001", 1, true}, {"T-12345", 12345, true}, {"T-001", 0, false}, {"T-00001", 0, false}, {"T-0000", 0, false}, {"T-+001", 0, false}, {"A-0001", 0, false}} {
		n, ok := ParseID(TaskPrefix, c.id)
		if n != c.n || ok != c.ok {
			t.Errorf("ParseID(%q) = %d %v", c.id, n, ok)
		}
		if ok && FormatID(TaskPrefix, n) != c.id {
			t.Errorf("FormatID(%d) = %q", n, FormatID(TaskPrefix, n))
		}
	}
}

// TestFormatID: FormatID writes what fmt's "%s%04d" writes, for every
// prefix and for numbers of every length up to the largest.
func TestFormatID(t *testing.T) {
	for _, prefix := range []string{TaskPrefix, ThoughtPrefix, SessionPrefix, LearningPrefix, MemoryPrefix, ""} {
		for _, n := range []uint64{0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 12345, 99999, 100000, 1<<32 + 7, math.MaxUint64} {
			if got, want := FormatID(prefix, n), fmt.Sprintf("%s%04d", prefix, n); got != want {
				t.Errorf("FormatID(%q, %d) = %q, want %q", prefix, n, got, want)
			}
		}
	}
}

// BenchmarkValidateJSON is what the commands layer adds to every call.
func BenchmarkValidateJSON(b *testing.B) {
	args := []byte(`{"title":"bench task","project":"bench","description":"a longer description of the task","labels":["a","b"],"priority":"high"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := CreateTask.ValidateJSON(args); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIDFieldsAreBounded: every argument that names a task, session or
// learning is an id of at most MaxIDLength characters that says what it
// names (IDOf, so that a given "" is looked up), in every command,
// required or optional (thought_record's and thought_record_list's
// session_id once had no bound). auditor_id is a name, not an id.
func TestIDFieldsAreBounded(t *testing.T) {
	isID := func(name string) bool {
		return name != "auditor_id" && (strings.HasSuffix(name, "_id") || name == "supersedes" || name == "by")
	}
	n := 0
	for _, c := range Commands {
		for _, f := range c.Fields {
			if !isID(f.Name) {
				continue
			}
			n++
			if f.Rule.Kind != String || f.Rule.MaxLen != MaxIDLength || f.Rule.MinLen != 0 {
				t.Errorf("%s.%s: kind %s, length %d–%d; an id is a string of at most %d characters", c.Name, f.Name, f.Rule.Kind, f.Rule.MinLen, f.Rule.MaxLen, MaxIDLength)
			}
			if f.Rule.IDOf == "" { // without it, a given "" would be taken for an absent id
				t.Errorf("%s.%s: no IDOf: an empty id would not be looked up", c.Name, f.Name)
			}
		}
	}
	if n < 18 {
		t.Errorf("found %d id fields; the commands have at least 18", n)
	}
}

// TestQuotedInputIsBounded: an issue quotes at most MaxQuoted characters of
// each name the client sent, at any depth, however long the name; the
// first ones still say which. An unknown argument's name was its path
// whole (and the message quotes the path again).
func TestQuotedInputIsBounded(t *testing.T) {
	long, key := strings.Repeat("k", 100000), strings.Repeat("k", 5000) // metadata holds at most 16 KiB
	clipped := strings.Repeat("k", MaxQuoted) + "…"
	if got := Clip("é" + long); got != "é"+clipped[:MaxQuoted-1]+"…" {
		t.Errorf("Clip counts bytes, not characters: %q", got)
	}
	if got := Clip(clipped[:MaxQuoted]); got != clipped[:MaxQuoted] {
		t.Errorf("Clip of %d characters: %q", MaxQuoted, got)
	}
	for _, c := range []struct {
		cmd  *Command
		args string
		want []Issue
	}{
		{&ListTasks, `{"` + long + `":1}`, []Issue{{clipped, "is not a known field; known fields: " + ListTasks.known()}}},
		{&RecordThought, `{"task_id":"T-1","type":"plan","content":"c","metadata":{"` + key + `":{"` + key + `":1e999}}}`,
			[]Issue{{"metadata." + clipped + "." + clipped, "must be a number within the range of an IEEE 754 double (I-JSON)"}}},
		{&RecordThought, `{"task_id":"T-1","type":"plan","content":"c","metadata":{"` + key + "\xff" + `":1}}`,
			[]Issue{{"metadata." + clipped, "is not valid UTF-8"}}},
	} {
		err := c.cmd.ValidateJSON([]byte(c.args))
		var ie *InvalidInputError
		if !errors.As(err, &ie) || !slices.Equal(ie.Issues, c.want) {
			t.Errorf("%s: got %.300v, want %q", c.cmd.Name, err, c.want)
		}
	}
}

// TestCompactSizeOfLargeObjects: an object's compact size counts the first
// of each repeated name, whether the object is small (a scan) or large (a
// map of the names, which replaced a scan per member: minutes of CPU for
// 50,000 members, inside the commit every writer waits for).
func TestCompactSizeOfLargeObjects(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 15, 16, 17, 40, 300} {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d":%q`, rng.IntN(n/2+1), strings.Repeat("v", rng.IntN(5)))
		}
		b.WriteString("}")
		v := ParseArgs([]byte(b.String())).tree
		want := 2
		firsts := 0
		for i, m := range v.members {
			if slices.IndexFunc(v.members, func(o Member) bool { return o.Key == m.Key }) != i {
				continue
			}
			want += quotedSize(m.Key) + 1 + compactSize(&v.members[i].Value)
			firsts++
		}
		want += max(firsts-1, 0)
		if got := compactSize(&v); got != want {
			t.Errorf("%d members: compact size %d, want %d", n, got, want)
		}
	}
}

// BenchmarkValidateLargeMetadata validates thought_record metadata of many
// members (refused, past 16 KiB): time per member should not grow with
// their number.
func BenchmarkValidateLargeMetadata(b *testing.B) {
	for _, n := range []int{6000, 48000} {
		var s strings.Builder
		s.WriteString(`{"task_id":"T-0001","type":"decision","content":"x","metadata":{`)
		for i := range n {
			if i > 0 {
				s.WriteString(",")
			}
			fmt.Fprintf(&s, `"k%d":0`, i)
		}
		s.WriteString("}}")
		args := []byte(s.String())
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				RecordThought.ValidateJSON(args)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		})
	}
}

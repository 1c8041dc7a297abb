package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
)

// issue is commands.Issue in a form that test tables can write unkeyed.
type issue struct{ Path, Message string }

func fromIssues(list []commands.Issue) []issue {
	var out []issue
	for _, x := range list {
		out = append(out, issue{x.Path, x.Message})
	}
	return out
}

// catalogue is the tools as New sets them up (inputs closed).
var catalogue = sync.OnceValue(func() map[string]*tool { return New(nil, Options{}).byName })

func toolByName(t *testing.T, name string) *tool {
	t.Helper()
	tl := catalogue()[name]
	if tl == nil {
		t.Fatalf("no tool %q", name)
	}
	return tl
}

func issuesOf(t *testing.T, tl *tool, args string) []issue {
	t.Helper()
	err := validate(tl, json.RawMessage(args))
	if err == nil {
		return nil
	}
	var inv *commands.InvalidInputError
	if !errors.As(err, &inv) {
		t.Fatalf("validate: %v is not an InvalidInputError", err)
	}
	if !errors.Is(err, commands.ErrInvalidInput) {
		t.Fatalf("validate: errors.Is(err, ErrInvalidInput) is false")
	}
	return fromIssues(inv.Issues)
}

// validate is what commands.Service.Do does with a call's arguments before
// running its command: parse them once, check them with the domain's rules.
func validate(tl *tool, args json.RawMessage) error {
	return tl.cmd.Rules().ValidateArgs(domain.ParseArgs(args))
}

func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestValidateValid(t *testing.T) {
	hex64 := strings.Repeat("a1", 32)
	tests := []struct{ tool, args string }{
		{"task_create", `{"title":"Write the parser","project":"billing-api"}`},
		{"task_create", `{"title":"` + strings.Repeat("é", 256) + `","project":"a","description":"d","parent_id":"T-0001",
			"priority":"critical","labels":["x","x","` + strings.Repeat("l", 64) + `"],"assignee":"` + strings.Repeat("a", 128) + `","estimate_hours":0.5}`},
		{"task_create", `{"title":"t","project":"` + strings.Repeat("a", 64) + `","estimate_hours":1000,"labels":[]}`},
		{"task_update", `{"task_id":"T-0001","status":"in_progress"}`},
		{"task_update", `{"task_id":"T-0001","progress":0}`},
		{"task_update", `{"task_id":"T-0001","progress":100,"title":"t","description":"","priority":"low","assignee":"me","labels":["a"]}`},
		{"task_update", `{"task_id":"T-0001","status":"blocked","blocked_reason":"waiting for review"}`},
		{"task_update", `{"task_id":"T-0001","blocked_reason":""}`},
		{"task_get", `{"task_id":"T-0001"}`},
		{"task_get", `{"task_id":"T-0001","include_thought_trail":true,"include_dependents":false,"as_of_seq":0}`},
		{"task_get", `{"task_id":"T-0001","as_of_seq":9223372036854775807}`},
		{"task_list", ``},
		{"task_list", `null`},
		{"task_list", `{}`},
		{"task_list", `{"project":"p","status":["todo","done"],"priority":["high"],"assignee":"a","label":"l",
			"created_after":"2026-04-08T22:15:30.123Z","created_before":"2026-04-08T23:00:00+02:00","search":"parser bug",
			"limit":500,"offset":0,"sort_by":"priority","sort_order":"asc"}`},
		{"task_list", `{"created_after":"2026-04-08t22:15:30.123z","created_before":"2026-04-08t23:00:00-00:00"}`},
		{"task_update", `{"task_id":"T-1","progress":5.0}`},
		{"task_update", `{"task_id":"T-1","progress":1e2}`},
		{"task_list", `{"limit":1.0e1,"offset":0.0}`},
		{"task_list", `{"created_after":"2016-12-31T23:59:60Z","created_before":"2016-12-31T15:59:60.5-08:00"}`},
		{"task_next_actions", `{"project":"p","limit":1,"include_blocked":true}`},
		{"thought_record", `{"task_id":"T-0001","type":"decision","content":"Use bbolt."}`},
		{"thought_record", `{"task_id":"T-0001","type":"risk","content":"  x  ","session_id":"A-0001","branch":"main",
			"commit_sha":"` + hex64 + `","tests_run":["go test ./..."],"blockers":[],"metadata":{"k":[1,{"n":null}],"ok":true}}`},
		{"thought_record", `{"task_id":"T-0001","type":"plan","content":"c","metadata":{"max":1.7976931348623157e308,"tiny":1e-400,"long":123456789012345678901234567890}}`},
		{"thought_record", `{"task_id":"T-0001","type":"plan","content":"\ud83d\ude00 and \\ud800 as text","commit_sha":"ABCDEF0"}`},
		{"thought_record_list", `{"task_id":"T-0001","session_id":"A-0001","type":"plan","limit":1,"verify_chain":true}`},
		{"audit_session_start", `{"task_id":"T-0001","auditor_id":"auditor","reason":"","scope":"deep"}`},
		{"merkle_finalize", `{"session_id":"A-0001","task_id":"T-0002"}`},
		{"merkle_root", `{"session_id":"A-0001"}`},
		{"audit_verify_chain", `{}`},
		{"audit_verify_chain", `{"session_id":"A-0001","task_id":"T-0001","full_trace":true}`},
		{"skill_list", `{"search":"","capability":"review"}`},
		{"server_ping", `{}`},
		{"server_ping", ``},
		{"server_health", ` { } `},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			if got := issuesOf(t, toolByName(t, tt.tool), tt.args); got != nil {
				t.Errorf("validate(%s) = %v, want no issue", tt.args, got)
			}
		})
	}
}

func TestValidateInvalid(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	hugeMeta := `{"k":"` + long(16<<10) + `"}`
	tests := []struct {
		tool, args string
		want       []issue
	}{
		// The arguments as a whole.
		{"task_create", `[]`, []issue{{"", "arguments must be a JSON object"}}},
		{"task_create", `"title"`, []issue{{"", "arguments must be a JSON object"}}},
		{"task_create", `{"title":`, []issue{{"", "arguments are not valid JSON"}}},
		{"task_create", `{} {}`, []issue{{"", "arguments are not valid JSON"}}},
		{"task_create", `{}`, []issue{{"title", "is required"}, {"project", "is required"}}},
		{"task_create", `null`, []issue{{"title", "is required"}, {"project", "is required"}}},
		{"task_create", `{"title":"t","project":"p","Title":"t"}`, []issue{{"Title", "is not a known field; known fields: title, project, description, parent_id, priority, labels, assignee, estimate_hours"}}},
		{"task_create", `{"title":"t","project":"p","title":"u"}`, []issue{{"title", "appears more than once"}}},
		{"server_ping", `{"x":1}`, []issue{{"x", "is not a known field; known fields: none"}}},
		// Types.
		{"task_create", `{"title":null,"project":5}`, []issue{{"title", "must be a string"}, {"project", "must be a string"}}},
		{"task_create", `{"title":"t","project":"p","labels":"a"}`, []issue{{"labels", "must be an array"}}},
		{"task_create", `{"title":"t","project":"p","estimate_hours":"3"}`, []issue{{"estimate_hours", "must be a number"}}},
		{"task_get", `{"task_id":"T-1","include_thought_trail":"yes"}`, []issue{{"include_thought_trail", "must be a boolean"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","metadata":[]}`, []issue{{"metadata", "must be an object"}}},
		{"task_update", `{"task_id":"T-1","progress":50.5}`, []issue{{"progress", "must be an integer (a whole number)"}}},
		{"task_update", `{"task_id":"T-1","progress":5e-1}`, []issue{{"progress", "must be an integer (a whole number)"}}},
		{"task_update", `{"task_id":"T-1","progress":1.01e2}`, []issue{{"progress", "must be at most 100"}}},
		{"task_update", `{"task_id":"T-1","progress":true}`, []issue{{"progress", "must be an integer"}}},
		// Enums.
		{"task_create", `{"title":"t","project":"p","priority":"urgent"}`, []issue{{"priority", "must be one of: low, normal, high, critical"}}},
		{"task_update", `{"task_id":"T-1","status":"finished"}`, []issue{{"status", "must be one of: backlog, todo, in_progress, blocked, review, done, cancelled"}}},
		{"task_list", `{"status":["todo","nope"],"priority":["HIGH"]}`, []issue{
			{"status[1]", "must be one of: backlog, todo, in_progress, blocked, review, done, cancelled"},
			{"priority[0]", "must be one of: low, normal, high, critical"}}},
		{"task_list", `{"sort_by":"name","sort_order":"up"}`, []issue{
			{"sort_by", "must be one of: created, updated, priority, progress"}, {"sort_order", "must be one of: asc, desc"}}},
		{"thought_record", `{"task_id":"T-1","type":"idea","content":"c"}`, []issue{{"type", "must be one of: plan, analysis, decision, reflection, discovery, risk, blockers"}}},
		{"audit_session_start", `{"task_id":"T-1","auditor_id":"a","scope":"wide"}`, []issue{{"scope", "must be one of: shallow, deep"}}},
		// Ranges.
		{"task_create", `{"title":"t","project":"p","estimate_hours":-0.5}`, []issue{{"estimate_hours", "must be at least 0"}}},
		{"task_create", `{"title":"t","project":"p","estimate_hours":1000.01}`, []issue{{"estimate_hours", "must be at most 1000"}}},
		{"task_create", `{"title":"t","project":"p","estimate_hours":1e999}`, []issue{{"estimate_hours", "must be at most 1000"}}},
		{"task_update", `{"task_id":"T-1","progress":101}`, []issue{{"progress", "must be at most 100"}}},
		{"task_update", `{"task_id":"T-1","progress":-1}`, []issue{{"progress", "must be at least 0"}}},
		{"task_update", `{"task_id":"T-1","progress":99999999999999999999}`, []issue{{"progress", "must be at most 100"}}},
		{"task_get", `{"task_id":"T-1","as_of_seq":-1}`, []issue{{"as_of_seq", "must be at least 0"}}},
		{"task_get", `{"task_id":"T-1","as_of_seq":9223372036854775808}`, []issue{{"as_of_seq", "must be between 0 and 9223372036854775807"}}},
		{"task_get", `{"task_id":"T-1","as_of_seq":-9223372036854775809}`, []issue{{"as_of_seq", "must be at least 0"}}},
		{"task_list", `{"limit":0,"offset":-1}`, []issue{{"limit", "must be at least 1"}, {"offset", "must be at least 0"}}},
		{"task_list", `{"limit":501}`, []issue{{"limit", "must be at most 500"}}},
		{"task_next_actions", `{"limit":101}`, []issue{{"limit", "must be at most 100"}}},
		{"thought_record_list", `{"limit":0}`, []issue{{"limit", "must be at least 1"}}},
		// String lengths, in characters.
		{"task_create", `{"title":"","project":"p"}`, []issue{{"title", "must be at least 1 character"}}},
		{"task_create", `{"title":"` + strings.Repeat("é", 257) + `","project":"p"}`, []issue{{"title", "must be at most 256 characters (got 257)"}}},
		{"task_create", `{"title":"t","project":"p","description":"` + long(8001) + `"}`, []issue{{"description", "must be at most 8000 characters (got 8001)"}}},
		{"task_create", `{"title":"t","project":"p","assignee":""}`, []issue{{"assignee", "must be at least 1 character"}}},
		{"task_create", `{"title":"t","project":"p","assignee":"` + long(129) + `"}`, []issue{{"assignee", "must be at most 128 characters (got 129)"}}},
		{"task_list", `{"label":""}`, []issue{{"label", "must be at least 1 character"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":""}`, []issue{{"content", "must be at least 1 character"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"` + long(5001) + `"}`, []issue{{"content", "must be at most 5000 characters (got 5001)"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","branch":"` + long(257) + `"}`, []issue{{"branch", "must be at most 256 characters (got 257)"}}},
		{"audit_session_start", `{"task_id":"T-1","auditor_id":"` + long(129) + `","reason":"` + long(1001) + `"}`, []issue{
			{"auditor_id", "must be at most 128 characters (got 129)"}, {"reason", "must be at most 1000 characters (got 1001)"}}},
		// Array sizes and items.
		{"task_create", `{"title":"t","project":"p","labels":` + many(21, `"l"`) + `}`, []issue{{"labels", "must have at most 20 items (got 21)"}}},
		{"task_create", `{"title":"t","project":"p","labels":["ok","",5,"` + long(65) + `"]}`, []issue{
			{"labels[1]", "must be at least 1 character"}, {"labels[2]", "must be a string"}, {"labels[3]", "must be at most 64 characters (got 65)"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","tests_run":` + many(101, `"t"`) + `,"blockers":` + many(51, `"b"`) + `}`, []issue{
			{"tests_run", "must have at most 100 items (got 101)"}, {"blockers", "must have at most 50 items (got 51)"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","tests_run":[null]}`, []issue{{"tests_run[0]", "must be a string"}}},
		// Patterns and formats.
		{"task_create", `{"title":"t","project":"Billing_API"}`, []issue{{"project", "must be a lowercase slug: a letter or digit, then up to 63 letters, digits or dashes"}}},
		{"task_create", `{"title":"t","project":"-x"}`, []issue{{"project", "must be a lowercase slug: a letter or digit, then up to 63 letters, digits or dashes"}}},
		{"task_create", `{"title":"t","project":"` + long(65) + `"}`, []issue{{"project", "must be a lowercase slug: a letter or digit, then up to 63 letters, digits or dashes"}}},
		{"task_next_actions", `{"project":""}`, []issue{{"project", "must be a lowercase slug: a letter or digit, then up to 63 letters, digits or dashes"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","commit_sha":"abc123"}`, []issue{{"commit_sha", "must be 7 to 64 hexadecimal digits"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","commit_sha":"` + strings.Repeat("a", 65) + `"}`, []issue{{"commit_sha", "must be 7 to 64 hexadecimal digits"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","commit_sha":"abcdefg"}`, []issue{{"commit_sha", "must be 7 to 64 hexadecimal digits"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":" \t\n "}`, []issue{{"content", "must not be only whitespace"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"\u00a0\u2003"}`, []issue{{"content", "must not be only whitespace"}}},
		{"task_list", `{"created_after":"2026-04-08T22:15:30,5Z","created_before":"2026-04-08 23:00:00Z"}`, []issue{
			{"created_after", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"},
			{"created_before", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"}}},
		{"task_list", `{"created_after":"2026-04-08T22:15:30+24:00","created_before":"2026-04-08T22:15:30+23:60"}`, []issue{
			{"created_after", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"},
			{"created_before", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"}}},
		{"task_list", `{"created_after":"2016-12-31T23:58:60Z","created_before":"2016-12-31T23:59:61Z"}`, []issue{
			{"created_after", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"},
			{"created_before", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"}}},
		{"task_list", `{"created_after":"yesterday","created_before":"2026-04-08"}`, []issue{
			{"created_after", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"},
			{"created_before", "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z"}}},
		// Rules across fields.
		{"task_update", `{"task_id":"T-1"}`, []issue{{"", "at least one of status, progress, title, description, priority, assignee, labels, blocked_reason is required"}}},
		{"task_update", `{"progress":5}`, []issue{{"task_id", "is required"}}},
		{"task_update", `{"task_id":"T-1","status":"blocked"}`, []issue{{"blocked_reason", `is required when status is "blocked"`}}},
		{"task_update", `{"task_id":"T-1","status":"blocked","blocked_reason":" "}`, []issue{{"blocked_reason", `must not be blank when status is "blocked"`}}},
		{"thought_record", `{}`, []issue{{"task_id", "is required"}, {"type", "is required"}, {"content", "is required"}}},
		{"audit_session_start", `{}`, []issue{{"task_id", "is required"}, {"auditor_id", "is required"}}},
		{"merkle_finalize", `{"task_id":"T-1"}`, []issue{{"session_id", "is required"}}},
		{"merkle_root", `{}`, []issue{{"session_id", "is required"}}},
		{"task_get", `{}`, []issue{{"task_id", "is required"}}},
		// Metadata size, counted as compact JSON.
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","metadata":` + hugeMeta + `}`, []issue{
			{"metadata", fmt.Sprintf("must be at most 16384 bytes as compact JSON (got %d)", len(hugeMeta))}}},
		// Metadata numbers beyond a double: the arguments would not be I-JSON,
		// and their hash not RFC 8785's (commands.ArgsSHA256).
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","metadata":{"a":[1,{"b":1e400}]}}`, []issue{
			{"metadata.a[1].b", "must be a number within the range of an IEEE 754 double (I-JSON)"}}},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","metadata":{"a":-1E309,"b":2e999}}`, []issue{
			{"metadata.a", "must be a number within the range of an IEEE 754 double (I-JSON)"}}},
		// Text the JSON decoder would silently change.
		{"task_create", "{\"title\":\"a\xffb\",\"project\":\"p\"}", []issue{{"title", "is not valid UTF-8"}}},
		{"task_create", `{"title":"a\ud800b","project":"p"}`, []issue{{"title", "contains an unpaired UTF-16 surrogate escape"}}},
		{"task_create", `{"title":"a\udc00","project":"p"}`, []issue{{"title", "contains an unpaired UTF-16 surrogate escape"}}},
		{"task_create", `{"title":"\ud800\u0041","project":"p"}`, []issue{{"title", "contains an unpaired UTF-16 surrogate escape"}}},
		{"task_create", `{"title":"t","project":"p","labels":["ok","\ud800"]}`, []issue{{"labels[1]", "contains an unpaired UTF-16 surrogate escape"}}},
		{"thought_record", "{\"task_id\":\"T-1\",\"type\":\"plan\",\"content\":\"c\",\"metadata\":{\"k\":[\"\xc3\"]}}", []issue{{"metadata.k[0]", "is not valid UTF-8"}}},
		{"server_ping", "{\"\xff\":1}", []issue{{"\ufffd", "is not valid UTF-8"}, {"\ufffd", "is not a known field; known fields: none"}}},
		// Nesting.
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","metadata":{"a":` + deep(62) + `}}`, nil},
		{"thought_record", `{"task_id":"T-1","type":"plan","content":"c","metadata":{"a":` + deep(63) + `}}`, []issue{
			{"metadata.a" + strings.Repeat("[0]", 62), "nests deeper than 64 levels"}}},
		{"server_ping", `{"a":` + deep(5000) + `}`, []issue{{"a" + strings.Repeat("[0]", 63), "nests deeper than 64 levels"}}},
	}
	for _, tt := range tests {
		name := tt.tool
		if len(tt.want) > 0 {
			name += "/" + tt.want[0].Path
		}
		t.Run(name, func(t *testing.T) {
			got := issuesOf(t, toolByName(t, tt.tool), tt.args)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("validate(%.200s)\n got %q\nwant %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestValidateMetadataMeasuredCompact(t *testing.T) {
	// 16 KiB of data padded with whitespace is still within the limit.
	body := strings.Repeat("x", 16<<10-len(`{"k":""}`))
	args := `{"task_id":"T-1","type":"plan","content":"c","metadata":{ "k" :  "` + body + `" ` + strings.Repeat(" ", 1000) + `}}`
	if got := issuesOf(t, toolByName(t, "thought_record"), args); got != nil {
		t.Errorf("16 KiB compact metadata: %v", got)
	}
}

func TestValidateCapsIssues(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 60 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%02d":1`, i)
	}
	b.WriteString("}")
	got := issuesOf(t, toolByName(t, "server_ping"), b.String())
	if len(got) != domain.MaxIssues+1 {
		t.Fatalf("got %d issues, want %d", len(got), domain.MaxIssues+1)
	}
	if last := got[len(got)-1]; last != (issue{"", "10 more issues not shown"}) {
		t.Errorf("last issue = %v", last)
	}
}

func TestArgumentsWithTooManyValuesAreRefusedEarly(t *testing.T) {
	tl := toolByName(t, "task_create")
	raw := `{"title":"t","project":"p","labels":[` + strings.Repeat(`"x",`, domain.MaxValues) + `"x"]}`
	err := validate(tl, json.RawMessage(raw))
	var inv *commands.InvalidInputError
	if !errors.As(err, &inv) || inv.Issues[0].Path != "labels" || !strings.Contains(inv.Issues[0].Message, "at most") {
		t.Fatalf("validate = %v, want an issue about too many values", err)
	}
}

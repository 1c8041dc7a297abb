package commands

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/domain"
)

// TestDecodeAsEncodingJSON: decoding the parsed tree of valid arguments
// gives the typed input encoding/json's strict decoder gives from the text
// (empty arrays as empty slices, pointers for optional fields, metadata as
// sent).
func TestDecodeAsEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		cmd  *Command
		in   any // a pointer to a zero input
		args string
	}{
		{CreateTask, &CreateTaskInput{}, `{"title":"T \u00e9\ud83d\ude00\/","project":"p","labels":[],"estimate_hours":1.5e0}`},
		{CreateTask, &CreateTaskInput{}, `{"title":"t","project":"p","labels":["a","b"],"priority":"high","parent_id":"T-0001"}`},
		{UpdateTask, &UpdateTaskInput{}, `{"task_id":"T-0001","status":"blocked","blocked_reason":"why","progress":0,"labels":[]}`},
		{UpdateTask, &UpdateTaskInput{}, `{"task_id":"T-0001","title":"x","description":"","labels":["z"]}`},
		{ListTasks, &ListTasksInput{}, `{"status":["todo"],"priority":[],"limit":500,"offset":3,"sort_by":"priority"}`},
		{RecordThought, &RecordThoughtInput{}, `{"task_id":"T-0001","type":"plan","content":"c","tests_run":[],"metadata":{ "k" : [1, {"n":null}] , "s":"\u00e9"}}`},
		{SearchKnowledge, &SearchKnowledgeInput{}, `{"query":"q","kinds":["thought"],"cross_project":true,"limit":5,"as_of_seq":0}`},
		{GetTask, &GetTaskInput{}, `{"task_id":"T-0001","as_of_seq":9223372036854775807,"include_dependents":false}`},
		{Ping, &struct{}{}, ``},
	} {
		a := domain.ParseArgs([]byte(c.args))
		if err := c.cmd.rules.ValidateArgs(a); err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		got := reflect.New(reflect.TypeOf(c.in).Elem())
		if err := fieldsOf(got.Elem().Type()).decode(a.Object(), got.Interface()); err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		raw := c.args
		if raw == "" {
			raw = "{}"
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(c.in); err != nil {
			t.Fatalf("%s: encoding/json: %v", c.args, err)
		}
		if !reflect.DeepEqual(got.Interface(), c.in) {
			t.Errorf("%s:\n got %#v\nwant %#v", c.args, got.Elem().Interface(), reflect.ValueOf(c.in).Elem().Interface())
		}
	}
}

// TestDecodeRefusesWhatGoCannotHold: a number the rules let through but
// the Go field cannot hold is refused as encoding/json refused it.
func TestDecodeRefusesWhatGoCannotHold(t *testing.T) {
	var in struct {
		N uint8    `json:"n"`
		F *float32 `json:"f"`
	}
	fields := fieldsOf(reflect.TypeOf(in))
	for _, c := range []struct{ args, want string }{
		{`{"n":256}`, "invalid input: n: must be uint8, not number 256"},
		{`{"n":-1}`, "invalid input: n: must be uint8, not number -1"},
		{`{"f":1e39}`, "invalid input: f: must be float32, not number 1e39"},
		{`{"n":"1"}`, "invalid input: n: must be uint8, not string"},
		{`{"m":1}`, "invalid input: m: unknown field"},
	} {
		err := fields.decode(domain.ParseArgs([]byte(c.args)).Object(), &in)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %s", c.args, err, c.want)
		}
	}
}

// TestNamedIDs: the subjects of tool.called are the ids the arguments name,
// read as encoding/json decodes them (the last of a repeated key), for
// arguments past the parser's limits too.
func TestNamedIDs(t *testing.T) {
	deep := strings.Repeat("[", 70) + strings.Repeat("]", 70)
	for _, c := range []struct {
		args string
		want []string
	}{
		{`{"task_id":"T-0001","session_id":"A-0002","parent_id":"T-0003"}`, []string{"T-0001", "T-0003", "A-0002"}},
		{`{"task_id":"T-0001","task_id":"T-0002"}`, []string{"T-0002"}},
		{`{"task_id":"T-0001","task_id":5}`, nil},
		{`{"task_id":"x","parent_id":"A-0001"}`, []string{"A-0001"}},
		{`{"task_id":"T-0001","metadata":` + deep + `}`, []string{"T-0001"}},
		{`[{"task_id":"T-0001"}]`, nil},
		{`{"task_id":"T-0001"`, nil},
		{``, nil},
	} {
		if got := namedIDs(domain.ParseArgs([]byte(c.args))); !slices.Equal(got, c.want) {
			t.Errorf("%.60s: %q, want %q", c.args, got, c.want)
		}
	}
}

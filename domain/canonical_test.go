package domain

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestCanonicalRefusesWhatIsNotIJSON: each way text can fail RFC 8785's
// I-JSON, at the top and nested, and text that is not one JSON value.
func TestCanonicalRefusesWhatIsNotIJSON(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1}x`, `{"a":1} {}`, `01`, `1.`, `-`, `tru`, `"a`, "\"\x01\"",
		`{"a":1,"a":2}`, `[{"b":{"c":1,"d":2,"c":3}}]`, `{"é":1,"\u00e9":2}`,
		"{\"a\":\"\xff\"}", "[\"\xc3\"]", "{\"\xff\":1}",
		`{"a":"\ud800"}`, `["\udc00x"]`, `{"\ud800\u0041":1}`,
		`{"a":1e400}`, `[-1e309]`,
		strings.Repeat(`[`, maxNesting+1) + strings.Repeat(`]`, maxNesting+1),
	} {
		if c, ok := Canonical([]byte(in)); ok {
			t.Errorf("%.60q taken as I-JSON: %.60q", in, c)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{` { "b" : [ 1 , 2.50, -0, 1e2 ] , "a" : { "d" : null , "c" : true } } `, `{"a":{"c":true,"d":null},"b":[1,2.5,0,100]}`},
		{`"\u00e9\/\t\u001f"`, "\"\u00e9/\\t\\u001f\""},
		{`{"\ud83d\ude00":1,"\ue000":2,"a":3}`, "{\"a\":3,\"\U0001F600\":1,\"\ue000\":2}"},
		{`[[],{},[{}]]`, `[[],{},[{}]]`},
		{`{"a":{"a":{"b":1,"a":2}},"":0}`, `{"":0,"a":{"a":{"a":2,"b":1}}}`},
		{` null `, `null`},
	} {
		got, ok := Canonical([]byte(c.in))
		if !ok || string(got) != c.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

// TestCanonicalNeedsNoTree: Canonical and TopStrings read arguments of
// any size (past MaxValues: refused calls) without a value tree, which
// took 104 bytes a value and 120 a member: 26 times a 4 MiB array of
// one-letter strings, and requests in flight held theirs at once. The
// bounds are on all bytes allocated, garbage included (slices growing by
// a quarter allocate about five times their final size).
func TestCanonicalNeedsNoTree(t *testing.T) {
	var members strings.Builder
	members.WriteString(`{"task_id":"T1","z":[` + strings.Repeat(`{"b":1,"a":[`, 500) + `0` + strings.Repeat(`]}`, 500) + `]`)
	for i := range 1 << 17 {
		fmt.Fprintf(&members, `,"k%06d":%d`, 1<<17-i, i) // in reverse order
	}
	members.WriteString(`}`)
	for _, c := range []struct {
		name, in string
		most     float64 // bytes allocated, in times the text's size
	}{
		// The output, and a few bytes a number: the tree took 26 times.
		{"an array", `{"labels":[` + strings.Repeat(`"l",`, 1<<20) + `"l"],"task_id":"T1"}`, 1.5},
		{"an array 900 objects deep", strings.Repeat(`{"b":0,"a":`, 900) + `[` + strings.Repeat(`"l",`, 1<<19) + `"l"]` + strings.Repeat(`}`, 900), 1.5},
		// 32 bytes a member indexed and its name, for 16 of text, growing
		// by a quarter (about 12 times in all): a tree took 120 bytes a
		// member, growing alike (over 35 times).
		{"an object", members.String(), 15},
	} {
		raw := []byte(c.in)
		want, err := json.Marshal(json.RawMessage(raw)) // compact, keys as sent
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		allocated := allocatedBy(func() {
			var ok bool
			if got, ok = Canonical(raw); !ok {
				t.Fatalf("%s: not I-JSON", c.name)
			}
		})
		if len(got) != len(want) {
			t.Errorf("%s: canonical form of %d bytes, the compact text has %d", c.name, len(got), len(want))
		}
		if r := float64(allocated) / float64(len(raw)); r > c.most {
			t.Errorf("%s: Canonical allocated %.1f times the text's %d bytes (at most %.1f)", c.name, r, len(raw), c.most)
		}
		var ids []string
		allocated = allocatedBy(func() { ids = TopStrings(raw, "z", "task_id", "none") })
		if r := float64(allocated) / float64(len(raw)); r > c.most {
			t.Errorf("%s: TopStrings allocated %.1f times the text's %d bytes (at most %.1f)", c.name, r, len(raw), c.most)
		}
		if want := []string{"", "T1", ""}; raw[0] == '{' && raw[2] != 'b' && strings.Join(ids, "|") != strings.Join(want, "|") {
			t.Errorf("%s: TopStrings = %q, want %q", c.name, ids, want)
		}
	}
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTopStringsAsAMap: TopStrings reads what encoding/json decoding the
// text into a map gives: the last of a repeated key, invalid text as
// U+FFFD, nothing for text that is not a JSON object.
func TestTopStringsAsAMap(t *testing.T) {
	for _, in := range []string{
		`{"a":"1","b":2,"a":"3"}`, `{"a":"1","a":4}`, `{"a":{"b":"x"},"b":"\u00e9"}`, "{\"a\":\"\xff\\ud800\",\"b\":\"\"}",
		` { "b" : "y" } `, `["a"]`, `"a"`, `{"a":"1"`, `{"a":"1"}x`, `null`, `{"B":"x","A":"y"}`,
		`{"a":"1","n":1e400}`, `{"a":"1","n":[{"m":-1e309}]}`, `{"a":"1","n":1e-400}`, `{"a":"1","n":123456789012345678901234567890}`,
		`{"a":"1","d":` + strings.Repeat(`[`, maxNesting-1) + strings.Repeat(`]`, maxNesting-1) + `}`,
		`{"a":"1","d":` + strings.Repeat(`[`, maxNesting) + strings.Repeat(`]`, maxNesting) + `}`,
	} {
		got := TopStrings([]byte(in), "a", "b")
		var m map[string]any
		if json.Unmarshal([]byte(in), &m) != nil || m == nil {
			if got != nil {
				t.Errorf("%.60q is not a JSON object encoding/json reads, but TopStrings = %q", in, got)
			}
			continue
		}
		for i, k := range []string{"a", "b"} {
			want, _ := m[k].(string)
			if got == nil || got[i] != want {
				t.Errorf("TopStrings(%q)[%s] = %q, encoding/json %q", in, k, got, want)
			}
		}
	}
}

package domain

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// generic is v as encoding/json decodes it with UseNumber (a repeated key
// keeps its first value, as Get does).
func generic(v *Value) any {
	switch v.kind {
	case Boolean:
		return v.Bool()
	case Number:
		return json.Number(v.text)
	case String:
		return v.text
	case Array:
		items := make([]any, len(v.items))
		for i := range v.items {
			items[i] = generic(&v.items[i])
		}
		return items
	case Object:
		m := make(map[string]any, len(v.members))
		for i, mb := range v.members {
			if _, dup := m[mb.Key]; !dup {
				m[mb.Key] = generic(&v.members[i].Value)
			}
		}
		return m
	}
	return nil
}

// FuzzParseArgs: the parser never panics; it accepts exactly the JSON that
// encoding/json accepts (within the limits); its strings are what
// encoding/json decodes; a clean parse is valid UTF-8; compactSize is the
// length encoding/json writes.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2.5e3,-0,"x\u00e9"]}`, `{"b":1,"a":{"d":null,"c":true}}`,
		`"\ud83d\ude00"`, `{"a":1,"a":2}`, "{\"\xff\":1}", `{"a":"\ud800\u0041"}`, `{"a":"\/\b\f\n\r\t\"\\"}`, ` 1 `, `01`, `{"a":1,}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a := ParseArgs([]byte(in))
		valid := json.Valid([]byte(in))
		if a.root != nil && !valid {
			t.Fatalf("%q parsed, but it is not JSON", in)
		}
		if a.root == nil && valid && !a.overLimit {
			t.Fatalf("%q is JSON but was not parsed: %v", in, a.issues.list)
		}
		if a.Clean() && !utf8.Valid([]byte(in)) {
			t.Fatalf("%q is not UTF-8 but parsed clean", in)
		}
		if a.root == nil {
			return
		}
		var want any
		dec := json.NewDecoder(bytes.NewReader([]byte(in)))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if a.Clean() { // encoding/json keeps the last of repeated keys
			w, _ := json.Marshal(want)
			g, _ := json.Marshal(generic(a.root))
			if !bytes.Equal(w, g) {
				t.Fatalf("%q: tree %s, encoding/json %s", in, g, w)
			}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(generic(a.root)); err != nil {
			t.Fatal(err)
		}
		if got := compactSize(a.root); got != b.Len()-1 {
			t.Fatalf("%q: compactSize %d, encoding/json writes %d bytes", in, got, b.Len()-1)
		}
	})
}

func TestLoneSurrogate(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`"plain"`, false},
		{`"\ud83d\ude00"`, false},
		{`"\uD83D\uDE00"`, false},
		{`"\\ud800"`, false}, // an escaped backslash, then text
		{`"\\\ud800"`, true},
		{`"\ud800"`, true},
		{`"\ud800\n"`, true},
		{`"\ud800\ud800"`, true},
		{`"\ude00\ud83d"`, true},
		{`"x\ud83d"`, true},
		{`"\u00e9\u0041"`, false},
	}
	for _, tt := range tests {
		if got := LoneSurrogate([]byte(tt.in)); got != tt.want {
			t.Errorf("LoneSurrogate(%s) = %v, want %v", tt.in, got, tt.want)
		}
		// The parser agrees on the same text.
		if _, _, lone, ok := (&parser{raw: []byte(tt.in), is: &Issues{}}).str(); !ok || lone != tt.want {
			t.Errorf("parser on %s: lone %v, want %v", tt.in, lone, tt.want)
		}
	}
}

package commands

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/logbook-dev/logbook/domain"
)

// RFC 8785 §3.2.2 and §3.2.3: the sample input of the serialization section
// and the sorting example, with the outputs the RFC publishes.
var rfc8785Samples = []struct{ name, in, want string }{
	{"3.2.2 sample", `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
	{"3.2.3 sorting", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
}

// RFC 8785 Appendix B: IEEE 754 doubles (as hex) and their serialization.
var rfc8785Numbers = []struct{ bits, want string }{
	{"0000000000000000", "0"},
	{"8000000000000000", "0"},
	{"0000000000000001", "5e-324"},
	{"8000000000000001", "-5e-324"},
	{"7fefffffffffffff", "1.7976931348623157e+308"},
	{"ffefffffffffffff", "-1.7976931348623157e+308"},
	{"4340000000000000", "9007199254740992"},
	{"c340000000000000", "-9007199254740992"},
	{"4430000000000000", "295147905179352830000"},
	{"44b52d02c7e14af5", "9.999999999999997e+22"},
	{"44b52d02c7e14af6", "1e+23"},
	{"44b52d02c7e14af7", "1.0000000000000001e+23"},
	{"444b1ae4d6e2ef4e", "999999999999999700000"},
	{"444b1ae4d6e2ef4f", "999999999999999900000"},
	{"444b1ae4d6e2ef50", "1e+21"},
	{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
	{"3eb0c6f7a0b5ed8d", "0.000001"},
	{"41b3de4355555553", "333333333.3333332"},
	{"41b3de4355555554", "333333333.33333325"},
	{"41b3de4355555555", "333333333.3333333"},
	{"41b3de4355555556", "333333333.3333334"},
	{"41b3de4355555557", "333333333.33333343"},
	{"becbf647612f3696", "-0.0000033333333333333333"},
	{"43143ff3c1cb0959", "1424953923781206.2"},
}

func TestCanonicalJCSRFC8785Samples(t *testing.T) {
	for _, c := range rfc8785Samples {
		if got := string(canon(c.in)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestCanonicalJCSRFC8785Numbers(t *testing.T) {
	for _, c := range rfc8785Numbers {
		b, err := hex.DecodeString(c.bits)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(b))
		// The shortest literal that reads back as f, and a long one.
		for _, lit := range []string{strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'e', 25, 64)} {
			if got := string(canon("[" + lit + "]")); got != "["+c.want+"]" {
				t.Errorf("%s (%s): got %s, want [%s]", c.bits, lit, got, c.want)
			}
		}
	}
}

// TestArgsSHA256 pins both versions' rules on the cases where they differ,
// and that arguments which are not I-JSON are hashed as received.
func TestArgsSHA256(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     string
		v1, v2 string // the hashed bytes
	}{
		{"empty", ``, `{}`, `{}`},
		{"html characters", `{"a":"<&>"}`, `{"a":"\u003c\u0026\u003e"}`, `{"a":"<&>"}`},
		{"numbers", `{"n":1.50,"m":1E2}`, `{"m":1E2,"n":1.50}`, `{"m":100,"n":1.5}`},
		{"U+2028", `{"a":"` + "\u2028" + `"}`, `{"a":"\u2028"}`, "{\"a\":\"\u2028\"}"},
		{"repeated key", `{"a":1,"a":2}`, `{"a":2}`, `{"a":1,"a":2}`},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", `{"a":"` + "\ufffd" + `"}`, "{\"a\":\"\xff\"}"},
		{"broken surrogate pair", `{"a":"\ud800\u0041"}`, `{"a":"` + "\ufffdA" + `"}`, `{"a":"\ud800\u0041"}`},
		{"number out of range", `{"a":1e400}`, `{"a":1e400}`, `{"a":1e400}`},
		{"not JSON", `{"a":`, `{"a":`, `{"a":`},
	} {
		for _, v := range []struct {
			version uint16
			hashed  string
		}{{1, c.v1}, {2, c.v2}} {
			got, err := ArgsSHA256(v.version, []byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if want := sha(v.hashed); got != want {
				t.Errorf("%s v%d: %s, want SHA-256 of %s", c.name, v.version, got, v.hashed)
			}
		}
	}
	if _, err := ArgsSHA256(3, []byte(`{}`)); err == nil {
		t.Error("version 3 has a hash rule")
	}
}

// FuzzCanonicalJCS checks, for any input, that the canonical form is either
// the input itself (not I-JSON) or valid JSON meaning the same as the input,
// and a fixed point.
func FuzzCanonicalJCS(f *testing.F) {
	for _, c := range rfc8785Samples {
		f.Add(c.in)
	}
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2.5e3,-0,"x\u00e9"]}`, `{"b":1,"a":{"d":null,"c":true}}`, `"\ud83d\ude00"`, `{"a":1,"a":2}`, "{\"\xff\":1}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if in == "" {
			return // "{}", TestArgsSHA256
		}
		c := canon(in)
		// Our form is the library's, guarded to I-JSON (the rule of
		// version 2 since its first event).
		if want := canonicalJCSText([]byte(in)); string(c) != string(want) {
			t.Fatalf("canonical form of %q is %q, the library's %q", in, c, want)
		}
		if string(c) == in {
			return
		}
		if !json.Valid([]byte(in)) || !utf8.Valid([]byte(in)) || domain.LoneSurrogate([]byte(in)) {
			t.Fatalf("%q is not I-JSON but was canonicalised to %q", in, c)
		}
		if !json.Valid(c) || !utf8.Valid(c) {
			t.Fatalf("canonical form %q of %q is not valid UTF-8 JSON", c, in)
		}
		var a, b any
		if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal(c, &b) != nil {
			t.Fatalf("cannot decode %q or %q", in, c)
		}
		if string(mustMarshal(t, noNegativeZero(a))) != string(mustMarshal(t, b)) {
			t.Fatalf("canonical form %q means something else than %q", c, in)
		}
		if again := canon(string(c)); string(again) != string(c) {
			t.Fatalf("not a fixed point: %q -> %q", c, again)
		}
	})
}

// canon is the version 2 canonical form of in.
func canon(in string) []byte { return canonicalJCS([]byte(in)) }

// noNegativeZero replaces -0 by 0, as RFC 8785 serializes it.
func noNegativeZero(v any) any {
	switch x := v.(type) {
	case float64:
		if x == 0 {
			return 0.0
		}
	case []any:
		for i := range x {
			x[i] = noNegativeZero(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = noNegativeZero(x[k])
		}
	}
	return v
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCanonicalJCSPastTheLimits: arguments deeper or larger than the tree
// is kept for (refused calls) are canonicalised as any others, as the
// library does — but in O(n log n): the library sorts an object's members
// in quadratic time, and 300,000 of them took minutes of CPU per call.
func TestCanonicalJCSPastTheLimits(t *testing.T) {
	deep := strings.Repeat(`{"b":1,"a":`, domain.MaxDepth+5) + `[2.50,"x"]` + strings.Repeat(`}`, domain.MaxDepth+5)
	a := domain.ParseArgs([]byte(deep))
	if !a.OverLimit() {
		t.Fatal("the deep arguments are within the limits: the test shows nothing")
	}
	if got, want := canonicalJCS(a.Raw()), canonicalJCSText([]byte(deep)); string(got) != string(want) {
		t.Fatalf("deep arguments: %.80q, the library's %.80q", got, want)
	}
	// Past encoding/json's 10,000 levels the library takes nothing as
	// JSON; neither does Canonical (the transports stop at 1,000).
	for _, pairs := range []int{4999, 5000, 5001} {
		deep := []byte(strings.Repeat(`[{"b":1,"a":`, pairs) + `0` + strings.Repeat(`}]`, pairs))
		if got, want := canonicalJCS(deep), canonicalJCSText(deep); string(got) != string(want) {
			t.Errorf("%d levels: %.40q, the library's %.40q", 2*pairs, got, want)
		}
	}
	var b strings.Builder
	b.WriteString("{")
	n := domain.MaxValues * 3
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%07d":%d`, n-i, i) // in reverse order
	}
	b.WriteString("}")
	big := domain.ParseArgs([]byte(b.String()))
	if !big.OverLimit() {
		t.Fatal("the large arguments are within the limits")
	}
	c := canonicalJCS(big.Raw())
	if !bytes.HasPrefix(c, []byte(`{"k0000001":`+strconv.Itoa(n-1)+`,"k0000002":`)) || len(c) != b.Len() {
		t.Fatalf("large arguments not canonical (sorted, same size): %.80q… (%d bytes of %d)", c, len(c), b.Len())
	}
}

// canonicalJCSText is the RFC 8785 form of raw read by the library, or raw
// itself when raw is not I-JSON: the reference domain.Canonical is
// checked against. The library passes invalid UTF-8 through, turns a
// broken surrogate pair into U+FFFD and reads some invalid JSON (`{"`
// becomes {}, found by FuzzCanonicalJCS); all three are refused here
// first, so that two different argument texts never share a canonical form.
func canonicalJCSText(raw []byte) []byte {
	if !json.Valid(raw) || !utf8.Valid(raw) || domain.LoneSurrogate(raw) {
		return raw
	}
	c, err := jcs.Transform(raw)
	if err != nil {
		return raw
	}
	return c
}

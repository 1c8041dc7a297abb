package ledger_test

import (
	"bytes"
	"crypto/sha256"
	"reflect"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/vmihailenco/msgpack/v5"
)

// pos is a Positional payload with one field of each supported type.
type pos struct {
	ID    string        `json:"id"`
	Sum   ledger.Digest `json:"sum"`
	N     uint64        `json:"n"`
	D     int64         `json:"d"`
	Note  string        `json:"note,omitempty"`
	Tags  []string      `json:"tags,omitempty"`
	Extra ledger.Digest `json:"extra,omitempty"`
}

func (p *pos) PayloadFields() []ledger.Field {
	return []ledger.Field{
		{Name: "id", Ptr: &p.ID},
		{Name: "sum", Ptr: &p.Sum},
		{Name: "n", Ptr: &p.N},
		{Name: "d", Ptr: &p.D},
		{Name: "note", Ptr: &p.Note, Optional: true},
		{Name: "tags", Ptr: &p.Tags, Optional: true},
		{Name: "extra", Ptr: &p.Extra, Optional: true},
	}
}

// posMap is pos without its positional form: how an older version stored it.
type posMap pos

// TestPositional: a Positional payload is written as the array of its
// fields (optional empty ones nil, trailing nils left out), whether passed
// by value or by pointer, and reads back from that array, from its older
// map form, and from an array with more elements than it knows.
func TestPositional(t *testing.T) {
	sum := sha256.Sum256([]byte("x"))
	full := pos{ID: "a", Sum: ledger.DigestOf(sum), N: 300, D: -2, Note: "n", Tags: []string{"t"}, Extra: ledger.DigestOf(sum)}
	cases := []struct {
		name string
		p    pos
		want []byte
	}{
		{"trailing empties left out", pos{ID: "a", N: 1},
			[]byte{0x94, 0xa1, 'a', 0xc0, 0x01, 0x00}},
		{"an empty optional field before a set one is nil", pos{ID: "", N: 0, D: 5, Tags: []string{"t"}},
			[]byte{0x96, 0xa0, 0xc0, 0x00, 0x05, 0xc0, 0x91, 0xa1, 't'}},
		{"every field", full, nil},
	}
	for _, c := range cases {
		for _, v := range []any{c.p, &c.p} {
			b, err := ledger.EncodePayload(v)
			if err != nil {
				t.Fatal(err)
			}
			if c.want != nil && !bytes.Equal(b, c.want) {
				t.Errorf("%s (%T): encoded % x, want % x", c.name, v, b, c.want)
			}
			got := pos{ID: "stale", Note: "stale", Tags: []string{"stale"}}
			if err := ledger.DecodePayload(b, &got); err != nil || !reflect.DeepEqual(got, c.p) {
				t.Errorf("%s (%T): decoded %+v, %v; want %+v", c.name, v, got, err, c.p)
			}
		}
	}
	// The map form (an older version) reads into the same struct.
	m, err := ledger.EncodePayload((*posMap)(&full))
	if err != nil || m[0]&0xf0 != 0x80 {
		t.Fatalf("map form % x, %v", m, err)
	}
	var got pos
	if err := ledger.DecodePayload(m, &got); err != nil || !reflect.DeepEqual(got, full) {
		t.Errorf("map form decoded %+v, %v; want %+v", got, err, full)
	}
	// Elements past the known fields (a later version's) are skipped.
	later, _ := msgpack.Marshal([]any{"a", nil, 1, 0, nil, nil, nil, "new", []any{1, 2}})
	got = pos{}
	if err := ledger.DecodePayload(later, &got); err != nil || !reflect.DeepEqual(got, pos{ID: "a", N: 1}) {
		t.Errorf("longer array decoded %+v, %v", got, err)
	}
	// A wrong type in an element is an error naming the field.
	bad, _ := msgpack.Marshal([]any{"a", nil, "not a number"})
	if err := ledger.DecodePayload(bad, &got); err == nil || !bytes.Contains([]byte(err.Error()), []byte("field n")) {
		t.Errorf("bad element: %v, want an error naming field n", err)
	}
}

// TestNamedFields: an array payload decoded without its type reads as the
// map of its fields' names, nil and unknown elements left out, a
// non-array or a type without fields not at all.
func TestNamedFields(t *testing.T) {
	b, err := ledger.EncodePayload(&pos{ID: "a", N: 7, Tags: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := ledger.DecodePayload(b, &v); err != nil {
		t.Fatal(err)
	}
	fs := (&pos{}).PayloadFields()
	m, ok := ledger.NamedFields(v, fs)
	want := map[string]any{"id": "a", "n": int8(7), "d": int8(0), "tags": []any{"t"}}
	if !ok || !reflect.DeepEqual(m, want) {
		t.Errorf("NamedFields = %#v, %v; want %#v", m, ok, want)
	}
	if _, ok := ledger.NamedFields(v, nil); ok {
		t.Error("an array without fields named")
	}
	if _, ok := ledger.NamedFields(map[string]any{}, fs); ok {
		t.Error("a map named as an array")
	}
}

// coded is a Positional payload with a field stored as a code.
type coded struct {
	Kind string `json:"kind"`
	N    uint64 `json:"n"`
}

var kindCodes = []string{1: "first", 2: "second", 200: "far"}

func (p *coded) PayloadFields() []ledger.Field {
	return []ledger.Field{{Name: "kind", Ptr: &p.Kind, Codes: kindCodes}, {Name: "n", Ptr: &p.N}}
}

// TestCodedField: a value of a field's Codes is written as its code, any
// other as the string; both read back, and so does the string of a coded
// value (as older versions stored it); NamedFields shows the value; an
// integer that is no code is an error.
func TestCodedField(t *testing.T) {
	for _, c := range []struct {
		kind string
		want []byte
	}{
		{"second", []byte{0x92, 0x02, 0x07}},
		{"far", []byte{0x92, 0xcc, 200, 0x07}},
		{"other", []byte{0x92, 0xa5, 'o', 't', 'h', 'e', 'r', 0x07}},
		{"", []byte{0x92, 0xa0, 0x07}},
	} {
		b, err := ledger.EncodePayload(&coded{Kind: c.kind, N: 7})
		if err != nil || !bytes.Equal(b, c.want) {
			t.Errorf("%q stored as % x (%v), want % x", c.kind, b, err, c.want)
		}
		var got coded
		if err := ledger.DecodePayload(b, &got); err != nil || got.Kind != c.kind {
			t.Errorf("%q read back as %q (%v)", c.kind, got.Kind, err)
		}
		var generic any
		if err := ledger.DecodePayload(b, &generic); err != nil {
			t.Fatal(err)
		}
		if m, ok := ledger.NamedFields(generic, (&coded{}).PayloadFields()); !ok || m["kind"] != c.kind {
			t.Errorf("%q named as %v", c.kind, m)
		}
	}
	var got coded
	if err := ledger.DecodePayload([]byte{0x92, 0xa6, 's', 'e', 'c', 'o', 'n', 'd', 0x07}, &got); err != nil || got.Kind != "second" {
		t.Errorf("a coded value as its string read back as %q (%v)", got.Kind, err)
	}
	for _, b := range [][]byte{{0x92, 0x00, 0x07}, {0x92, 0x03, 0x07}, {0x92, 0xcc, 201, 0x07}, {0x92, 0xff, 0x07}} {
		if err := ledger.DecodePayload(b, &got); err == nil {
			t.Errorf("% x: code read as %q, want an error", b, got.Kind)
		}
	}
}

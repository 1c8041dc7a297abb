package events

import (
	"reflect"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// TestPositionalFields: each positional payload lists every field of its
// struct once, under the field's json name, pointing at that field, and
// optional exactly when the json tag omits it empty (so replay's names and
// the map form older versions wrote agree).
func TestPositionalFields(t *testing.T) {
	for _, c := range []struct {
		typ     string
		version uint16
		v       ledger.Positional
	}{
		{TypeThoughtRecorded, 2, &ThoughtRecorded{}},
		{TypeToolCalled, 3, &ToolCalled{}},
	} {
		fs := c.v.PayloadFields()
		rv := reflect.ValueOf(c.v).Elem()
		if rv.NumField() != len(fs) {
			t.Errorf("%s: %d fields listed, the struct has %d", c.typ, len(fs), rv.NumField())
		}
		byAddr := map[uintptr]reflect.StructField{}
		for i := range rv.NumField() {
			byAddr[rv.Field(i).Addr().Pointer()] = rv.Type().Field(i)
		}
		for _, f := range fs {
			sf, ok := byAddr[reflect.ValueOf(f.Ptr).Pointer()]
			if !ok {
				t.Errorf("%s: field %s points outside the struct", c.typ, f.Name)
				continue
			}
			delete(byAddr, reflect.ValueOf(f.Ptr).Pointer())
			name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name != f.Name || (opts == "omitempty") != f.Optional {
				t.Errorf("%s: field %s (optional %v) points at %s `json:%q`", c.typ, f.Name, f.Optional, sf.Name, sf.Tag.Get("json"))
			}
		}
		got := PositionalFields(c.typ, c.version)
		if len(got) != len(fs) {
			t.Fatalf("PositionalFields(%s, %d) = %d fields, want %d", c.typ, c.version, len(got), len(fs))
		}
		for i := range got {
			if got[i].Name != fs[i].Name || got[i].Optional != fs[i].Optional {
				t.Errorf("PositionalFields(%s, %d)[%d] = %s, want %s", c.typ, c.version, i, got[i].Name, fs[i].Name)
			}
		}
		if PositionalFields(c.typ, c.version-1) != nil {
			t.Errorf("PositionalFields(%s, %d): the map version has fields", c.typ, c.version-1)
		}
	}
	if PositionalFields(TypeTaskCreated, CurrentVersion(TypeTaskCreated)) != nil {
		t.Error("task.created is a map, not positional")
	}
}

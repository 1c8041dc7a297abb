package commands

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/domain"
)

// inputFields maps the json names of a command's input struct to its fields.
type inputFields map[string][]int

func fieldsOf(t reflect.Type) inputFields {
	fields := inputFields{}
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || f.Anonymous {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Index
	}
	return fields
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// decode sets the fields of the struct dst points to from the arguments
// object, by their json names, as encoding/json would decode its text
// (an empty array is an empty slice, not nil; null leaves a value as it
// is and a pointer nil; a json.RawMessage gets the value's bytes as sent).
// The object has passed the command's rules, so every member is a known
// field of the right kind: what is left to refuse is a number the Go
// field cannot hold.
func (fields inputFields) decode(obj *domain.Value, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	for _, m := range obj.Members() {
		index, ok := fields[m.Key]
		if !ok {
			return Invalid(domain.Clip(m.Key), "unknown field")
		}
		if err := decodeValue(&m.Value, v.FieldByIndex(index), m.Key); err != nil {
			return err
		}
	}
	return nil
}

func decodeValue(v *domain.Value, dst reflect.Value, path string) error {
	if dst.Type() == rawMessageType {
		dst.SetBytes(append([]byte(nil), v.Raw()...))
		return nil
	}
	if v.Kind() == domain.Null {
		switch dst.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			dst.SetZero()
		}
		return nil
	}
	switch dst.Kind() {
	case reflect.Pointer:
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		return decodeValue(v, dst.Elem(), path)
	case reflect.String:
		if v.Kind() == domain.String {
			dst.SetString(v.Text())
			return nil
		}
	case reflect.Bool:
		if v.Kind() == domain.Boolean {
			dst.SetBool(v.Bool())
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Kind() == domain.Number {
			text, _ := v.Integer() // "" for a fraction: an error
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil || dst.OverflowInt(n) {
				return numberIssue(v, dst, path)
			}
			dst.SetInt(n)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Kind() == domain.Number {
			text, _ := v.Integer() // "" for a fraction: an error
			n, err := strconv.ParseUint(text, 10, 64)
			if err != nil || dst.OverflowUint(n) {
				return numberIssue(v, dst, path)
			}
			dst.SetUint(n)
			return nil
		}
	case reflect.Float32, reflect.Float64:
		if v.Kind() == domain.Number {
			f, err := strconv.ParseFloat(v.Text(), dst.Type().Bits())
			if err != nil || dst.OverflowFloat(f) {
				return numberIssue(v, dst, path)
			}
			if f == 0 {
				f = 0 // -0 (or -1e-400) is 0: stored and answered as 0, never "-0"
			}
			dst.SetFloat(f)
			return nil
		}
	case reflect.Slice:
		if v.Kind() == domain.Array {
			items := v.Items()
			s := reflect.MakeSlice(dst.Type(), len(items), len(items))
			for i := range items {
				if err := decodeValue(&items[i], s.Index(i), path); err != nil {
					return err
				}
			}
			dst.Set(s)
			return nil
		}
	}
	return Invalid(path, "must be %s, not %s", dst.Kind(), jsonKind(v.Kind()))
}

// numberIssue is what encoding/json says of a number its Go field cannot hold.
func numberIssue(v *domain.Value, dst reflect.Value, path string) error {
	return Invalid(path, "must be %s, not number %s", dst.Kind(), domain.Clip(v.Text()))
}

// jsonKind names a JSON value's kind as encoding/json's type errors do.
func jsonKind(k domain.Kind) string {
	if k == domain.Boolean {
		return "bool"
	}
	return string(k)
}

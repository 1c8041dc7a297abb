package ledger

import (
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// A Positional payload is stored as a msgpack array of its fields' values
// in the order PayloadFields lists them, not as a map keyed by their
// names: the names, the same in every event, cost more than most values
// (thought.recorded from payload version 2, tool.called from 3; the
// layout is in docs/AUDITING.md). An optional field left empty is nil in
// the array, and the array ends after its last field that is not nil. A
// reader takes a missing element, or nil, as the field's zero value, and
// ignores elements past the ones it knows (a later version's). The names
// are what replay shows the fields under (NamedFields).
//
// DecodePayload reads either form into a Positional payload: an array
// positionally, a map (as older versions stored it) by names, so every
// version of a type decodes into the same struct.
type Positional interface {
	PayloadFields() []Field
}

// Field is one element of a Positional payload's array.
type Field struct {
	Name     string // its name in a map payload (the struct field's json name)
	Ptr      any    // *string, *Digest, *uint64, *int64 or *[]string: the value read and written
	Optional bool   // empty is stored as nil (and a map payload omitted it)
	// Codes, for a *string: a value Codes holds is stored as its index
	// there, an unsigned integer (one byte where a tool name took 15), any
	// other as the string. A reader takes either (older versions stored
	// strings); an integer that is not an index of a value is malformed.
	// Codes[0] is not a code. The table only ever grows, each new code
	// with a new payload version (an older reader refuses it).
	Codes []string
}

// code returns the index of s in codes, 0 if it has none.
func code(codes []string, s string) uint64 {
	for i, c := range codes {
		if i > 0 && c == s && s != "" {
			return uint64(i)
		}
	}
	return 0
}

// Decoded returns the value code c stands for; ok false if it is none.
func (f Field) Decoded(c uint64) (s string, ok bool) {
	if c == 0 || c >= uint64(len(f.Codes)) || f.Codes[c] == "" {
		return "", false
	}
	return f.Codes[c], true
}

// empty reports whether f's value is its zero value (an empty slice too).
func (f Field) empty() (bool, error) {
	switch p := f.Ptr.(type) {
	case *string:
		return *p == "", nil
	case *Digest:
		return *p == "", nil
	case *uint64:
		return *p == 0, nil
	case *int64:
		return *p == 0, nil
	case *[]string:
		return len(*p) == 0, nil
	}
	return false, fmt.Errorf("field %s: unsupported type %T", f.Name, f.Ptr)
}

// encodeFields writes fs as a msgpack array: an optional empty field as
// nil, the nils at its end left out.
func encodeFields(enc *msgpack.Encoder, fs []Field) error {
	absent := make([]bool, len(fs))
	n := 0
	for i, f := range fs {
		e, err := f.empty()
		if err != nil {
			return err
		}
		absent[i] = e && f.Optional
		if !absent[i] {
			n = i + 1
		}
	}
	if err := enc.EncodeArrayLen(n); err != nil {
		return err
	}
	for i, f := range fs[:n] {
		if absent[i] {
			if err := enc.EncodeNil(); err != nil {
				return err
			}
			continue
		}
		var err error
		switch p := f.Ptr.(type) {
		case *string:
			if c := code(f.Codes, *p); c > 0 {
				err = enc.EncodeUint(c)
			} else {
				err = enc.EncodeString(*p)
			}
		case *Digest:
			err = p.EncodeMsgpack(enc)
		case *uint64:
			err = enc.EncodeUint(*p)
		case *int64:
			err = enc.EncodeInt(*p)
		case *[]string:
			err = enc.Encode(*p)
		}
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

// zero sets f's value to its zero value.
func (f Field) zero() {
	switch p := f.Ptr.(type) {
	case *string:
		*p = ""
	case *Digest:
		*p = ""
	case *uint64:
		*p = 0
	case *int64:
		*p = 0
	case *[]string:
		*p = nil
	}
}

// decodeFields reads a msgpack array into fs, positionally: nil or a
// missing element makes a field zero; elements past fs are skipped.
func decodeFields(dec *msgpack.Decoder, fs []Field) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	for i := max(n, 0); i < len(fs); i++ {
		fs[i].zero()
	}
	for i := range max(n, 0) {
		if i >= len(fs) {
			if err := dec.Skip(); err != nil {
				return err
			}
			continue
		}
		c, err := dec.PeekCode()
		if err != nil {
			return err
		}
		switch p, coded := fs[i].Ptr.(*string); {
		case c == msgpcode.Nil:
			fs[i].zero()
			err = dec.Skip()
		case coded && fs[i].Codes != nil && (msgpcode.IsFixedNum(c) || c >= msgpcode.Uint8 && c <= msgpcode.Int64):
			var n uint64
			if n, err = dec.DecodeUint64(); err == nil {
				var ok bool
				if *p, ok = fs[i].Decoded(n); !ok {
					err = fmt.Errorf("code %d stands for no value", n)
				}
			}
		default:
			err = dec.Decode(fs[i].Ptr)
		}
		if err != nil {
			return fmt.Errorf("field %s: %w", fs[i].Name, err)
		}
	}
	return nil
}

// positional returns v as a Positional payload: v itself, or, for a
// struct value whose pointer is one, a pointer to a copy of it (so a
// payload passed by value is written as its type's array all the same).
func positional(v any) (Positional, bool) {
	if p, ok := v.(Positional); ok {
		return p, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Struct || !reflect.PointerTo(rv.Type()).Implements(positionalType) {
		return nil, false
	}
	cp := reflect.New(rv.Type())
	cp.Elem().Set(rv)
	return cp.Interface().(Positional), true
}

var positionalType = reflect.TypeFor[Positional]()

// decodePositional decodes b into p: an array positionally, any other form
// (a map) with the generic reader d.
func decodePositional(d *msgpack.Decoder, b []byte, p Positional) error {
	if len(b) > 0 && isArray(b[0]) {
		return decodeFields(d, p.PayloadFields())
	}
	return d.Decode(p)
}

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

// DecodeWith decodes a payload b into v with d, a decoder already reading
// b and set up as DecodePayload's (json struct tags): a Positional v from
// either of its forms. It is DecodePayload for callers that keep their own
// decoders.
func DecodeWith(d *msgpack.Decoder, b []byte, v any) error {
	if p, ok := v.(Positional); ok {
		return decodePositional(d, b, p)
	}
	return d.Decode(v)
}

// EncodeWith encodes payload v with enc, an encoder set up as
// EncodePayload's (json struct tags, sorted map keys, compact integers):
// a Positional payload as its array. It is EncodePayload for callers that
// keep their own encoders.
func EncodeWith(enc *msgpack.Encoder, v any) error {
	if p, ok := positional(v); ok {
		return encodeFields(enc, p.PayloadFields())
	}
	return enc.Encode(v)
}

// NamedFields returns a decoded array payload (elements as DecodePayload
// reads them into an interface) as a map from the names in fs to its
// elements, leaving out nil or missing ones and any past fs, a code (Field.
// Codes) as the value it stands for: the map the payload would have been
// before it was positional. ok is false if v is
// not an array or fs is nil.
func NamedFields(v any, fs []Field) (m map[string]any, ok bool) {
	arr, ok := v.([]any)
	if !ok || fs == nil {
		return nil, false
	}
	m = make(map[string]any, len(arr))
	for i, e := range arr {
		if i < len(fs) && e != nil {
			if fs[i].Codes != nil {
				if c, ok := asUint(e); ok {
					if s, ok := fs[i].Decoded(c); ok {
						e = s
					}
				}
			}
			m[fs[i].Name] = e
		}
	}
	return m, true
}

// asUint is a non-negative integer decoded into an interface as a uint64.
func asUint(v any) (uint64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return uint64(rv.Int()), rv.Int() >= 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint(), true
	}
	return 0, false
}

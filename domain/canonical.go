package domain

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Canonical is the RFC 8785 (JCS) canonical form of the JSON text raw:
// white space dropped, object members sorted by the UTF-16 code units of
// their names, strings with only the escapes JCS makes, numbers as
// ECMAScript writes doubles. ok is false when raw is not I-JSON as RFC 8785
// requires: not one JSON value, invalid UTF-8, an unpaired UTF-16
// surrogate escape, a member name repeated in an object, or a number that
// is not a finite IEEE 754 double; and when it nests deeper than
// maxNesting, which encoding/json (and so the library's Transform)
// refuses too.
//
// It reads text of any size without a value tree (a call's arguments
// past MaxValues are hashed too): one pass indexes the objects' members, a
// second writes the values in place, an object's in the order of its
// sorted members. Time is O(n log n); memory is the output, the member
// names, 32 bytes a member and an object, and a stack frame a level of
// nesting.
func Canonical(raw []byte) (c []byte, ok bool) {
	x := indexes.Get().(*jsonIndex)
	defer x.release()
	if !x.index(raw) || x.dirty {
		return nil, false
	}
	slices.SortFunc(x.members, func(a, b indexedMember) int {
		if a.object != b.object {
			return cmp.Compare(a.object, b.object)
		}
		if c := compareUTF16(x.key(a), x.key(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.at, b.at)
	})
	for i, m := range x.members {
		o := &x.objects[m.object]
		if o.n == 0 {
			o.first = i
		} else if string(x.key(x.members[i-1])) == string(x.key(m)) {
			return nil, false // a repeated name
		}
		o.n++
	}
	return x.write(make([]byte, 0, len(raw)), x.root)
}

// TopStrings are the texts of the last members of the object raw named
// keys, where they are strings, as encoding/json decodes raw into a map
// (invalid UTF-8 and unpaired surrogates as U+FFFD); "" for a key with no
// string member. It is nil when raw is not a JSON object or when
// encoding/json would fail on it: a number beyond a double, nesting
// deeper than maxNesting. Like Canonical, it reads text of any size
// without a value tree.
func TopStrings(raw []byte, keys ...string) []string {
	x := indexes.Get().(*jsonIndex)
	defer x.release()
	if !x.index(raw) || raw[x.root] != '{' {
		return nil
	}
	texts := make([]string, len(keys))
	for _, m := range x.members { // in the order sent
		if m.object != 0 {
			continue
		}
		if i := slices.Index(keys, string(x.key(m))); i >= 0 {
			texts[i] = ""
			if x.p.i = m.at; raw[m.at] == '"' {
				b, _, _, _ := x.p.strBytes()
				texts[i] = string(b)
			}
		}
	}
	return texts
}

// jsonIndex is JSON text read once: where each object is, and its members.
type jsonIndex struct {
	p       parser
	root    int             // where the value begins
	objects []indexedObject // by where they begin
	members []indexedMember // in the order sent; Canonical sorts them
	names   []byte          // the member names, decoded, end to end
	dirty   bool            // a string is not valid UTF-8 or escapes a lone surrogate
	depth   int             // of the value being read
	issues  Issues          // where the parser records text that is not JSON
}

// indexedObject is where an object's text is, and (once Canonical sorted
// them) which members are its: members[first:first+n].
type indexedObject struct{ start, end, first, n int }

// indexedMember is a member of objects[object]: its name
// (names[name:nameEnd]) and where its value begins.
type indexedMember struct{ object, name, nameEnd, at int }

func (o indexedObject) members(x *jsonIndex) []indexedMember {
	return x.members[o.first : o.first+o.n]
}

func (x *jsonIndex) key(m indexedMember) []byte { return x.names[m.name:m.nameEnd] }

// maxNesting is the deepest text Canonical and TopStrings read, as
// encoding/json: the transports refuse messages nested past 1,000 levels.
const maxNesting = 10000

// indexes keeps indexes of the usual arguments' size for reuse: every
// call's arguments are hashed (Canonical).
var indexes = sync.Pool{New: func() any { return new(jsonIndex) }}

// index reads raw into x; false if raw is not one JSON value.
func (x *jsonIndex) index(raw []byte) bool {
	x.issues = Issues{list: x.issues.list[:0]}
	x.p = parser{raw: raw, is: &x.issues, buf: x.p.buf[:0]}
	x.objects, x.members, x.names, x.dirty, x.depth = x.objects[:0], x.members[:0], x.names[:0], false, 0
	x.p.skipSpace()
	x.root = x.p.i
	if !x.value() {
		return false
	}
	x.p.skipSpace()
	return x.p.i == len(raw)
}

// release puts x back in the pool, unless a large text made it grow: that
// is left to the collector.
func (x *jsonIndex) release() {
	const most = 1 << 12
	if cap(x.objects) > most || cap(x.members) > most || cap(x.names) > 16*most || cap(x.p.buf) > 16*most {
		return
	}
	x.p.raw = nil
	indexes.Put(x)
}

func (x *jsonIndex) value() bool {
	p := &x.p
	if p.i >= len(p.raw) {
		return false
	}
	switch c := p.raw[p.i]; {
	case c == '{' || c == '[':
		if x.depth++; x.depth > maxNesting {
			return false
		}
		defer func() { x.depth-- }()
		if c == '{' {
			return x.object()
		}
		p.i++
		if p.closes(']') {
			return true
		}
		for {
			if !x.value() {
				return false
			}
			if done, ok := p.next(']'); done || !ok {
				return ok
			}
		}
	case c == '"':
		_, bad, lone, ok := p.strBytes()
		x.dirty = x.dirty || bad || lone
		return ok
	case c == '-' || '0' <= c && c <= '9':
		start := p.i
		if !p.number() {
			return false
		}
		if lit := p.raw[start:p.i]; !smallInteger(lit) {
			// Beyond a double (1e400): encoding/json refuses it, and
			// RFC 8785 has no form for it.
			_, err := strconv.ParseFloat(string(lit), 64)
			return err == nil
		}
		return true
	}
	_, _, ok := p.literal()
	return ok
}

func (x *jsonIndex) object() bool {
	p := &x.p
	k := len(x.objects)
	x.objects = append(x.objects, indexedObject{start: p.i})
	p.i++
	if !p.closes('}') {
		for {
			if p.i >= len(p.raw) || p.raw[p.i] != '"' {
				return false
			}
			name, bad, lone, ok := p.strBytes()
			if !ok {
				return false
			}
			x.dirty = x.dirty || bad || lone
			if p.skipSpace(); p.i >= len(p.raw) || p.raw[p.i] != ':' {
				return false
			}
			p.i++
			p.skipSpace()
			x.members = append(x.members, indexedMember{object: k, name: len(x.names), nameEnd: len(x.names) + len(name), at: p.i})
			x.names = append(x.names, name...)
			if !x.value() {
				return false
			}
			if done, ok := p.next('}'); !ok {
				return false
			} else if done {
				break
			}
		}
	}
	x.objects[k].end = p.i
	return true
}

// write appends the canonical form of the value at i; false if a number
// is not a finite double.
func (x *jsonIndex) write(b []byte, i int) ([]byte, bool) {
	p := &x.p
	p.i = i
	ok := true
	switch c := p.raw[i]; {
	case c == '{':
		k, _ := slices.BinarySearchFunc(x.objects, i, func(o indexedObject, at int) int { return cmp.Compare(o.start, at) })
		b = append(b, '{')
		for n, m := range x.objects[k].members(x) {
			if n > 0 {
				b = append(b, ',')
			}
			b = append(appendJCSString(b, x.key(m)), ':')
			if b, ok = x.write(b, m.at); !ok {
				return b, false
			}
		}
		p.i = x.objects[k].end // where the caller reads on
		return append(b, '}'), true
	case c == '[':
		b = append(b, '[')
		p.i++
		if p.closes(']') {
			return append(b, ']'), true
		}
		for n := 0; ; n++ {
			if n > 0 {
				b = append(b, ',')
			}
			if b, ok = x.write(b, p.i); !ok {
				return b, false
			}
			if done, _ := p.next(']'); done {
				return append(b, ']'), true
			}
		}
	case c == '"':
		s, _, _, _ := p.strBytes()
		return appendJCSString(b, s), true
	case c == '-' || '0' <= c && c <= '9':
		p.number()
		if lit := p.raw[i:p.i]; smallInteger(lit) {
			if string(lit) == "-0" {
				lit = lit[1:]
			}
			return append(b, lit...), true // as ECMAScript writes it
		}
		f, err := strconv.ParseFloat(string(p.raw[i:p.i]), 64)
		if err != nil {
			return b, false
		}
		s, err := jcs.NumberToJSON(f)
		if err != nil {
			return b, false
		}
		return append(b, s...), true
	}
	text, _, _ := p.literal()
	return append(b, text...), true
}

// smallInteger reports whether a JSON number literal is an integer of at
// most 15 digits, which a double holds exactly.
func smallInteger(lit []byte) bool {
	if len(lit) > 0 && lit[0] == '-' {
		lit = lit[1:]
	}
	if len(lit) > 15 {
		return false
	}
	for _, c := range lit {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendJCSString quotes s as RFC 8785 does: \b \f \n \r \t \" \\ as short
// escapes, other control characters as \u00xx, everything else as is.
func appendJCSString(b []byte, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// compareUTF16 orders valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts member names.
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			return cmp.Compare(utf16Key(ra), utf16Key(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// utf16Key orders runes as their UTF-16 code units do: a rune beyond the
// BMP sorts by its surrogates, so before U+E000–U+FFFF.
func utf16Key(r rune) rune {
	if hi, lo := utf16.EncodeRune(r); hi != utf8.RuneError {
		return hi<<10 | (lo - 0xDC00)
	}
	return r << 10
}

package domain

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// parser reads a call's arguments in one pass (ParseArgs): a recursive
// descent over the bytes, building the Value tree and recording issues.
type parser struct {
	raw       []byte
	i         int
	is        *Issues
	values    int // members and items so far, up to MaxValues
	overLimit bool
	buf       []byte // scratch for strings with escapes
}

func (p *parser) syntax() { p.is.Add("", "arguments are not valid JSON") }

func (p *parser) skipSpace() {
	for p.i < len(p.raw) {
		switch p.raw[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// value reads the value at p.i into v; false means parsing stops (the
// issue is recorded).
func (p *parser) value(v *Value, path at, depth int) bool {
	if p.i >= len(p.raw) {
		p.syntax()
		return false
	}
	start := p.i
	switch c := p.raw[p.i]; {
	case c == '{' || c == '[':
		if depth > MaxDepth {
			p.is.Add(path.String(), "nests deeper than "+strconv.Itoa(MaxDepth)+" levels")
			p.overLimit = true
			return false
		}
		p.i++
		var ok bool
		if c == '{' {
			v.kind = Object
			ok = p.object(v, path, depth)
		} else {
			v.kind = Array
			ok = p.array(v, path, depth)
		}
		v.raw = p.raw[start:p.i]
		return ok
	case c == '"':
		s, bad, lone, ok := p.str()
		if !ok {
			return false
		}
		p.textIssue(path, bad, lone)
		v.kind, v.text, v.raw = String, s, p.raw[start:p.i]
		return true
	case c == '-' || '0' <= c && c <= '9':
		if !p.number() {
			p.syntax()
			return false
		}
		v.kind, v.raw = Number, p.raw[start:p.i]
		v.text = string(v.raw)
		return true
	}
	text, kind, ok := p.literal()
	if !ok {
		p.syntax()
		return false
	}
	v.kind, v.raw = kind, p.raw[start:p.i]
	if kind == Boolean {
		v.text = text
	}
	return true
}

// literal reads true, false or null at p.i; ok is false if none is there.
func (p *parser) literal() (text string, kind Kind, ok bool) {
	for _, lit := range [...]struct {
		text string
		kind Kind
	}{{"true", Boolean}, {"false", Boolean}, {"null", Null}} {
		if bytes.HasPrefix(p.raw[p.i:], []byte(lit.text)) {
			p.i += len(lit.text)
			return lit.text, lit.kind, true
		}
	}
	return "", "", false
}

func (p *parser) object(v *Value, path at, depth int) bool {
	var seen map[string]bool // the keys, once the object is large
	if p.closes('}') {
		return true
	}
	up := path.String() // the members' container, written once
	for {
		if !p.budget(path) {
			return false
		}
		if p.i >= len(p.raw) || p.raw[p.i] != '"' {
			p.syntax()
			return false
		}
		key, bad, lone, ok := p.str()
		if !ok {
			return false
		}
		kp := at{up: up, key: key}
		p.textIssue(kp, bad, lone)
		if repeated(v.members, key, &seen) {
			p.is.Add(kp.String(), "appears more than once")
		}
		if p.skipSpace(); p.i >= len(p.raw) || p.raw[p.i] != ':' {
			p.syntax()
			return false
		}
		p.i++
		p.skipSpace()
		if v.members == nil {
			// Room for the usual call's few arguments at once: growing
			// from one member (112 bytes each) took three allocations
			// for three.
			v.members = make([]Member, 0, 4)
		}
		v.members = append(v.members, Member{Key: key})
		if !p.value(&v.members[len(v.members)-1].Value, kp, depth+1) {
			return false
		}
		if done, ok := p.next('}'); done || !ok {
			return ok
		}
	}
}

// closes reports whether the container just opened is empty: the close
// comes next (and is read).
func (p *parser) closes(close byte) bool {
	p.skipSpace()
	if p.i < len(p.raw) && p.raw[p.i] == close {
		p.i++
		return true
	}
	return false
}

// next reads what follows a member or an item: the container's close
// (done) or a comma; ok is false, with the issue recorded, for anything else.
func (p *parser) next(close byte) (done, ok bool) {
	if p.closes(close) {
		return true, true
	}
	if p.i >= len(p.raw) || p.raw[p.i] != ',' {
		p.syntax()
		return false, false
	}
	p.i++
	p.skipSpace()
	return false, true
}

// repeated reports whether an object's members before this one (before)
// have its name, key, when asked of each member in turn: a scan while they
// are few, then a map, seen, of the names so far (an object may have
// MaxValues members, and scanning them all for each took minutes).
func repeated(before []Member, key string, seen *map[string]bool) bool {
	const small = 16
	if len(before) < small {
		return slices.ContainsFunc(before, func(m Member) bool { return m.Key == key })
	}
	if *seen == nil {
		*seen = make(map[string]bool, 2*small)
		for _, m := range before {
			(*seen)[m.Key] = true
		}
	}
	dup := (*seen)[key]
	(*seen)[key] = true
	return dup
}

func (p *parser) array(v *Value, path at, depth int) bool {
	if p.closes(']') {
		return true
	}
	up := path.String() // the items' container, written once
	for n := 0; ; n++ {
		if !p.budget(path) {
			return false
		}
		v.items = append(v.items, Value{})
		if !p.value(&v.items[n], at{up: up, index: n, item: true}, depth+1) {
			return false
		}
		if done, ok := p.next(']'); done || !ok {
			return ok
		}
	}
}

// budget counts one more member or item of the container at path, and
// reports false (with an issue on the container) once the arguments hold
// more than MaxValues of them.
func (p *parser) budget(path at) bool {
	if p.values++; p.values > MaxValues {
		p.is.Add(path.String(), "holds too much: arguments may have at most "+strconv.Itoa(MaxValues)+" members and items in all")
		p.overLimit = true
		return false
	}
	return true
}

// textIssue records what a string's text breaks: invalid UTF-8 first,
// else an unpaired surrogate escape.
func (p *parser) textIssue(path at, bad, lone bool) {
	switch {
	case bad:
		p.is.Add(path.String(), "is not valid UTF-8")
	case lone:
		p.is.Add(path.String(), "contains an unpaired UTF-16 surrogate escape")
	}
}

// str reads the string whose opening quote is at p.i and returns its text,
// whether its bytes held invalid UTF-8 (bad) and whether it escaped an
// unpaired surrogate (lone); both become U+FFFD in the text, as encoding/json
// decodes them. ok is false, with the issue recorded, if it is not a JSON string.
func (p *parser) str() (text string, bad, lone, ok bool) {
	b, bad, lone, ok := p.strBytes()
	return string(b), bad, lone, ok
}

// strBytes is str without a copy: the text is a slice of p.raw, or of
// p.buf when it had escapes or invalid UTF-8, valid until the next string
// is read.
func (p *parser) strBytes() (text []byte, bad, lone, ok bool) {
	p.i++ // the quote
	start := p.i
	lit := start  // where the bytes not yet copied to p.buf begin
	slow := false // the text is built in p.buf
	p.buf = p.buf[:0]
	for p.i < len(p.raw) {
		c := p.raw[p.i]
		if plain[c] {
			p.i++
			continue
		}
		switch {
		case c == '"':
			if slow {
				p.buf = append(p.buf, p.raw[lit:p.i]...)
				text = p.buf
			} else {
				text = p.raw[start:p.i]
			}
			p.i++
			return text, bad, lone, true
		case c < 0x20:
			p.syntax()
			return nil, false, false, false
		case c == '\\':
			p.buf, slow = append(p.buf, p.raw[lit:p.i]...), true
			r, n, l := p.escape()
			if n == 0 {
				p.syntax()
				return nil, false, false, false
			}
			lone = lone || l
			p.buf = utf8.AppendRune(p.buf, r)
			p.i += n
			lit = p.i
		default:
			r, n := utf8.DecodeRune(p.raw[p.i:])
			if r == utf8.RuneError && n == 1 {
				p.buf, slow, bad = append(p.buf, p.raw[lit:p.i]...), true, true
				p.buf = utf8.AppendRune(p.buf, utf8.RuneError)
				lit = p.i + 1
			}
			p.i += n
		}
	}
	p.syntax()
	return nil, false, false, false
}

// plain marks the bytes a string holds as they are: ASCII but the quote,
// the backslash and control characters.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escape decodes the escape sequence at p.i: the rune it stands for, its
// length in bytes (0 if it is not a JSON escape) and whether it is an
// unpaired surrogate (then U+FFFD, and only the first \uXXXX is consumed).
func (p *parser) escape() (r rune, n int, lone bool) {
	if p.i+1 >= len(p.raw) {
		return 0, 0, false
	}
	switch c := p.raw[p.i+1]; c {
	case '"', '\\', '/':
		return rune(c), 2, false
	case 'b':
		return '\b', 2, false
	case 'f':
		return '\f', 2, false
	case 'n':
		return '\n', 2, false
	case 'r':
		return '\r', 2, false
	case 't':
		return '\t', 2, false
	case 'u':
	default:
		return 0, 0, false
	}
	r, ok := hex4(p.raw, p.i+2)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, false
	}
	if p.i+7 < len(p.raw) && p.raw[p.i+6] == '\\' && p.raw[p.i+7] == 'u' {
		if lo, ok := hex4(p.raw, p.i+8); ok {
			if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
				return dec, 12, false
			}
		}
	}
	return utf8.RuneError, 6, true
}

// LoneSurrogate reports whether JSON text holds a \uD800–\uDFFF escape that
// is not a high surrogate immediately followed by an escaped low one: text
// that decoders silently turn into U+FFFD.
func LoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			continue
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := rune(0), false
			if i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				lo, ok = hex4(b, i+8)
			}
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads a JSON number at p.i; false if there is none.
func (p *parser) number() bool {
	b, i := p.raw, p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	p.i = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// at is where a value is in the arguments: its container's path and its
// name or index there, the path an issue names ("metadata.k",
// "labels[2]") written out only when one does (String). A path written
// for every value, named or not, took a string a value: most of the CPU
// of arguments with many. (A container's path is written for its values'
// at; a chain of pointers instead would put every at on the heap.)
type at struct {
	up    string // the container's path ("" for the arguments object)
	key   string // a member's name, or
	index int    // an item's index (item)
	item  bool
}

// String is the path: "" for the arguments object (the zero at).
func (a at) String() string {
	if a.item {
		return indexPath(a.up, a.index)
	}
	return join(a.up, a.key)
}

// join is the path of the member named key of the object at path:
// "metadata.k". A key longer than MaxQuoted characters is clipped (Clip).
func join(path, key string) string {
	if path == "" {
		return Clip(key)
	}
	return path + "." + Clip(key)
}

// indexPath is the path of item i of the array at path: "labels[2]".
func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

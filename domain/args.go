package domain

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits of what a call's arguments may be, whatever the command.
const (
	// MaxDepth caps the nesting of objects and arrays in the arguments (the
	// arguments object itself is level 1).
	MaxDepth = 64
	// MaxValues caps the object members and array items in the arguments,
	// all levels together. The largest valid arguments hold a few thousand
	// (a 16 KiB metadata object); the cap keeps the tree of any message to
	// a few MB, whatever the client sends.
	MaxValues = 50000
)

// Null is the kind of a JSON null, which no field takes.
const Null Kind = "null"

// Value is one JSON value of a call's arguments as ParseArgs read it. It
// keeps what encoding/json throws away and the rules need: member order,
// repeated keys, number literals as sent, the bytes of each value.
type Value struct {
	kind    Kind
	text    string // a string's text, a number's literal, "true" or "false"
	members []Member
	items   []Value
	raw     []byte // the value's bytes as sent
}

// Member is one member of an object, in the order sent.
type Member struct {
	Key   string
	Value Value
}

// Kind is the value's JSON type: String, Number, Boolean, Array, Object or Null.
func (v *Value) Kind() Kind { return v.kind }

// Text is a string's text (invalid UTF-8 and unpaired surrogate escapes
// replaced by U+FFFD, as encoding/json does) or a number's literal.
func (v *Value) Text() string { return v.text }

// Bool is a boolean's value.
func (v *Value) Bool() bool { return v.text == "true" }

// Items are an array's items.
func (v *Value) Items() []Value { return v.items }

// Members are an object's members, repeated keys included, in the order sent.
func (v *Value) Members() []Member { return v.members }

// Raw is the value's JSON text exactly as sent.
func (v *Value) Raw() []byte { return v.raw }

// Get returns the first member named key of an object, or nil.
func (v *Value) Get(key string) *Value {
	for i := range v.members {
		if v.members[i].Key == key {
			return &v.members[i].Value
		}
	}
	return nil
}

// Args are a call's arguments, parsed once by ParseArgs: validation
// (Command.ValidateArgs), the typed input and the canonical hash all read
// this one tree.
type Args struct {
	raw    []byte
	root   *Value // the whole tree (&tree); nil if raw is not JSON or passes a limit
	tree   Value
	absent bool   // raw is empty or null: the empty object
	issues Issues // what the text itself breaks, in the order found
	// overLimit: parsing stopped at MaxDepth or MaxValues, so root is nil
	// although the text may be JSON.
	overLimit bool
}

var emptyObject = Value{kind: Object, raw: []byte("{}")}

// parses counts ParseArgs calls, for tests that prove a call's arguments
// are parsed once.
var parses atomic.Int64

// Parses is how many times ParseArgs has run in this process.
func Parses() int64 { return parses.Load() }

// ParseArgs reads raw arguments in one pass into a value tree. It records
// an issue for text that cannot be trusted (invalid UTF-8, an escaped lone
// surrogate, a repeated key): encoding/json would silently replace bad
// text with U+FFFD or keep the last of two keys, and an argument must mean
// exactly what the client sent. It stops, with an issue, at text that is
// not JSON and at arguments deeper than MaxDepth or holding more than
// MaxValues members and items. Empty or null arguments are the empty object.
func ParseArgs(raw []byte) *Args {
	parses.Add(1)
	a := &Args{raw: raw}
	if b := bytes.TrimSpace(raw); len(b) == 0 || string(b) == "null" {
		a.absent = true
	}
	p := parser{raw: raw, is: &a.issues}
	root := &a.tree
	p.skipSpace()
	if p.value(root, "", 1) {
		if p.skipSpace(); p.i < len(raw) {
			p.syntax()
		} else {
			a.root = root
		}
	}
	a.overLimit = p.overLimit
	return a
}

// Raw is the arguments' text as received.
func (a *Args) Raw() []byte { return a.raw }

// Root is the arguments' value tree, or nil if the text is not JSON or
// passes a limit. It is the tree of the text as sent: empty arguments
// have none, and null is Null.
func (a *Args) Root() *Value { return a.root }

// Clean reports whether the text broke nothing ParseArgs checks: it is
// JSON within the limits, valid UTF-8 with no unpaired surrogate escape
// and no repeated key in any object (I-JSON, numbers aside).
func (a *Args) Clean() bool { return a.root != nil && len(a.issues.list) == 0 }

// OverLimit reports whether parsing stopped at MaxDepth or MaxValues, so
// that Root is nil although the text may be JSON.
func (a *Args) OverLimit() bool { return a.overLimit }

// Object is the value the rules read: the empty object for empty or null
// arguments, else Root.
func (a *Args) Object() *Value {
	if a.absent {
		return &emptyObject
	}
	return a.root
}

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
func (p *parser) value(v *Value, path string, depth int) bool {
	if p.i >= len(p.raw) {
		p.syntax()
		return false
	}
	start := p.i
	switch c := p.raw[p.i]; {
	case c == '{' || c == '[':
		if depth > MaxDepth {
			p.is.Add(path, "nests deeper than "+strconv.Itoa(MaxDepth)+" levels")
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
	for _, lit := range [...]struct {
		text string
		kind Kind
	}{{"true", Boolean}, {"false", Boolean}, {"null", Null}} {
		if bytes.HasPrefix(p.raw[p.i:], []byte(lit.text)) {
			p.i += len(lit.text)
			v.kind, v.raw = lit.kind, p.raw[start:p.i]
			if lit.kind == Boolean {
				v.text = lit.text
			}
			return true
		}
	}
	p.syntax()
	return false
}

func (p *parser) object(v *Value, path string, depth int) bool {
	var seen map[string]bool // the keys, once the object is large
	if p.closes('}') {
		return true
	}
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
		kp := join(path, key)
		p.textIssue(kp, bad, lone)
		if p.repeated(v, key, &seen) {
			p.is.Add(kp, "appears more than once")
		}
		if p.skipSpace(); p.i >= len(p.raw) || p.raw[p.i] != ':' {
			p.syntax()
			return false
		}
		p.i++
		p.skipSpace()
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

// repeated reports whether object v already has a member named key: a
// scan while v is small, a map once it is not (an object may have
// MaxValues members).
func (p *parser) repeated(v *Value, key string, seen *map[string]bool) bool {
	const small = 16
	if len(v.members) < small {
		return v.Get(key) != nil
	}
	if *seen == nil {
		*seen = make(map[string]bool, 2*small)
		for _, m := range v.members {
			(*seen)[m.Key] = true
		}
	}
	dup := (*seen)[key]
	(*seen)[key] = true
	return dup
}

func (p *parser) array(v *Value, path string, depth int) bool {
	if p.closes(']') {
		return true
	}
	for n := 0; ; n++ {
		if !p.budget(path) {
			return false
		}
		v.items = append(v.items, Value{})
		if !p.value(&v.items[n], indexPath(path, n), depth+1) {
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
func (p *parser) budget(path string) bool {
	if p.values++; p.values > MaxValues {
		p.is.Add(path, "holds too much: arguments may have at most "+strconv.Itoa(MaxValues)+" members and items in all")
		p.overLimit = true
		return false
	}
	return true
}

// textIssue records what a string's text breaks: invalid UTF-8 first,
// else an unpaired surrogate escape.
func (p *parser) textIssue(path string, bad, lone bool) {
	switch {
	case bad:
		p.is.Add(path, "is not valid UTF-8")
	case lone:
		p.is.Add(path, "contains an unpaired UTF-16 surrogate escape")
	}
}

// str reads the string whose opening quote is at p.i and returns its text,
// whether its bytes held invalid UTF-8 (bad) and whether it escaped an
// unpaired surrogate (lone); both become U+FFFD in the text, as encoding/json
// decodes them. ok is false, with the issue recorded, if it is not a JSON string.
func (p *parser) str() (text string, bad, lone, ok bool) {
	p.i++ // the quote
	start := p.i
	lit := start  // where the bytes not yet copied to p.buf begin
	slow := false // the text is built in p.buf
	p.buf = p.buf[:0]
	for p.i < len(p.raw) {
		c := p.raw[p.i]
		switch {
		case c == '"':
			if slow {
				text = string(append(p.buf, p.raw[lit:p.i]...))
			} else {
				text = string(p.raw[start:p.i])
			}
			p.i++
			return text, bad, lone, true
		case c < 0x20:
			p.syntax()
			return "", false, false, false
		case c == '\\':
			p.buf, slow = append(p.buf, p.raw[lit:p.i]...), true
			r, n, l := p.escape()
			if n == 0 {
				p.syntax()
				return "", false, false, false
			}
			lone = lone || l
			p.buf = utf8.AppendRune(p.buf, r)
			p.i += n
			lit = p.i
		case c < utf8.RuneSelf:
			p.i++
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
	return "", false, false, false
}

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

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath is the path of item i of the array at path: "labels[2]".
func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

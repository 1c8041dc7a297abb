package domain

import (
	"bytes"
	"sync/atomic"
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
// (Command.ValidateArgs), the typed input and the subjects all read this
// one tree (the canonical hash is written from the text: Canonical).
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
	if p.value(root, at{}, 1) {
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

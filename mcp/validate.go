package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
)

// Limits of what the edge accepts as arguments, whatever the tool.
const (
	// maxDepth caps the nesting of objects and arrays in the arguments (the
	// arguments object itself is level 1).
	maxDepth = 64
	// maxIssues caps how many issues one rejection lists.
	maxIssues = domain.MaxIssues
	// maxValues caps the object members and array items in the arguments,
	// all levels together. The largest valid arguments hold a few thousand
	// (a 16 KiB metadata object); the cap keeps the parsed tree of any
	// message to a few MB, whatever the client sends.
	maxValues = 50000
)

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is a parsed JSON value that keeps what encoding/json throws away and
// the validator needs: member order, duplicate keys, number literals as sent,
// and the byte span of composite values.
type value struct {
	kind    kind
	str     string // a string's text, or a number's literal
	members []member
	items   []*value
	span    []byte // the raw bytes of an object or array
}

type member struct {
	key string
	val *value
}

// get returns the first member named key of an object, or nil.
func (v *value) get(key string) *value {
	for _, m := range v.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// issues collects validation issues (domain.Issues: repeats dropped, at
// most maxIssues).
type issues struct{ domain.Issues }

func (is *issues) add(path, msg string) { is.Add(path, msg) }
func (is *issues) err() error           { return is.Err() }

// validate checks raw tool arguments against t's input schema and rules. It
// returns nil or a *commands.InvalidInputError listing every issue found,
// each with a path into the arguments ("title", "labels[2]", "metadata.k").
// Absent or null arguments are the empty object.
func validate(t *tool, raw json.RawMessage) error {
	var is issues
	if isAbsent(raw) {
		raw = json.RawMessage("{}")
	}
	root := parse(raw, &is)
	if root == nil {
		return is.err()
	}
	if root.kind != kindObject {
		is.add("", "arguments must be a JSON object")
		return is.err()
	}
	check(root, t.in, "", &is)
	if t.check != nil {
		t.check(root, is.add)
	}
	return is.err()
}

// isAbsent reports whether raw arguments count as not given: empty or null.
func isAbsent(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) == 0 || string(b) == "null"
}

// parse reads raw into a value tree. It records an issue for text that cannot
// be trusted (invalid UTF-8, an escaped lone surrogate, a repeated key):
// encoding/json would silently replace bad text with U+FFFD or keep the last
// of two keys, and an argument must mean exactly what the client sent. It
// returns nil, with an issue, if raw is not JSON or nests deeper than maxDepth.
func parse(raw []byte, is *issues) *value {
	p := &parser{raw: raw, dec: json.NewDecoder(bytes.NewReader(raw)), is: is}
	p.dec.UseNumber()
	v := p.value("", 1)
	if v == nil {
		return nil
	}
	if _, err := p.dec.Token(); err != io.EOF {
		is.add("", "arguments are not valid JSON")
		return nil
	}
	return v
}

type parser struct {
	raw    []byte
	dec    *json.Decoder
	is     *issues
	values int // parsed so far, up to maxValues
}

// token reads the next token and the raw bytes it spans (including any
// separators before it, which are ASCII).
func (p *parser) token() (json.Token, []byte, error) {
	start := p.dec.InputOffset()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, nil, err
	}
	return tok, p.raw[start:p.dec.InputOffset()], nil
}

func (p *parser) value(path string, depth int) *value {
	tok, span, err := p.token()
	if err != nil {
		p.is.add("", "arguments are not valid JSON")
		return nil
	}
	return p.fromToken(tok, span, path, depth)
}

func (p *parser) fromToken(tok json.Token, span []byte, path string, depth int) *value {
	switch t := tok.(type) {
	case nil:
		return &value{kind: kindNull}
	case bool:
		return &value{kind: kindBool, str: strconv.FormatBool(t)}
	case json.Number:
		return &value{kind: kindNumber, str: string(t)}
	case string:
		p.checkText(span, path)
		return &value{kind: kindString, str: t}
	case json.Delim:
		if depth > maxDepth {
			p.is.add(path, fmt.Sprintf("nests deeper than %d levels", maxDepth))
			return nil
		}
		start := int(p.dec.InputOffset()) - 1 // the '{' or '['
		var v *value
		if t == '{' {
			v = p.object(path, depth)
		} else {
			v = p.array(path, depth)
		}
		if v != nil {
			v.span = p.raw[start:p.dec.InputOffset()]
		}
		return v
	}
	p.is.add("", "arguments are not valid JSON")
	return nil
}

func (p *parser) object(path string, depth int) *value {
	v := &value{kind: kindObject}
	seen := map[string]bool{}
	for p.dec.More() {
		if !p.budget(path) {
			return nil
		}
		tok, span, err := p.token()
		if err != nil {
			p.is.add("", "arguments are not valid JSON")
			return nil
		}
		key, _ := tok.(string)
		kp := join(path, key)
		p.checkText(span, kp)
		if seen[key] {
			p.is.add(kp, "appears more than once")
		}
		seen[key] = true
		m := p.value(kp, depth+1)
		if m == nil {
			return nil
		}
		v.members = append(v.members, member{key, m})
	}
	if _, _, err := p.token(); err != nil { // '}'
		p.is.add("", "arguments are not valid JSON")
		return nil
	}
	return v
}

func (p *parser) array(path string, depth int) *value {
	v := &value{kind: kindArray}
	for i := 0; p.dec.More(); i++ {
		if !p.budget(path) {
			return nil
		}
		m := p.value(fmt.Sprintf("%s[%d]", path, i), depth+1)
		if m == nil {
			return nil
		}
		v.items = append(v.items, m)
	}
	if _, _, err := p.token(); err != nil { // ']'
		p.is.add("", "arguments are not valid JSON")
		return nil
	}
	return v
}

// budget counts one more member or item of the container at path, and
// reports false (with an issue on the container) once the arguments hold
// more than maxValues of them.
func (p *parser) budget(path string) bool {
	if p.values++; p.values > maxValues {
		p.is.add(path, fmt.Sprintf("holds too much: arguments may have at most %d members and items in all", maxValues))
		return false
	}
	return true
}

// checkText rejects a string token whose raw text is not valid UTF-8 or
// escapes a lone UTF-16 surrogate (\ud800 alone).
func (p *parser) checkText(span []byte, path string) {
	if !utf8.Valid(span) {
		p.is.add(path, "is not valid UTF-8")
		return
	}
	if commands.LoneSurrogate(span) {
		p.is.add(path, "contains an unpaired UTF-16 surrogate escape")
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// check validates v against s, adding at most one issue for a scalar value.
// A schema generated from a domain rule is checked by the rule itself.
func check(v *value, s *schema, path string, is *issues) {
	if s.rule != nil {
		s.rule.Validate(v.generic(), path, is.add)
		return
	}
	if len(s.types) > 0 && !matchesType(v, s) {
		is.add(path, typeMessage(v, s))
		return
	}
	switch v.kind {
	case kindString:
		if s.enum != nil && !slices.Contains(s.enum, v.str) {
			is.add(path, "must be one of: "+strings.Join(s.enum, ", "))
		}
	case kindArray:
		if s.items != nil {
			for i, item := range v.items {
				check(item, s.items, fmt.Sprintf("%s[%d]", path, i), is)
			}
		}
	case kindObject:
		checkObject(v, s, path, is)
	}
}

func matchesType(v *value, s *schema) bool {
	for _, t := range s.types {
		switch {
		case t == "null" && v.kind == kindNull,
			t == "boolean" && v.kind == kindBool,
			t == "string" && v.kind == kindString,
			t == "number" && v.kind == kindNumber,
			t == "integer" && v.kind == kindNumber && isIntegerLiteral(v.str),
			t == "array" && v.kind == kindArray,
			t == "object" && v.kind == kindObject:
			return true
		}
	}
	return false
}

// isIntegerLiteral is deliberately stricter than JSON Schema (which takes 5.0
// and 1e2 as integers): commands decodes integer fields into Go integers,
// which reject any fraction or exponent.
func isIntegerLiteral(lit string) bool {
	return !strings.ContainsAny(lit, ".eE")
}

func typeMessage(v *value, s *schema) string {
	names := make([]string, 0, len(s.types))
	for _, t := range s.types {
		names = append(names, article(t))
	}
	msg := "must be " + strings.Join(names, " or ")
	if v.kind == kindNumber && s.is("integer") {
		return msg + " (a whole number without fraction or exponent)"
	}
	return msg
}

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func checkObject(v *value, s *schema, path string, is *issues) {
	for _, m := range v.members {
		ps := s.property(m.key)
		if ps == nil {
			if s.closed {
				is.add(join(path, m.key), "is not a known field; known fields: "+knownFields(s))
			}
			continue
		}
		check(m.val, ps, join(path, m.key), is)
	}
	for _, r := range s.required {
		if v.get(r) == nil {
			is.add(join(path, r), "is required")
		}
	}
}

func knownFields(s *schema) string {
	if len(s.props) == 0 {
		return "none"
	}
	names := make([]string, len(s.props))
	for i, p := range s.props {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

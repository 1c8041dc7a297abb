package domain

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValidateJSON parses raw arguments (empty or null meaning the empty
// object) and validates them: ParseArgs, then ValidateArgs.
func (c *Command) ValidateJSON(raw []byte) error { return c.ValidateArgs(ParseArgs(raw)) }

// ValidateArgs checks parsed arguments against every rule of c. It returns
// nil or an *InvalidInputError listing every issue, at most one per scalar
// value, in this order: what the text itself breaks (ParseArgs), each
// member's rule in the order sent, the required fields, each field's Text,
// then the rules that span fields.
func (c *Command) ValidateArgs(a *Args) error {
	var is Issues
	if !a.absent { // what the text broke (not JSON, if blank) is no matter then
		is = Issues{list: slices.Clip(a.issues.list), dropped: a.issues.dropped}
	}
	obj := a.Object()
	if obj == nil {
		return is.Err()
	}
	if obj.kind != Object {
		is.Add("", "arguments must be a JSON object")
		return is.Err()
	}
	unknown := "" // written once: arguments may name 50,000 unknown fields
	for i := range obj.members {
		m := &obj.members[i]
		r := c.Field(m.Key)
		if r == nil {
			if unknown == "" {
				unknown = "is not a known field; known fields: " + c.known()
			}
			is.Add(join("", m.Key), unknown)
			continue
		}
		r.validate(&m.Value, at{key: m.Key}, is.Add)
	}
	for _, name := range c.Required {
		if obj.Get(name) == nil {
			is.Add(name, "is required")
		}
	}
	for i := range c.Fields {
		if v := obj.Get(c.Fields[i].Name); v != nil {
			c.Fields[i].checkText(v, at{key: c.Fields[i].Name}, is.Add)
		}
	}
	if len(c.AnyOf) > 0 && !slices.ContainsFunc(c.AnyOf, func(n string) bool { return obj.Get(n) != nil }) {
		is.Add("", "at least one of "+strings.Join(c.AnyOf, ", ")+" is required")
	}
	if c.check != nil {
		c.check(obj, is.Add)
	}
	return is.Err()
}

func (c *Command) known() string {
	if len(c.Fields) == 0 {
		return "none"
	}
	names := make([]string, len(c.Fields))
	for i, f := range c.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// validate checks v, at path, against what the rule's JSON Schema says
// (kind, enum, lengths, pattern, bounds, items), adding at most one issue
// for a scalar value. The rule's Text and the command's rules that span
// fields are checked by Command.ValidateArgs afterwards.
func (r *Rule) validate(v *Value, path at, add func(path, msg string)) {
	if r.Kind != "" && !r.hasKind(v) {
		msg := "must be " + article(string(r.Kind))
		if v.kind == Number && r.Kind == Integer {
			msg += " (a whole number)"
		}
		add(path.String(), msg)
		return
	}
	switch v.kind {
	case String:
		r.checkString(v.text, path, add)
	case Number:
		r.checkNumber(v.text, path, add)
	case Array:
		if r.MaxItems > 0 && len(v.items) > r.MaxItems {
			add(path.String(), fmt.Sprintf("must have at most %d items (got %d)", r.MaxItems, len(v.items)))
		}
		if r.Items != nil {
			up := path.String()
			for i := range v.items {
				r.Items.validate(&v.items[i], at{up: up, index: i, item: true}, add)
			}
		}
	case Object:
		if r.MaxBytes > 0 {
			if n := compactSize(v); n > r.MaxBytes {
				add(path.String(), fmt.Sprintf("must be at most %d bytes as compact JSON (got %d)", r.MaxBytes, n))
			}
		}
		// A free-form object's numbers have no rule of their own: one beyond
		// a double would make the arguments other than I-JSON, stored as
		// sent and hashed as received rather than in RFC 8785 form.
		if p, ok := outOfRange(v, path); ok {
			add(p, "must be a number within the range of an IEEE 754 double (I-JSON)")
		}
	}
}

// outOfRange is the path of the first number in v, at path, that is beyond
// the range of an IEEE 754 double (it would parse as an infinity; one that
// rounds to zero is in range, as RFC 8785 writes it: 0).
func outOfRange(v *Value, path at) (string, bool) {
	switch v.kind {
	case Number:
		if _, err := strconv.ParseFloat(v.text, 64); errors.Is(err, strconv.ErrRange) {
			return path.String(), true
		}
	case Array:
		up := path.String()
		for i := range v.items {
			if p, ok := outOfRange(&v.items[i], at{up: up, index: i, item: true}); ok {
				return p, true
			}
		}
	case Object:
		up := path.String()
		for i := range v.members {
			if p, ok := outOfRange(&v.members[i].Value, at{up: up, key: v.members[i].Key}); ok {
				return p, true
			}
		}
	}
	return "", false
}

func (r *Rule) hasKind(v *Value) bool {
	switch v.kind {
	case Number:
		if r.Kind == Integer {
			_, whole := v.Integer()
			return whole
		}
		return r.Kind == Number
	case Null:
		return false // no field of a command takes it
	}
	return r.Kind == v.kind
}

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	}
	return "a " + t
}

func (r *Rule) checkString(s string, path at, add func(path, msg string)) {
	if r.Enum != nil {
		if !slices.Contains(r.Enum, s) {
			add(path.String(), "must be one of: "+strings.Join(r.Enum, ", "))
		}
		return
	}
	n := utf8.RuneCountInString(s)
	if n < r.MinLen {
		add(path.String(), "must be at least "+Plural(r.MinLen, "character"))
		return
	}
	if r.MaxLen > 0 && n > r.MaxLen {
		add(path.String(), fmt.Sprintf("must be at most %s (got %d)", Plural(r.MaxLen, "character"), n))
		return
	}
	if re := r.Regexp(); re != nil && !re.MatchString(s) {
		msg := r.Hint
		if msg == "" {
			msg = "must match " + r.Pattern
		}
		add(path.String(), msg)
		return
	}
	if r.DateTime {
		if _, err := ParseDateTime(s); err != nil {
			add(path.String(), "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z")
		}
	}
}

// Plural counts n of unit as a message says it: "1 character",
// "2 characters" (unit takes an s).
func Plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func (r *Rule) checkNumber(lit string, path at, add func(path, msg string)) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		add(path.String(), "must be a number")
		return
	}
	if r.Kind == Integer {
		// An integer must also fit in 64 bits; a bound on that side, if
		// any, gives the better message.
		n, _ := integerText(lit)
		if _, err := strconv.ParseInt(n, 10, 64); err != nil && ((f < 0 && r.Min == nil) || (f > 0 && r.Max == nil)) {
			lo, hi := strconv.FormatInt(math.MinInt64, 10), strconv.FormatInt(math.MaxInt64, 10)
			if r.Min != nil {
				lo = fmtNum(*r.Min)
			}
			if r.Max != nil {
				hi = fmtNum(*r.Max)
			}
			add(path.String(), "must be between "+lo+" and "+hi)
			return
		}
	}
	if r.Min != nil && f < *r.Min {
		add(path.String(), "must be at least "+fmtNum(*r.Min))
		return
	}
	if r.Max != nil && f > *r.Max {
		add(path.String(), "must be at most "+fmtNum(*r.Max))
	}
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// compactSize is the length of v as encoding/json writes its decoded form
// compactly without HTML escaping: a repeated key counts once (the first),
// numbers as sent, strings as encoding/json escapes them.
func compactSize(v *Value) int {
	switch v.kind {
	case String:
		return quotedSize(v.text)
	case Array:
		n := 2 + max(len(v.items)-1, 0)
		for i := range v.items {
			n += compactSize(&v.items[i])
		}
		return n
	case Object:
		n, count := 2, 0
		var seen map[string]bool // the names, once the object is large
		for i, m := range v.members {
			if repeated(v.members[:i], m.Key, &seen) {
				continue // a repeat: the decoded form keeps the first
			}
			n += quotedSize(m.Key) + 1 + compactSize(&v.members[i].Value)
			count++
		}
		return n + max(count-1, 0)
	case Null:
		return len("null")
	}
	return len(v.text)
}

// quotedSize is the length of s (valid UTF-8) as encoding/json quotes it
// without HTML escaping.
func quotedSize(s string) int {
	n := 2
	for _, c := range s {
		switch {
		case c == '\\' || c == '"' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == '\u2028' || c == '\u2029':
			n += 6
		default:
			n += utf8.RuneLen(c)
		}
	}
	return n
}

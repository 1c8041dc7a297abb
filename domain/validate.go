package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ValidateJSON decodes raw arguments (empty or null meaning the empty object)
// and validates them with Validate.
func (c *Command) ValidateJSON(raw []byte) error {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Invalid("", "arguments are not valid JSON")
	}
	if dec.More() {
		return Invalid("", "arguments are not valid JSON")
	}
	return c.Validate(v)
}

// Validate checks args, a JSON value as encoding/json decodes it with
// UseNumber (map[string]any, []any, string, json.Number, bool, nil), against
// every rule of c. It returns nil or an *InvalidInputError listing every
// issue, at most one per scalar value. Members are visited in name order.
func (c *Command) Validate(args any) error {
	var is Issues
	obj, ok := args.(map[string]any)
	if !ok {
		is.Add("", "arguments must be a JSON object")
		return is.Err()
	}
	for _, name := range sortedKeys(obj) {
		r := c.Field(name)
		if r == nil {
			is.Add(name, "is not a known field; known fields: "+c.known())
			continue
		}
		r.Validate(obj[name], name, is.Add)
	}
	for _, name := range c.Required {
		if _, ok := obj[name]; !ok {
			is.Add(name, "is required")
		}
	}
	c.Check(obj, is.Add)
	return is.Err()
}

// Check enforces the rules a JSON Schema does not express: the Text of each
// string and the rules that span fields. An edge that has already checked
// args against the schema generated from c calls Check for the rest; values
// of the wrong type are skipped (the schema reported them).
func (c *Command) Check(args map[string]any, add func(path, msg string)) {
	for _, f := range c.Fields {
		if v, ok := args[f.Name]; ok {
			f.checkText(v, f.Name, add)
		}
	}
	if len(c.AnyOf) > 0 && !slices.ContainsFunc(c.AnyOf, func(n string) bool { _, ok := args[n]; return ok }) {
		add("", "at least one of "+strings.Join(c.AnyOf, ", ")+" is required")
	}
	if c.check != nil {
		c.check(args, add)
	}
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

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Validate checks v, one value as ValidateJSON decodes it, against what the
// rule's JSON Schema says (kind, enum, lengths, pattern, bounds, items),
// adding at most one issue for a scalar value. The rule's Text and the
// command's rules that span fields are Command.Check's.
func (r *Rule) Validate(v any, path string, add func(path, msg string)) {
	if r.Kind != "" && !r.hasKind(v) {
		msg := "must be " + article(string(r.Kind))
		if _, num := v.(json.Number); num && r.Kind == Integer {
			msg += " (a whole number without fraction or exponent)"
		}
		add(path, msg)
		return
	}
	switch x := v.(type) {
	case string:
		r.checkString(x, path, add)
	case json.Number:
		r.checkNumber(string(x), path, add)
	case []any:
		if r.MaxItems > 0 && len(x) > r.MaxItems {
			add(path, fmt.Sprintf("must have at most %d items (got %d)", r.MaxItems, len(x)))
		}
		if r.Items != nil {
			for i, item := range x {
				r.Items.Validate(item, indexPath(path, i), add)
			}
		}
	case map[string]any:
		if r.MaxBytes > 0 {
			if n, err := compactSize(x); err == nil && n > r.MaxBytes {
				add(path, fmt.Sprintf("must be at most %d bytes as compact JSON (got %d)", r.MaxBytes, n))
			}
		}
	}
}

func (r *Rule) hasKind(v any) bool {
	switch x := v.(type) {
	case string:
		return r.Kind == String
	case json.Number:
		return r.Kind == Number || (r.Kind == Integer && !strings.ContainsAny(string(x), ".eE"))
	case bool:
		return r.Kind == Boolean
	case []any:
		return r.Kind == Array
	case map[string]any:
		return r.Kind == Object
	}
	return false // null: no field of a command takes it
}

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	}
	return "a " + t
}

func (r *Rule) checkString(s string, path string, add func(path, msg string)) {
	if r.Enum != nil {
		if !slices.Contains(r.Enum, s) {
			add(path, "must be one of: "+strings.Join(r.Enum, ", "))
		}
		return
	}
	n := utf8.RuneCountInString(s)
	if n < r.MinLen {
		add(path, "must be at least "+plural(r.MinLen, "character"))
		return
	}
	if r.MaxLen > 0 && n > r.MaxLen {
		add(path, fmt.Sprintf("must be at most %s (got %d)", plural(r.MaxLen, "character"), n))
		return
	}
	if re := r.Regexp(); re != nil && !re.MatchString(s) {
		msg := r.Hint
		if msg == "" {
			msg = "must match " + r.Pattern
		}
		add(path, msg)
		return
	}
	if r.DateTime {
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			add(path, "must be an RFC 3339 date-time, e.g. 2026-04-08T22:15:30Z")
		}
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func (r *Rule) checkNumber(lit string, path string, add func(path, msg string)) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		add(path, "must be a number")
		return
	}
	if r.Kind == Integer {
		// An integer must also fit in 64 bits; a bound on that side, if
		// any, gives the better message.
		if _, err := strconv.ParseInt(lit, 10, 64); err != nil && ((f < 0 && r.Min == nil) || (f > 0 && r.Max == nil)) {
			add(path, fmt.Sprintf("must be between %d and %d", int64(math.MinInt64), int64(math.MaxInt64)))
			return
		}
	}
	if r.Min != nil && f < *r.Min {
		add(path, "must be at least "+fmtNum(*r.Min))
		return
	}
	if r.Max != nil && f > *r.Max {
		add(path, "must be at most "+fmtNum(*r.Max))
	}
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// compactSize is the length of v as compact JSON, without HTML escaping.
func compactSize(v any) (int, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0, err
	}
	return b.Len() - 1, nil // the encoder's newline
}

func indexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

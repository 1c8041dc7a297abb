package domain

import "regexp"

// Kind is the JSON type a field's value must have.
type Kind string

// The kinds a field can have.
const (
	String  Kind = "string"
	Integer Kind = "integer" // a whole number (10, 10.0 or 1e1: Value.Integer), within int64
	Number  Kind = "number"
	Boolean Kind = "boolean"
	Array   Kind = "array"
	Object  Kind = "object"
)

// Text says which characters a string may hold beyond what its pattern says.
type Text uint8

const (
	// AnyText takes any string.
	AnyText Text = iota
	// Line is a single line: no control characters at all (NUL, newline,
	// DEL, C1), no line or paragraph separator (U+2028, U+2029), and not
	// blank.
	Line
	// Prose may span lines: tab, newline and carriage return are allowed,
	// other control characters are not; it must not be blank.
	Prose
	// Notes is Prose that may be blank: an optional remark, where blank
	// means "none".
	Notes
)

// Rule is what one value must be. Zero fields impose nothing.
type Rule struct {
	Kind     Kind
	Doc      string   // what the value means, for the published schema
	Enum     []string // the only values allowed (strings)
	Default  any      // what an absent value means; published, never applied here
	MinLen   int      // in characters (runes)
	MaxLen   int      // in characters (runes); 0 = no bound
	Pattern  string   // RE2; the whole value must match where the pattern is anchored
	Hint     string   // the issue message when Pattern does not match
	DateTime bool     // an RFC 3339 date-time
	Min, Max *float64 // bounds of a number or integer
	MaxItems int      // of an array; 0 = no bound
	Items    *Rule    // of an array
	// MaxBytes bounds an object's size as compact JSON.
	MaxBytes int
	Text     Text
	// IDOf is the prefix of the ids a string names (TaskPrefix,
	// SessionPrefix, LearningPrefix), "" for a value that is not an id.
	// Such an argument given as "" names nothing: it is looked up like
	// any id, never taken for an absent one.
	IDOf string

	re *regexp.Regexp
}

// Field is a named member of a command's arguments.
type Field struct {
	Name string
	Rule
}

// Command is the rule set of one command's arguments: a closed object.
type Command struct {
	Name     string  // the command's name, e.g. "task_create"
	Fields   []Field // in publication order
	Required []string
	// AnyOf names fields of which at least one must be given (besides the
	// required ones).
	AnyOf []string
	// check enforces rules that span fields. It sees only values that
	// passed their own field's rule.
	check func(args *Value, add func(path, msg string))
}

// Field returns the rule of the field named name, or nil.
func (c *Command) Field(name string) *Rule {
	for i := range c.Fields {
		if c.Fields[i].Name == name {
			return &c.Fields[i].Rule
		}
	}
	return nil
}

// Regexp is the compiled Pattern, or nil. It panics if Pattern is not RE2.
func (r *Rule) Regexp() *regexp.Regexp {
	if r.re == nil && r.Pattern != "" {
		return regexp.MustCompile(r.Pattern) // a Rule built outside this package
	}
	return r.re
}

func str(doc string) Rule     { return Rule{Kind: String, Doc: doc} }
func integer(doc string) Rule { return Rule{Kind: Integer, Doc: doc} }
func number(doc string) Rule  { return Rule{Kind: Number, Doc: doc} }
func boolean(doc string) Rule { return Rule{Kind: Boolean, Doc: doc} }

func enum(doc string, values ...string) Rule {
	return Rule{Kind: String, Doc: doc, Enum: values}
}

func array(doc string, items Rule, maxItems int) Rule {
	return Rule{Kind: Array, Doc: doc, Items: &items, MaxItems: maxItems}
}

func field(name string, r Rule) Field { return Field{Name: name, Rule: r} }

func (r Rule) length(min, max int) Rule { r.MinLen, r.MaxLen = min, max; return r }

func (r Rule) rng(min, max float64) Rule { r.Min, r.Max = &min, &max; return r }

func (r Rule) atLeast(min float64) Rule { r.Min = &min; return r }

func (r Rule) byDefault(v any) Rule { r.Default = v; return r }

func (r Rule) text(t Text) Rule { r.Text = t; return r }

func (r Rule) matches(pattern, hint string) Rule {
	r.Pattern, r.Hint = pattern, hint
	r.re = regexp.MustCompile(pattern)
	return r
}

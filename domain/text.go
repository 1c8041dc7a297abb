package domain

import (
	"unicode"
)

// checkText applies the rule's Text to a string value, or to each string
// item of an array value; anything else is left to the schema part.
func (r *Rule) checkText(v *Value, path at, add func(path, msg string)) {
	switch v.kind {
	case String:
		if msg := r.Text.Refuse(v.text); msg != "" {
			add(path.String(), msg)
		}
	case Array:
		if r.Items == nil {
			return
		}
		up := path.String()
		for i := range v.items {
			r.Items.checkText(&v.items[i], at{up: up, index: i, item: true}, add)
		}
	}
}

// Refuse returns why s breaks t, or "": the rule of a tool's text
// arguments, and of text that comes from elsewhere (a skill's file). The
// empty string is left to MinLen.
func (t Text) Refuse(s string) string {
	if t == AnyText || s == "" {
		return ""
	}
	for _, c := range s {
		if t == Line && (c == '\u2028' || c == '\u2029') {
			// Not control characters, but line breaks wherever Unicode
			// is laid out (and in JavaScript source): a one-line value
			// shown as two.
			return "must not contain line or paragraph separators (U+2028, U+2029)"
		}
		if !unicode.IsControl(c) || (t != Line && (c == '\t' || c == '\n' || c == '\r')) {
			continue
		}
		if t == Line {
			return "must not contain control characters (such as NUL, tab or newline)"
		}
		return "must not contain control characters other than tab, newline and carriage return"
	}
	switch {
	case t == Notes:
		return ""
	case IsBlank(s) && onlySpace(s):
		return "must not be only whitespace"
	case IsBlank(s):
		return "must not be only whitespace or invisible characters"
	}
	return ""
}

// IsBlank reports whether s shows nothing: it holds only white space,
// control characters, format characters (U+200B zero width space, U+2060
// word joiner, U+FEFF, the soft hyphen, bidi marks…) and the blank fillers
// some scripts define. The empty string is blank.
func IsBlank(s string) bool {
	for _, c := range s {
		if !invisible(c) {
			return false
		}
	}
	return true
}

func invisible(c rune) bool {
	switch c {
	case '\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800': // Hangul fillers, Braille blank
		return true
	}
	return unicode.IsSpace(c) || unicode.IsControl(c) || unicode.In(c, unicode.Cf, unicode.Zs)
}

func onlySpace(s string) bool {
	for _, c := range s {
		if !unicode.IsSpace(c) {
			return false
		}
	}
	return true
}

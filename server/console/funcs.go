package console

import (
	"html/template"
	"strings"
)

// funcs are the templates' helpers. They return plain strings: escaping is
// html/template's, always.
var funcs = template.FuncMap{
	// short is a hash's first 12 hex digits, as the CLI shows it.
	"short": func(h string) string {
		if len(h) > 12 {
			return h[:12]
		}
		return h
	},
	// words is a status or type as words: "in_progress" → "in progress".
	"words": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	"join":  strings.Join,
	// time is an RFC 3339 time without its date's T and its milliseconds.
	"time": func(s string) string {
		if len(s) >= 19 {
			return s[:10] + " " + s[11:19]
		}
		return s
	},
}

package mcp

import (
	"strings"
	"testing"
)

func TestSanitizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"claude-code", "claude-code"},
		{"a\x00b\nc", "abc"},
		{"bad\xffutf8", "badutf8"},
		{strings.Repeat("é", 3000), strings.Repeat("é", maxClientName)},
		{"  spaced  ", "spaced"},
		{"\u200b", ""},
		{"\u200c\u200d", ""},     // joiners alone: no name
		{"ali\u00adce", "alice"}, // a soft hyphen is dropped
		{"\u0645\u06cc\u200c\u0631\u0648\u062f", "\u0645\u06cc\u200c\u0631\u0648\u062f"}, // Persian, with its non-joiner
		{"\U0001F468\u200d\U0001F4BB bot", "\U0001F468\u200d\U0001F4BB bot"},             // an emoji sequence                         // invisible only: no name (the actor is then unknown)
		{"adm\u200bin\u202e", "admin"},                                                   // format characters: invisible, or reordering what is shown
		{"\u00a0\u3000claude\u2009", "claude"},                                           // spaces of any kind at either end
		{"ali\u200dce\u200c", "alice"},                                                   // joiners that join nothing: "alice" to the eye
		{"alice\u034f\ufe0f\u3164", "alice"},                                             // a grapheme joiner, a selector of nothing, a Hangul filler
		{"\u2764\ufe0f\u200d\U0001F525", "\u2764\ufe0f\u200d\U0001F525"},                 // an emoji sequence keeps its selector and joiner
		{"\u3164\u2800", ""},                                                             // blanks only: no name
	}
	for _, tt := range tests {
		if got := sanitizeName(tt.in); got != tt.want {
			t.Errorf("sanitizeName(%q) = %q, want %q", tt.in[:min(len(tt.in), 20)], got[:min(len(got), 20)], tt.want[:min(len(tt.want), 20)])
		}
	}
}

// FuzzPlainName: a name plainName passes is one cleanName leaves unchanged.
func FuzzPlainName(f *testing.F) {
	for _, s := range []string{"bench", "claude code", " x", "x ", "a\tb", "é", strings.Repeat("a", 129), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if plainName(name) && cleanName(name) != name {
			t.Fatalf("plainName(%q) but cleanName gives %q", name, cleanName(name))
		}
	})
}

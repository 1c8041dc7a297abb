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
		{"\u200b", ""},                         // invisible only: no name (the actor is then unknown)
		{"adm\u200bin\u202e", "admin"},         // format characters: invisible, or reordering what is shown
		{"\u00a0\u3000claude\u2009", "claude"}, // spaces of any kind at either end
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

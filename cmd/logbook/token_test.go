package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenAddEmptyTools: `token add --tools ""` (an empty variable, say)
// is refused; it issued a token for every tool, the opposite of a scope.
func TestTokenAddEmptyTools(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	newLedger(t, db, "setup").l.Close()
	for _, tools := range []string{"", " ", ","} {
		r := run(t, "token", "add", "--db", db, "--issuer", "op", "--agent", "bot", "--tools", tools)
		wantExit(t, r, 2, "token add --tools "+tools)
		if !strings.Contains(r.stderr, "--tools") {
			t.Errorf("--tools %q: the error names no flag: %s", tools, r.stderr)
		}
	}
	r := run(t, "token", "list", "--db", db)
	wantExit(t, r, 0, "token list")
	if strings.Contains(r.stdout, "bot") {
		t.Errorf("a token was issued: %s", r.stdout)
	}
	// Left out, --tools means every tool, as before.
	r = run(t, "token", "add", "--db", db, "--issuer", "op", "--agent", "bot")
	wantExit(t, r, 0, "token add")
	if !strings.Contains(r.stdout, "all tools") {
		t.Errorf("token add without --tools: %s", r.stdout)
	}
}

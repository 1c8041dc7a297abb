package mcp

import (
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestArgumentsParsedOnce: over the wire, through the edge and the
// commands layer, each tool call's arguments are parsed exactly once —
// valid or not, read or write, known tool or not: validation, the typed
// input, the subjects and args_sha256 all read that one tree. (The tests
// of this package do not run in parallel, so the process-wide count is
// this test's.)
func TestArgumentsParsedOnce(t *testing.T) {
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "ledger.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	svc, err := commands.New(l, commands.Options{Agent: "parse-once"})
	if err != nil {
		t.Fatal(err)
	}
	c := startSession(t, New(svc, Options{}))
	c.initialize()
	for _, tt := range []struct{ tool, args, code string }{
		{"task_create", `{"title":"Parse once","project":"core","labels":["a"],"estimate_hours":1.5}`, CodeOK},
		{"thought_record", `{"task_id":"T-0001","type":"plan","content":"c","metadata":{"k":[1,{"n":null}]}}`, CodeOK},
		{"task_update", `{"task_id":"T-0001","status":"todo","progress":10}`, CodeOK},
		{"task_get", `{"task_id":"T-0001","include_thought_trail":true}`, CodeOK},
		{"task_list", `{"project":"core"}`, CodeOK},
		{"task_create", `{"title":"","project":"Bad","title":"x"}`, CodeInvalidInput},
		{"task_get", `{"task_id":"T-0009"}`, CodeTaskNotFound},
		{"server_ping", ``, CodeOK},
		{"no_such_tool", `{"a":1}`, CodeInvalidInput},
	} {
		before := domain.Parses()
		if code := errorCode(t, c.toolCall(tt.tool, tt.args)); code != tt.code {
			t.Errorf("%s %s: %s, want %s", tt.tool, tt.args, code, tt.code)
		}
		if n := domain.Parses() - before; n != 1 {
			t.Errorf("%s %s: the arguments were parsed %d times, want once", tt.tool, tt.args, n)
		}
	}
}

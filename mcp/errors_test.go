package mcp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/commands"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file; if the change is intended (codes are public API), run go test ./mcp -update\n got:\n%s", path, got)
	}
}

// errorCases pin the error table: each error, plain and wrapped, and its reply.
var errorCases = []struct {
	name string
	err  error
}{
	{"invalid input, typed", &commands.InvalidInputError{Issues: []commands.Issue{{Path: "title", Message: "is required"}}}},
	{"invalid input, several issues", &commands.InvalidInputError{Issues: []commands.Issue{
		{Path: "title", Message: "is required"}, {Path: "labels[2]", Message: "must be a string"}, {Path: "", Message: "at least one of x is required"}}}},
	{"invalid input, from commands.Invalid", commands.Invalid("parent_id", "is in project %s, not %s", "a", "b")},
	{"invalid input, root issue", &commands.InvalidInputError{Issues: []commands.Issue{{Path: "", Message: "arguments must be a JSON object"}}}},
	{"invalid input, no issues", &commands.InvalidInputError{}},
	{"invalid input, sentinel", fmt.Errorf("decode args: %w", commands.ErrInvalidInput)},
	{"task not found", &commands.NotFoundError{Kind: commands.ErrTaskNotFound, ID: "T-0042"}},
	{"task not found, wrapped", fmt.Errorf("load /var/lib/logbook/x: %w", &commands.NotFoundError{Kind: commands.ErrTaskNotFound, ID: "T-0042"})},
	{"task not found, sentinel", commands.ErrTaskNotFound},
	{"project not found", &commands.NotFoundError{Kind: commands.ErrProjectNotFound, ID: "billing"}},
	{"project not found, sentinel", commands.ErrProjectNotFound},
	{"session not found", &commands.NotFoundError{Kind: commands.ErrSessionNotFound, ID: "A-0007"}},
	{"session not found, sentinel", commands.ErrSessionNotFound},
	{"invalid transition", &commands.TransitionError{From: "backlog", To: "done", Allowed: []string{"todo", "cancelled"}}},
	{"invalid transition, nil allowed", &commands.TransitionError{From: "done", To: "todo"}},
	{"invalid transition, sentinel", commands.ErrInvalidTransition},
	{"task closed", &commands.TaskClosedError{TaskID: "T-0001", Status: "done"}},
	{"task closed, sentinel", commands.ErrTaskClosed},
	{"writeback required", &commands.WritebackError{TaskID: "T-0001", Missing: []string{"thought_record"}}},
	{"writeback required, missing unset", &commands.WritebackError{TaskID: "T-0001"}},
	{"writeback required, sentinel", commands.ErrWritebackRequired},
	{"circular dependency", &commands.CycleError{TaskID: "T-0001", ParentID: "T-0003"}},
	{"circular dependency, sentinel", commands.ErrCircularDependency},
	{"already finalized", &commands.FinalizedError{SessionID: "A-0001"}},
	{"already finalized, sentinel", commands.ErrAlreadyFinalized},
	{"read only", commands.ErrReadOnly},
	{"read only, wrapped", fmt.Errorf("task_create: %w", commands.ErrReadOnly)},
	{"forbidden", &forbiddenError{"task_create"}},
	{"forbidden, wrapped", fmt.Errorf("authorize: %w", &forbiddenError{"merkle_finalize"})},
	{"duplicate", &commands.DuplicateError{ExistingID: "L-0003", Similarity: 0.75}},
	{"duplicate, wrapped", fmt.Errorf("learning_record: %w", &commands.DuplicateError{ExistingID: "L-0003", Similarity: 0.75})},
	{"duplicate, sentinel", commands.ErrDuplicate},
	{"storage", &commands.StorageError{Reason: "disk full", Err: errors.New("write /data/logbook.db: no space left on device")}},
	{"storage, no reason", &commands.StorageError{Err: errors.New("x")}},
	{"storage, outcome unknown", &commands.StorageError{Reason: "the hub exited before answering", Err: errors.New("EOF"), Unknown: true}},
	{"storage, sentinel", fmt.Errorf("commit: %w", commands.ErrStorage)},
	{"internal, unmapped", errors.New("projection /srv/x is corrupt at seq 12")},
	{"internal, context", context.Canceled},
}

func TestErrorTableGolden(t *testing.T) {
	s, logs := newTestServer(t, nil, Options{})
	var b strings.Builder
	for _, tc := range errorCases {
		code, reply := s.Encode(nil, tc.err)
		fmt.Fprintf(&b, "# %s\n%s %s\n\n", tc.name, code, reply)
	}
	golden(t, "errors.golden", []byte(b.String()))
	// The causes of unmapped errors are logged, never sent.
	if !strings.Contains(logs.String(), "projection /srv/x is corrupt") {
		t.Errorf("unmapped cause not logged: %q", logs.String())
	}
	if strings.Contains(b.String(), "/srv/x") || strings.Contains(b.String(), "/var/lib") || strings.Contains(b.String(), "/data/") {
		t.Errorf("a path leaked into a reply:\n%s", b.String())
	}
}

func TestErrorCodesCoverTable(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range errorCases {
		f, _ := classify(tc.err)
		seen[f.Code] = true
	}
	for _, code := range errorCodes {
		if !seen[code] {
			t.Errorf("no case yields %s", code)
		}
	}
	if len(seen) != len(errorCodes) {
		t.Errorf("cases yield %d codes, the table has %d", len(seen), len(errorCodes))
	}
}

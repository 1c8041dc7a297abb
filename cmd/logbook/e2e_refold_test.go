package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestE2ERefoldMissingProjections: a rebuild cut off after it dropped the
// projections (here: its first transaction, run by the test) leaves the
// file with none under two running serve processes. Both keep answering:
// the one holding the file folds them again from the log, once, and
// logbook verify then finds the file whole, its projections those a
// rebuild makes.
func TestE2ERefoldMissingProjections(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "refold.db")
	a := startE2E(t, e2eConfig{DB: db, Agent: "a"})
	a.initialize("2025-11-25")
	var created struct {
		TaskID string `json:"task_id"`
	}
	a.ok("task_create", map[string]any{"title": "before the cut", "project": "refold"}, &created)
	b := startE2E(t, e2eConfig{DB: db, Agent: "b"})
	b.initialize("2025-11-25")
	b.ok("task_create", map[string]any{"title": "also before", "project": "refold"}, nil)

	l, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// What the rebuild's first transaction of the swap does.
	if err := l.Update(func(tx *boltstore.Tx) error { return tx.DropSpaces() }); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	for round := range 3 {
		for _, s := range []*e2eServer{a, b} {
			var got struct {
				Title string `json:"title"`
			}
			s.ok("task_get", map[string]any{"task_id": created.TaskID}, &got)
			if got.Title != "before the cut" {
				t.Errorf("round %d: task_get(%s) from %s = %+v", round, created.TaskID, s.cfg.Agent, got)
			}
			s.ok("task_create", map[string]any{"title": "after the cut", "project": "refold"}, nil)
		}
	}
	const refolding = "holds no projections"
	if n := strings.Count(a.stderr.String(), refolding) + strings.Count(b.stderr.String(), refolding); n != 1 {
		t.Errorf("the processes logged %d refolds, want 1; stderr of a:\n%s\nof b:\n%s", n, a.stderr, b.stderr)
	}
	r := run(t, "verify", "--db", db)
	wantExit(t, r, 0, "verify")
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshot(t *testing.T) {
	path := healthyLedger(t, 8)
	dir := t.TempDir()
	out := filepath.Join(dir, "copy.db")
	r := run(t, "snapshot", "--db", path, "--out", out, "--json")
	wantExit(t, r, 0, "snapshot")
	var snap struct {
		Size     uint64
		Head     string
		Root     string
		LockedMS float64 `json:"locked_ms"`
	}
	decodeJSON(t, r, &snap)
	orig, _ := verifyJSONOf(t, "--db", path)
	cp, vr := verifyJSONOf(t, "--db", out)
	wantExit(t, vr, 0, "verify the snapshot")
	if snap.Size != orig.Size || snap.Root != orig.Root || cp.Root != orig.Root || cp.Head != orig.Head || !cp.Projections.Checked {
		t.Errorf("snapshot %+v\noriginal %+v\ncopy %+v", snap, orig, cp)
	}
	// The copy answers like the original.
	for _, args := range [][]string{{"root", "--size", "9"}, {"replay", "--task", "T-0002"}} {
		a := run(t, append(args, "--db", path)...)
		b := run(t, append(args, "--db", out)...)
		if a.code != 0 || a.stdout != b.stdout {
			t.Errorf("%v differs on the copy:\n%s\n%s", args, a.stdout, b.stdout)
		}
	}
	r = run(t, "snapshot", "--db", path, "--out", out)
	wantExit(t, r, 2, "snapshot over an existing file")
	if !strings.Contains(r.stderr, "exists") {
		t.Error(r.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestRebuild(t *testing.T) {
	path := healthyLedger(t, 5)
	editTaskTitle(t, path, 2, "Write the verifier", "Write the VERIFIER")
	wantExit(t, run(t, "verify", "--db", path), 1, "verify an edited projection")
	r := run(t, "rebuild", "--db", path, "--json")
	wantExit(t, r, 0, "rebuild")
	var out struct {
		Events  uint64
		Version uint64
	}
	decodeJSON(t, r, &out)
	if out.Events != headOf(t, path) || out.Version == 0 {
		t.Errorf("rebuild: %s", r.stdout)
	}
	wantExit(t, run(t, "verify", "--db", path), 0, "verify after rebuild")
	r = run(t, "rebuild", "--db", path)
	wantExit(t, r, 0, "rebuild again")
	if !strings.HasPrefix(r.stdout, "rebuilt projections (version ") {
		t.Errorf("rebuild: %s", r.stdout)
	}
}

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestSnapshotKilledLeavesNoCopy: logbook snapshot killed with SIGKILL
// (which runs no clean-up) leaves its temporary files next to --out (its
// copy, or its refold's scratch file); the next snapshot to the same --out
// removes them, leaving alone those of a process still running. Before,
// each killed snapshot could leave a whole copy of the ledger behind, under
// a random name no later run looked for.
func TestSnapshotKilledLeavesNoCopy(t *testing.T) {
	path := sharedHealthyLedger(t, 2000)
	dir := t.TempDir()
	out := filepath.Join(dir, "copy.db")
	// A running snapshot's file: this process is alive, its file unlocked.
	live := filepath.Join(dir, fmt.Sprintf(".copy.db.snapshot-%d-1", os.Getpid()))
	if err := os.WriteFile(live, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	left := func() map[string]bool {
		names := map[string]bool{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if n := e.Name(); n != "copy.db" && n != filepath.Base(live) {
				names[n] = true
			}
		}
		return names
	}
	for killed, runs := 0, 0; killed < 3; runs++ {
		if runs == 50 {
			t.Fatalf("%d of %d snapshots killed at work", killed, runs)
		}
		before := left()
		cmd := exec.Command(logbookBin, "snapshot", "--db", path, "--out", out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed as soon as it has made a file (or written out).
	wait:
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); runtime.Gosched() {
			if _, err := os.Stat(out); err == nil {
				break
			}
			for n := range left() {
				if !before[n] {
					break wait
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if _, err := os.Stat(out); err == nil {
			os.Remove(out)
		} else if len(left()) > 0 {
			killed++
		}
	}
	wantExit(t, run(t, "snapshot", "--db", path, "--out", out), 0, "snapshot after killed ones")
	if l := left(); len(l) != 0 {
		t.Errorf("killed snapshots' files left behind: %v", l)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's file was removed: %v", err)
	}
	wantExit(t, run(t, "verify", "--db", out), 0, "verify the snapshot")
}

// TestSnapshotNoRoom: a snapshot with no room for its copy (here the file
// may grow no more: RLIMIT_FSIZE, as on a full disk) exits 2 saying the
// disk is full about --out, not about a temporary file the operator never
// named ("snapshot: snapshot: write: file resize error: truncate
// ..copy.db.snapshot-….tmp-…: file too large" before), and leaves nothing.
func TestSnapshotNoRoom(t *testing.T) {
	path := sharedHealthyLedger(t, 2000)
	dir := t.TempDir()
	out := filepath.Join(dir, "copy.db")
	cmd := exec.Command("sh", "-c", `ulimit -f 100 && exec "$0" snapshot --db "$1" --out "$2"`, logbookBin, path, out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("snapshot under a file size limit: %v, want exit 2\n%s", err, stderr.String())
	}
	want := "logbook: snapshot: --out " + out + ": the disk is full (or the file may grow no more): no room for the copy; nothing was written\n"
	if stderr.String() != want {
		t.Errorf("stderr %q\nwant   %q", stderr.String(), want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestSnapshotBesideANodeCopysMarker: a snapshot is a ledger to use alone;
// at a path beside which a node's copy left its marker (<out>.stream: the
// copy moved aside), every writer but that node would then be refused it.
// The snapshot is refused, saying so, and nothing is written.
func TestSnapshotBesideANodeCopysMarker(t *testing.T) {
	path := sharedHealthyLedger(t, 2000)
	dir := t.TempDir()
	out := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(out+".stream", []byte("team\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "snapshot", "--db", path, "--out", out)
	if r.code != 2 || !strings.Contains(r.stderr, "was the local copy of stream team") || !strings.Contains(r.stderr, "remove "+out+".stream") {
		t.Fatalf("snapshot beside a node copy's marker: %v, want exit 2 naming the marker", r)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

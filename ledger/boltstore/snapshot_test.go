package boltstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotRemovesStaleCopies: what a killed snapshot left (a hidden,
// unlocked temporary file) is removed by the next snapshot to the same
// place; a temporary file still locked by a running snapshot is left alone.
func TestSnapshotRemovesStaleCopies(t *testing.T) {
	l := openTest(t)
	appendN(t, l, 20)
	dir := t.TempDir()
	dst := filepath.Join(dir, "snap.db")
	stale := filepath.Join(dir, tempPrefix(dst)+"123")
	live := filepath.Join(dir, tempPrefix(dst)+"456")
	for _, p := range []string{stale, live} {
		if err := os.WriteFile(p, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.OpenFile(live, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if !tryLock(held) {
		t.Fatal("could not lock the live copy")
	}
	rep, err := l.Snapshot(context.Background(), dst, SnapshotOptions{})
	if err != nil || rep.Size != 20 {
		t.Fatalf("snapshot: %d events, %v", rep.Size, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale copy is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a running snapshot's copy was removed: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, tempPrefix(dst)+"*"))
	if len(left) != 1 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestSnapshotStaleCopiesByPrefix: a snapshot's name may hold the
// characters of a glob pattern; the stale copies it removes are its own
// (their names begin with its temporary prefix), never another snapshot's
// that the pattern would have matched (snap*.db's ".snap*.db.tmp-*" matches
// ".snapX.db.tmp-1", the copy of a snapshot to snapX.db).
func TestSnapshotStaleCopiesByPrefix(t *testing.T) {
	l := openTest(t)
	appendN(t, l, 5)
	dir := t.TempDir()
	dst := filepath.Join(dir, "snap*.db")
	other := filepath.Join(dir, tempPrefix(filepath.Join(dir, "snapX.db"))+"1")
	own := filepath.Join(dir, tempPrefix(dst)+"2")
	for _, p := range []string{other, own} {
		if err := os.WriteFile(p, []byte("left"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Snapshot(context.Background(), dst, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another snapshot's copy was removed: %v", err)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("the snapshot's own stale copy is still there: %v", err)
	}
}

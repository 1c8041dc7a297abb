package boltstore

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOpenScratchRemovesDeadScratch: a scratch file whose process was
// killed before removing its name (a rebuild's beside the ledger, a
// verify's in the temp dir) is removed by the next OpenScratch with the
// same prefix there; the files of a live process, a locked file, and names
// of another form are left alone. Before, scratch files were named
// prefix + random only, and each killed rebuild's stayed for good.
func TestOpenScratchRemovesDeadScratch(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no process to outlive:", err)
	}
	dead, alive := gone.Process.Pid, os.Getpid()
	dir := t.TempDir()
	names := map[string]bool{ // name: whether OpenScratch removes it
		fmt.Sprintf("x-%d-1", dead):       true,
		fmt.Sprintf("x-%d-2.db", dead):    true,
		fmt.Sprintf("x-%d-3", alive):      false,
		fmt.Sprintf("x-%d-4", dead):       false, // held locked below
		fmt.Sprintf("y-%d-5", dead):       false,
		fmt.Sprintf("x-%d", dead):         false,
		"x-123456789012345678901234567-6": false,
		"x-notapid-7":                     false,
	}
	for name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("x-%d-4", dead)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if !tryLock(held) {
		t.Fatal("could not lock")
	}
	s, err := OpenScratch(dir, "x-", "")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for name, removed := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); os.IsNotExist(err) != removed {
			t.Errorf("%s: removed %v, want %v", name, os.IsNotExist(err), removed)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 6 {
		t.Errorf("left: %v", entries)
	}
}

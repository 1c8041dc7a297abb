package boltstore

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Where statx is refused — EPERM from a sandbox (older container seccomp
// profiles), ENOSYS from a kernel older than 4.11 — statPath reads the
// file through stat instead, and a commit's check goes on; another error
// is the file's.
func TestStatPathWithoutStatx(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 77), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := statPath(path)
	if err != nil {
		t.Fatal(err)
	}
	real := statx
	t.Cleanup(func() { statx = real })
	for _, errno := range []unix.Errno{unix.EPERM, unix.ENOSYS} {
		called := false
		statx = func(int, string, int, int, *unix.Statx_t) error { called = true; return errno }
		got, err := statPath(path)
		if !called || err != nil || got != want {
			t.Errorf("statx failing with %v: %+v, %v (statx called: %v); want %+v", errno, got, err, called, want)
		}
	}
	statx = func(int, string, int, int, *unix.Statx_t) error { return unix.EIO }
	if _, err := statPath(path); err == nil {
		t.Error("statx failing with EIO: no error")
	}
}

package boltstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := statPath(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := statFile(f); err != nil || got != want {
		t.Fatalf("statFile: %+v, %v; statPath: %+v", got, err, want)
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
		called = false
		got, err = statFile(f)
		if !called || err != nil || got != want {
			t.Errorf("statx failing with %v: statFile %+v, %v (statx called: %v); want %+v", errno, got, err, called, want)
		}
	}
	statx = func(int, string, int, int, *unix.Statx_t) error { return unix.EIO }
	if _, err := statPath(path); err == nil {
		t.Error("statx failing with EIO: no error")
	}
	if _, err := statFile(f); err == nil {
		t.Error("statx failing with EIO: statFile: no error")
	}
}

// Commits ask no file's times. A stat that reads a file's change time
// makes the kernel (6.13 and later: multigrain timestamps) give that
// file's next write a fine-grained time; a check of the journal that did
// at each commit (mayPend's, in session 28) made every record change the
// journal's mtime, and every flush of the journal write its inode too: a
// second write each call waited for, about 30 µs of CPU and 55 µs of time
// a call here. Seen from outside: a record written soon after the one
// before, with no stat between, leaves the journal's mtime where that
// record set it, before the second began; asked the times at each commit,
// the second record gets its own instant, after it began. (A clock tick
// or another process's fine-grained time in between can move the mtime
// on too, so a few tries; the kernel's or file system's lack of such
// times skips the test.)
func TestCommitsAskNoTimes(t *testing.T) {
	mtime := func(path string) time.Time {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	l, path := pendingLedger(t, Options{})
	appendOne(t, l, 0) // the generation begun, the journal made
	probe := filepath.Join(filepath.Dir(path), "probe")
	if err := os.WriteFile(probe, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime(probe)
	before := time.Now()
	if err := os.WriteFile(probe, []byte("b"), 0o600); err != nil {
		t.Fatal(err)
	}
	if mtime(probe).Before(before) {
		t.Skip("no fine-grained timestamps after a stat here (a kernel before 6.13, or a file system without them)")
	}
	journal := journalPath(path)
	for range 20 {
		appendOne(t, l, 1)
		began := time.Now()
		appendOne(t, l, 2)
		if mtime(journal).Before(began) {
			return
		}
	}
	t.Fatal("every time, the second of two records gave the journal a time of its own: a commit asked the journal's times")
}

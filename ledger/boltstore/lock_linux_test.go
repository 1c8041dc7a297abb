package boltstore

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openFilesOf counts this process's open files of path.
func openFilesOf(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// holdFlock takes path's flock on an open file of its own, as another
// process holding the ledger would.
func holdFlock(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return f
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) { // a hang bound
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// Opens of a file another process holds too long each give up with
// ErrLocked; the flock they waited in cannot be interrupted, but they share
// one parked wait instead of leaving one blocked thread and open file each,
// and that wait lets go once it is granted.
func TestLockTimeoutsShareOneWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	holder := holdFlock(t, path)
	open := lockedOpener(5*time.Millisecond, false)
	for i := range 40 {
		if _, err := open(path, os.O_RDWR, 0o600); !errors.Is(err, ErrLocked) {
			t.Fatalf("attempt %d: %v, want ErrLocked", i, err)
		}
	}
	if n := openFilesOf(t, path); n != 2 {
		t.Fatalf("after 40 timed-out opens, %d open files of the ledger, want 2 (the holder's and one parked wait)", n)
	}
	holder.Close()
	waitFor(t, "the parked wait lets go", func() bool { return openFilesOf(t, path) == 0 })
	f, err := open(path, os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("open once the holder let go: %v", err)
	}
	f.Close()
}

// An open that takes over a parked wait gets the lock when the holder lets
// go, and holds it.
func TestLockTakesOverParkedWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	holder := holdFlock(t, path)
	if _, err := lockedOpener(5*time.Millisecond, false)(path, os.O_RDWR, 0o600); !errors.Is(err, ErrLocked) {
		t.Fatalf("%v, want ErrLocked", err)
	}
	got := make(chan error, 1)
	var f *os.File
	go func() {
		var err error
		f, err = lockedOpener(time.Minute, false)(path, os.O_RDWR, 0o600)
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if n := openFilesOf(t, path); n != 2 {
		t.Fatalf("%d open files of the ledger while the second open waits, want 2: it took over the parked wait", n)
	}
	holder.Close()
	if err := <-got; err != nil {
		t.Fatalf("open after the holder let go: %v", err)
	}
	probe, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if tryLock(probe) {
		t.Fatal("the open returned a file without its lock")
	}
	f.Close()
	if !tryLock(probe) {
		t.Fatal("closing the returned file did not release the lock")
	}
}

// A parked wait on a file since replaced at its path is not handed out: the
// open gets the file now at the path.
func TestLockParkedWaitOnReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.db")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	holder := holdFlock(t, path)
	if _, err := lockedOpener(5*time.Millisecond, false)(path, os.O_RDWR, 0o600); !errors.Is(err, ErrLocked) {
		t.Fatalf("%v, want ErrLocked", err)
	}
	if err := os.WriteFile(path+".new", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var f *os.File
	go func() {
		var err error
		f, err = lockedOpener(time.Minute, false)(path, os.O_RDWR, 0o600)
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	holder.Close() // lets the parked wait on the old file be granted
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 3)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v: want the file now at the path", b, err)
	}
}

// A parked wait on a file since replaced at its path, whose holder never
// lets go, does not stand in the way of opens of the new file: they get it
// at once (attack review: every open waited on the old file's lock and
// gave up with ErrLocked).
func TestLockParkedWaitOnReplacedFileStillHeld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.db")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	holder := holdFlock(t, path)
	defer holder.Close()
	open := lockedOpener(50*time.Millisecond, false)
	if _, err := open(path, os.O_RDWR, 0o600); !errors.Is(err, ErrLocked) {
		t.Fatalf("%v, want ErrLocked", err)
	}
	if err := os.WriteFile(path+".new", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f, err := open(path, os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("open %d of the new file while the old one is held: %v", i, err)
		}
		b := make([]byte, 3)
		if _, err := f.ReadAt(b, 0); err != nil || string(b) != "new" {
			t.Fatalf("read %q, %v: want the file now at the path", b, err)
		}
		f.Close()
	}
}

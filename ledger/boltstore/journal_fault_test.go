//go:build linux

package boltstore

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// failSync makes the next n fdatasyncs of the file named name fail with
// EIO (the write before it may or may not have reached the disk). It
// returns how many failed so far.
func failSync(t *testing.T, name string, n int) *atomic.Int64 {
	t.Helper()
	var left, failed atomic.Int64
	left.Store(int64(n))
	real := fdatasync
	fdatasync = func(f *os.File) error {
		if f.Name() == name && left.Add(-1) >= 0 {
			failed.Add(1)
			return syscall.EIO
		}
		return real(f)
	}
	t.Cleanup(func() { fdatasync = real })
	return &failed
}

// recoverImage copies the ledger at path and its journal, as they stand,
// and opens the copy in another boot: what a machine that stops now leaves
// when every page of the file is on disk. It returns the events it holds,
// after checking that it verifies.
func recoverImage(t *testing.T, path string) [][]byte {
	t.Helper()
	img := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, path, img)
	if _, err := os.Stat(journalPath(path)); err == nil {
		copyFile(t, journalPath(path), journalPath(img))
	}
	setBoot(t, "another-boot")
	defer setBoot(t, mustBoot(t))
	r, err := Open(img, Options{})
	if err != nil {
		t.Fatalf("open after the stop: %v", err)
	}
	rep, err := r.Verify(context.Background(), VerifyOptions{})
	r.Close()
	if err != nil {
		t.Fatalf("verify after the stop: %v", err)
	}
	got := storedEvents(t, img, nil)
	if rep.Size != uint64(len(got)) {
		t.Fatalf("verify saw %d events, the file holds %d", rep.Size, len(got))
	}
	return got
}

// A generation's header whose fdatasync failed may be on disk all the same:
// the commits that go on synced (no generation, so no pin) must not leave
// it holding, or a stop brings back its checkpoint — refused as damaged
// once its pages are reused, or rolled back to, losing every commit since.
func TestJournalHeaderSyncFails(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	appendOne(t, l, 0) // the first generation: the journal exists
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, Options{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	failed := failSync(t, journalPath(path), 1)
	for i := range 30 {
		appendOne(t, l, i+1)
	}
	if failed.Load() == 0 {
		t.Fatal("no fdatasync of the journal failed")
	}
	want := storedEvents(t, path, l)
	if got := recoverImage(t, path); len(got) != len(want) {
		t.Fatalf("%d events after the stop, want the %d acknowledged", len(got), len(want))
	}
}

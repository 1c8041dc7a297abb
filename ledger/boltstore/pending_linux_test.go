package boltstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A reader that may not write the file cannot recover commits pending
// (the file on a file system mounted read-only): it is refused,
// ErrUnrecovered, saying so, and the file is left as it was.
func TestPendingStoppedReaderCannotWrite(t *testing.T) {
	l, path := pendingLedger(t, Options{Hold: true})
	for i := range 5 {
		appendOne(t, l, i)
	}
	img := recoverImageCopy(t, path)
	mnt := mountTmpfs(t, 8<<20)
	at := filepath.Join(mnt, "ledger.db")
	copyFile(t, img, at)
	copyFile(t, journalPath(img), journalPath(at))
	if err := unix.Mount("", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("remount read-only: %v", err)
	}
	before, _ := os.ReadFile(at)
	_, err := Open(at, Options{ReadOnly: true})
	if !errors.Is(err, ErrUnrecovered) || !strings.Contains(err.Error(), "open the ledger once with a writer") {
		t.Fatalf("open: %v, want ErrUnrecovered saying to open it with a writer", err)
	}
	if after, _ := os.ReadFile(at); string(after) != string(before) {
		t.Error("the refused open changed the file")
	}
}

package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	"golang.org/x/sys/unix"
)

// The file cannot grow (RLIMIT_FSIZE at its size): a generation's pin
// keeps every page its commits freed from reuse, so its commits take new
// pages at the end of the file until none is left. The commit that finds
// none fails; the generation must then end, so that the next commit may
// reuse what the generation freed. It did not, held (a process holding the
// file keeps its generation across commits): every later commit failed as
// well, for as long as the file could not grow, however small, while a
// Store sharing the file (whose failed session ended the generation) went
// on committing.
func TestJournalFileCannotGrowFailedCommitEndsGeneration(t *testing.T) {
	for _, hold := range []bool{true, false} {
		l, path, _ := journaled(t, Options{Hold: hold})
		noCheckpoints(l)
		appendOne(t, l, 0)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		restore := limitFileSize(t, max(fi.Size(), journalSize))
		var failed error
		commits := 0
		// Held, fewer commits than a generation's: none ends meanwhile.
		most := genCommits - 4
		if !hold {
			most = 1000
		}
		for ; commits < most && failed == nil; commits++ {
			failed = appendSized(l, 8<<10)
		}
		after := l.Update(func(tx *Tx) error {
			_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{"T-1"}, Payload: []byte{0x81, 0xa1, 'i', 1}})
			return err
		})
		restore()
		if failed == nil {
			t.Fatalf("hold %v: %d commits, none failed: the file grew past RLIMIT_FSIZE", hold, commits)
		}
		if after != nil {
			t.Errorf("hold %v: after a commit failed (%v) at the file's end, a small one failed too: %v", hold, failed, after)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if got := recoverImage(t, path); len(got) != len(storedEvents(t, path, nil)) {
			t.Errorf("hold %v: recovery found %d events", hold, len(got))
		}
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted at
// the end of the test, or skips the test where it cannot (not root).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file in dir until its file system has no space left,
// and returns its name: removing it frees the space.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for n := len(block); n > 0; n /= 2 {
		for err == nil {
			_, err = f.Write(block[:n])
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("fill the disk: %v", err)
		}
		err = nil
	}
	return name
}

// A Store on a file system that is full (a tmpfs), held or sharing the
// file, its journal made before the disk filled or not (the journal, 1 MiB
// of zeros written once, is then the file that cannot be made): commits
// fail with ErrDiskFull and leave nothing, however many; once space is
// freed the next commit succeeds, on the same Store, and a generation's
// worth later commits go through the journal again (held, the journal
// that could not be made was never tried again: every commit synced until
// a restart); the journal is never more than its size; a stop at any
// point recovers every acknowledged event; and the ledger opens again.
func TestDiskFullTmpfs(t *testing.T) {
	for _, c := range []struct {
		name          string
		hold, journal bool
	}{
		{"held", true, true},
		{"shared", false, true},
		{"held, no journal yet", true, false},
		{"shared, no journal yet", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !NoSyncSupported() {
				t.Skip("no boot id here: no journal")
			}
			mnt := mountTmpfs(t, 4<<20)
			path := filepath.Join(mnt, "ledger.db")
			l, err := Open(path, Options{Create: true, Hold: c.hold})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if c.journal {
				appendOne(t, l, 0)
			}
			filler := fillDisk(t, mnt)
			acked := len(storedEvents(t, path, l))
			full := 0
			for i := 0; i < 2000 && full < 20; i++ {
				switch err := appendSized(l, 4<<10); {
				case err == nil:
					acked++
				case errors.Is(err, ErrDiskFull):
					full++
				default:
					t.Fatalf("commit %d on a full disk: %v, want ErrDiskFull", i, err)
				}
			}
			if full == 0 {
				t.Fatal("no commit failed: the disk never filled")
			}
			if got := len(storedEvents(t, path, l)); got != acked {
				t.Fatalf("%d events, %d acknowledged", got, acked)
			}
			if got := recoverImage(t, path); len(got) != acked {
				t.Fatalf("a stop while full: %d events recovered, %d acknowledged", len(got), acked)
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			// A generation's worth: a journal that could not be made then
			// is tried again.
			for i := range genCommits + 2 {
				if err := appendSized(l, 4<<10); err != nil {
					t.Fatalf("commit %d after the space was freed: %v", i, err)
				}
				acked++
			}
			l.commitMu.Lock()
			journaling := l.open != nil && l.open.gen != nil
			l.commitMu.Unlock()
			if c.hold && !journaling {
				t.Errorf("held, %d commits after the space was freed, none runs a journal generation: synced, two flushes each, until a restart", genCommits+2)
			}
			if fi, err := os.Stat(journalPath(path)); err != nil || fi.Size() > journalSize {
				t.Fatalf("the journal: %v (%d bytes)", err, fi.Size())
			}
			if got := recoverImage(t, path); len(got) != acked {
				t.Fatalf("a stop after: %d events recovered, %d acknowledged", len(got), acked)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := len(storedEvents(t, path, nil)); got != acked {
				t.Fatalf("reopened: %d events, %d acknowledged", got, acked)
			}
		})
	}
}

// A commit that fails whose journal record's write wrote nothing (a full
// copy-on-write file system refuses even an overwrite, as btrfs does;
// here RLIMIT_FSIZE below the record's place) has no record to take back.
// Taking it back failed the same way, and the commit was answered
// ErrOutcomeUnknown, though certainly not in the ledger: it is a failed
// commit (ErrDiskFull), and the next commits, with room, succeed.
func TestJournalUnwrittenRecordNotTakenBack(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	appendOne(t, l, 0)
	appendOne(t, l, 1)
	restore := limitFileSize(t, journalRecords)
	err := appendSized(l, 1000)
	restore()
	switch {
	case err == nil:
		t.Fatal("the commit succeeded under RLIMIT_FSIZE")
	case errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, ErrDiskFull):
		t.Fatalf("a commit whose record was not written: %v, want ErrDiskFull and not ErrOutcomeUnknown", err)
	}
	appendOne(t, l, 2)
	want := storedEvents(t, path, l)
	if len(want) != 3 {
		t.Fatalf("%d events, want 3", len(want))
	}
	if got := recoverImage(t, path); len(got) != len(want) {
		t.Fatalf("%d events recovered, want %d", len(got), len(want))
	}
}

//go:build linux

package boltstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// failSync makes the next n fdatasyncs of the file named name fail with
// EIO (the write before it may or may not have reached the disk). It
// returns how many failed so far.
func failSync(t *testing.T, name string, n int) *atomic.Int64 {
	t.Helper()
	return failSyncWhen(t, n, func(f *os.File) bool { return f.Name() == name })
}

// failSyncWhen makes the next n fdatasyncs for which fails is true fail
// with EIO, and returns how many failed so far.
func failSyncWhen(t *testing.T, n int, fails func(*os.File) bool) *atomic.Int64 {
	t.Helper()
	var left, failed atomic.Int64
	left.Store(int64(n))
	real := fdatasync
	fdatasync = func(f *os.File) error {
		if fails(f) && left.Add(-1) >= 0 {
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

// bbolt remaps its file when it outgrows the mapping, and a remap waits
// for every read transaction: the pin's too, held by the committer that
// waits. So no generation may run while its commits can grow the file past
// the mapping — neither one begun after another (nextGeneration) on a file
// past the limit, nor one whose commit is larger than what is left.
func TestJournalGrowthPastMapping(t *testing.T) {
	old := journalMap
	journalMap = 16 << 20 // the limit: 8 MiB
	t.Cleanup(func() { journalMap = old })
	for _, c := range []struct {
		name           string
		commits, bytes int
	}{
		{"generations", 1600, 12 << 10}, // 64 records fill most of the journal
		{"one commit", 1, 20 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			l, err := Open(path, Options{Create: true, Hold: true})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			var n atomic.Int64
			go func() {
				for range c.commits {
					n.Add(1)
					if err := appendSized(l, c.bytes); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			// A remap waiting for the pin stops every commit for ever: the
			// watchdog fails the test when none ended for 20 s, however
			// slow a loaded machine makes the 1,600 commits in all.
			tick := time.NewTicker(20 * time.Second)
			defer tick.Stop()
			for last := int64(-1); ; {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-tick.C:
					if now := n.Load(); now != last {
						last = now
						continue
					}
					fi, _ := os.Stat(path)
					t.Fatalf("commit %d of %d hangs, the file at %d bytes: a remap waits for the pin", n.Load(), c.commits, fi.Size()) // the Store is left open
				}
				break
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := storedEvents(t, path, nil); len(got) != c.commits {
				t.Fatalf("%d events, want %d", len(got), c.commits)
			}
		})
	}
}

// The store builds for 32-bit Linux too (no journal there: journalOS),
// where an int holds no 64 GiB.
func TestJournalBuilds32Bit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package")
	}
	for _, arch := range []string{"386", "arm"} {
		cmd := exec.Command("go", "build", ".")
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOARCH=%s go build: %v\n%s", arch, err, out)
		}
	}
}

// Two processes that create the same new ledger at once: the one that
// found no file must not take the journal the other now commits through
// for a deleted ledger's, and remove it — the other's records would go on
// into a file no longer there, lost with the machine.
func TestJournalCreateRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	var b *Store
	openFoundNoFile = func() {
		openFoundNoFile = nil
		var err error
		if b, err = Open(path, Options{Create: true}); err != nil {
			t.Fatal(err)
		}
		b.quiet = time.Hour // it keeps the file until another process waits
		appendN(t, b, 2)
	}
	t.Cleanup(func() { openFoundNoFile = nil })
	a, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.jfile == nil {
		t.Fatal("the other process's commits went through no journal")
	}
	bi, err := b.jfile.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(journalPath(path)); err != nil || !os.SameFile(fi, bi) {
		t.Fatalf("the journal the other process writes is no longer at %s (%v)", journalPath(path), err)
	}
	appendN(t, b, 1)
	if !readHeader(t, path) {
		t.Fatal("mid-generation, no header holds in the journal at the path")
	}
}

// A file beside the ledger whose name is the journal's but which is no
// journal — another ledger, x.journal beside x — is never written nor
// removed: creating x and committing to it leave x.journal as it was.
func TestJournalNameOfAnotherLedger(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	other, err := Open(journalPath(path), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, other, 3)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, Options{Create: true, Hold: true})
	if err != nil {
		t.Fatalf("create beside another ledger named as its journal: %v", err)
	}
	appendN(t, l, 100)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatalf("the other ledger: %v", err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the other ledger's file was written")
	}
	if got := storedEvents(t, path, nil); len(got) != 100 {
		t.Fatalf("%d events, want 100", len(got))
	}
}

// A commit that brings events in other than by Append (Tx.Ingest, a
// replica's catch-up) has nothing the journal records: it ends the
// generation, syncing the file, rather than be acknowledged unsynced with
// no record (review of the journal: such events were lost to a power loss).
func TestJournalIngestSyncs(t *testing.T) {
	src, err := Open(filepath.Join(t.TempDir(), "src.db"), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		appendOne(t, src, i)
	}
	raws := storedEvents(t, src.Path(), src)
	src.Close()
	l, path, _ := journaled(t, Options{Hold: true})
	for _, batch := range [][][]byte{raws[:3], raws[3:]} {
		err := l.Update(func(tx *Tx) error {
			for _, raw := range batch {
				if _, err := tx.Ingest(raw); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if readHeader(t, path) {
			t.Fatal("the journal holds a generation after a commit that ingested events: they are unsynced, with no record")
		}
	}
	if got := storedEvents(t, path, l); len(got) != len(raws) {
		t.Fatalf("%d events, want %d", len(got), len(raws))
	}
}

// A journal removed (or replaced) while a Store commits through it is
// noticed at the next generation: records go to the journal at the path
// again, and a power loss after that loses nothing (before, every later
// record went to the removed file, which no open finds).
func TestJournalRemovedWhileOpen(t *testing.T) {
	l, path, checkpoint := journaled(t, Options{Hold: true})
	appendOne(t, l, 0)
	if err := os.Remove(journalPath(path)); err != nil {
		t.Fatal(err)
	}
	for i := range 2*genCommits + 5 {
		appendOne(t, l, i+1)
	}
	if !readHeader(t, path) {
		t.Fatal("no journal at the path holds the generation the Store commits in")
	}
	want := storedEvents(t, path, l)
	rng := rand.New(rand.NewPCG(3, 9))
	for round := range 6 {
		setBoot(t, "boot-after-removal-"+string(rune('a'+round)))
		recoversAll(t, powerLoss(t, rng, checkpoint, path, t.TempDir()), want)
	}
}

// recoversAll opens img, a ledger a stop left, as a writer (recovering
// what its journal holds) and checks that it then holds the events want,
// and verifies.
func recoversAll(t *testing.T, img string, want [][]byte) {
	t.Helper()
	r, err := Open(img, Options{})
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	_, err = r.Verify(context.Background(), VerifyOptions{})
	r.Close()
	if err != nil {
		t.Fatalf("verify after recovery: %v", err)
	}
	got := storedEvents(t, img, nil)
	if len(got) != len(want) {
		t.Fatalf("%d events after recovery, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d differs after recovery", i+1)
		}
	}
}

// headerBoot returns the boot id in the header of the journal of the
// ledger at path, and whether a header holds.
func headerBoot(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := decodeHeader(b)
	return string(h.boot), ok
}

// A failed fdatasync of the ledger file may leave pages off the disk that
// Linux then marks clean, so that the next fdatasync succeeds without
// them. After one, the Store commits no more, and the header is made
// another boot's: an open in this boot too recovers from the checkpoint
// and the records, losing no acknowledged event whatever pages the disk
// lacks (review of the journal: the next sync succeeded and the header was
// retired over a file the disk did not hold).
func TestJournalFileSyncFails(t *testing.T) {
	l, path, checkpoint := journaled(t, Options{Hold: true})
	failed := failSync(t, path, 1)
	acked := 0
	var err error
	for i := 0; i < 2*genCommits && err == nil; i++ {
		if err = l.Update(func(tx *Tx) error {
			_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{"T-1"}, Payload: []byte{0x81, 0xa1, 'i', byte(i & 0x7f)}})
			return err
		}); err == nil {
			acked++
		}
	}
	if failed.Load() != 1 || !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("after %d acknowledged commits and %d failed syncs: %v, want ErrSyncFailed", acked, failed.Load(), err)
	}
	if err := l.Update(func(tx *Tx) error { return nil }); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("a commit after the failed sync: %v, want ErrSyncFailed", err)
	}
	want := storedEvents(t, path, l)
	if len(want) != acked {
		t.Fatalf("%d events, %d acknowledged", len(want), acked)
	}
	if err := l.Close(); err != nil && !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("close: %v", err)
	}
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrUnrecovered) || !strings.Contains(err.Error(), "sync to the ledger file failed") {
		t.Fatalf("a reader: %v, want ErrUnrecovered saying the sync failed", err)
	}
	if boot, ok := headerBoot(t, path); !ok || boot != "" {
		t.Errorf("header holds %v, boot %q: want it held, another boot's", ok, boot)
	}
	rng := rand.New(rand.NewPCG(5, 11))
	for range 8 { // this boot: the pages written since the checkpoint kept, lost or torn
		recoversAll(t, powerLoss(t, rng, checkpoint, path, t.TempDir()), want)
	}
}

// The same, for the open that settles a journal a killed process left in
// this boot: if its sync of the file fails, the header is made another
// boot's, and the next open recovers rather than trusts the next sync.
func TestJournalSettleSyncFails(t *testing.T) {
	l, path, checkpoint := journaled(t, Options{Hold: true})
	for i := range 10 {
		appendOne(t, l, i)
	}
	want := storedEvents(t, path, l)
	img := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, path, img)
	copyFile(t, journalPath(path), journalPath(img))
	failSync(t, img, 1)
	if _, err := Open(img, Options{}); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("open whose sync fails: %v, want ErrSyncFailed", err)
	}
	// What the disk may hold of the file: the pages written since the
	// checkpoint kept, lost or torn.
	if boot, ok := headerBoot(t, img); !ok || boot != "" {
		t.Errorf("header holds %v, boot %q: want it held, another boot's", ok, boot)
	}
	recoversAll(t, powerLoss(t, rand.New(rand.NewPCG(1, 2)), checkpoint, img, t.TempDir()), want)
}

// A ledger whose name leaves no room for the journal's suffix (255 bytes,
// the most a name may have) has no journal: it is created, committed to,
// reopened and read as any other, its commits synced (the removal of a
// deleted ledger's journal refused to create it: file name too long).
func TestJournalNameTooLong(t *testing.T) {
	if !NoSyncSupported() {
		t.Skip("no boot id here: no journal")
	}
	path := filepath.Join(t.TempDir(), strings.Repeat("l", 252)+".db")
	for round, opts := range []Options{{Create: true}, {Hold: true}, {}} {
		l, err := Open(path, opts)
		if err != nil {
			t.Fatalf("open %d: %v", round, err)
		}
		for i := range genCommits + 3 {
			appendOne(t, l, i)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("close %d: %v", round, err)
		}
	}
	if got := storedEvents(t, path, nil); len(got) != 3*(genCommits+3) {
		t.Fatalf("%d events, want %d", len(got), 3*(genCommits+3))
	}
}

// A commit whose journal record's flush fails, and then the file's sync
// too, may or may not be in the ledger once it is next opened (the record
// may have reached the disk): it fails with ErrOutcomeUnknown, never as a
// commit that left nothing (and the Store commits no more: ErrSyncFailed).
func TestJournalCommitOutcomeUnknown(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	appendOne(t, l, 0)
	failSync(t, journalPath(path), 1)
	failSync(t, path, 1)
	err := l.Update(func(tx *Tx) error {
		_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{"T-1"}, Payload: []byte{0x81, 0xa1, 'i', 1}})
		return err
	})
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("a commit whose record and file syncs failed: %v, want ErrOutcomeUnknown and ErrSyncFailed", err)
	}
	err = l.Update(func(tx *Tx) error { return nil })
	if !errors.Is(err, ErrSyncFailed) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("the next commit: %v, want ErrSyncFailed alone (nothing of it written)", err)
	}
}

// Something other than a regular file where a file beside the ledger is
// kept — the journal, the unsynced marker — (a named pipe, a directory, a
// symbolic link, a socket) is refused, by readers and writers alike, saying
// so, and left as it is. A named pipe held every reader's Open (verify,
// replay, tasks…) for ever, deaf to SIGTERM: it was opened for reading
// without O_NONBLOCK, which waits for a writer; a marker linked to
// /dev/zero was read for ever (attack round, crash2).
func TestBesideNotRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{journalPath(path), unsyncedMarker(path)} {
		kinds := map[string]func() error{
			"named pipe": func() error { return syscall.Mkfifo(name, 0o600) },
			"directory":  func() error { return os.Mkdir(name, 0o700) },
			"symbolic link to a journal": func() error {
				real := filepath.Join(t.TempDir(), "real.journal")
				if err := os.WriteFile(real, make([]byte, journalSize), 0o600); err != nil {
					return err
				}
				return os.Symlink(real, name)
			},
			"symbolic link to /dev/zero": func() error { return os.Symlink("/dev/zero", name) },
			"dangling symbolic link":     func() error { return os.Symlink(filepath.Join(t.TempDir(), "none"), name) },
			"socket": func() error {
				fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
				if err != nil {
					return err
				}
				defer syscall.Close(fd)
				return syscall.Bind(fd, &syscall.SockaddrUnix{Name: name})
			},
		}
		for kind, mk := range kinds {
			os.RemoveAll(name)
			if err := mk(); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			before, err := os.Lstat(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, opts := range []Options{{ReadOnly: true}, {}, {Hold: true}} {
				done := make(chan error, 1)
				go func() {
					s, err := Open(path, opts)
					if err == nil {
						err = s.View(func(*Tx) error { return nil })
						if err == nil {
							err = s.Update(func(tx *Tx) error { return nil })
						}
						s.Close()
					}
					done <- err
				}()
				select {
				case err = <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("%s is a %s: Open (read-only %v) still waits after 30 s", filepath.Base(name), kind, opts.ReadOnly)
				}
				if err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("%s is a %s, read-only %v: %v, want a refusal saying it is not a regular file", filepath.Base(name), kind, opts.ReadOnly, err)
				}
			}
			after, err := os.Lstat(name)
			if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("%s, a %s, was changed: %v", filepath.Base(name), kind, err)
			}
		}
		os.RemoveAll(name)
	}
	if got := storedEvents(t, path, nil); len(got) != 3 {
		t.Fatalf("%d events, want 3", len(got))
	}
}

// A commit's journal record is written before bbolt writes its pages, so a
// commit that then fails (here: the file may not grow, RLIMIT_FSIZE) has a
// record on disk for events no call was answered for. It must be taken
// back: a machine that stops then must not bring the failed call's events
// back in the next boot. The failed commit then ends its generation
// (commit.go), retiring the header: the ledger and journal are
// taken as they stand once the take-back is flushed, before that.
func TestJournalRecordOfFailedCommitTakenBack(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	appendOne(t, l, 0)
	noCheckpoints(l)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "ledger.db")
	var taken atomic.Bool
	real := fdatasync
	fdatasync = func(f *os.File) error {
		err := real(f)
		if syncCaller() == "retractRecord" && !taken.Swap(true) {
			// On the committer's goroutine: no t.Fatal.
			if err := errors.Join(copyUnderLimit(path, img), copyUnderLimit(journalPath(path), journalPath(img))); err != nil {
				t.Errorf("copy the ledger after the take-back: %v", err)
			}
		}
		return err
	}
	t.Cleanup(func() { fdatasync = real })
	restore := limitFileSize(t, max(fi.Size(), journalSize))
	var failed error
	for i := 0; i < 200 && failed == nil; i++ {
		failed = appendSized(l, 200<<10) // its record fits the journal
	}
	restore()
	if failed == nil {
		t.Fatal("no commit failed: the file grew past RLIMIT_FSIZE")
	}
	if !taken.Load() {
		t.Fatalf("no record was taken back (the commit failed before its record was written?): %v", failed)
	}
	if !readHeader(t, img) {
		t.Fatal("the journal no longer held at the take-back: the test shows nothing")
	}
	want := storedEvents(t, path, l)
	if got := recoverImage(t, img); len(got) != len(want) {
		t.Fatalf("%d events after the stop, want the %d acknowledged (the failed commit: %v)", len(got), len(want), failed)
	}
}

// copyUnderLimit copies src to dst under RLIMIT_FSIZE at src's size, where
// copy_file_range refuses (EFBIG).
func copyUnderLimit(src, dst string) error {
	b, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, b, 0o600)
	}
	return err
}

// A commit whose outcome is unknown is unknown for the calls it ran, not
// for those after them in its batch, which never ran (it held the file
// for maxHold first): those were answered ErrOutcomeUnknown too, though
// certainly not in the ledger. They now go to the next commit.
func TestOutcomeUnknownOnlyForCallsRun(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	appendOne(t, l, 0)
	failSync(t, journalPath(path), 1)
	failSync(t, path, 1)
	// With the committer kept from the file, a (which fails, committing
	// nothing) is taken by the idle committer, b and c queue behind it and
	// form the next batch, in which b runs past maxHold: c is left out.
	// a is queued here, not by a goroutine of its own, which may not have
	// run yet when b is queued (a sleep stood for it: under load b came
	// first, and the batches were not those described).
	l.commitMu.Lock()
	a := &request{fn: func(tx *Tx) error { return errors.New("a fails") }, done: make(chan error, 1), deadline: time.Now().Add(l.opts.LockTimeout)}
	l.queue <- a
	for len(l.queue) > 0 || !l.shared.lent() { // taken, and its session begun (past drain)
		time.Sleep(time.Millisecond)
	}
	bErr, cErr := make(chan error, 1), make(chan error, 1)
	go func() {
		bErr <- l.Update(func(tx *Tx) error {
			time.Sleep(3 * maxHold)
			_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{"T-1"}, Payload: []byte{0x81, 0xa1, 'i', 1}})
			return err
		})
	}()
	for len(l.queue) < 1 {
		time.Sleep(time.Millisecond)
	}
	var cRan atomic.Bool
	go func() { cErr <- l.Update(func(tx *Tx) error { cRan.Store(true); return nil }) }()
	for len(l.queue) < 2 {
		time.Sleep(time.Millisecond)
	}
	l.commitMu.Unlock()
	if err := <-a.done; err == nil || err.Error() != "a fails" {
		t.Fatalf("a: %v", err)
	}
	if err := <-bErr; !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("b, whose record and file syncs failed: %v, want ErrOutcomeUnknown", err)
	}
	if err := <-cErr; errors.Is(err, ErrOutcomeUnknown) && !cRan.Load() {
		t.Fatalf("c, which never ran: %v", err)
	}
}

// lent reports whether a committer's session lends its handle: it has
// taken its batch and opened the file.
func (s *sharedDB) lent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db != nil
}

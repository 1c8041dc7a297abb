//go:build linux

package boltstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// A commit's journal record is written before bbolt writes the commit's
// pages and flushed after them (writeRecord, syncRecord): these tests
// stop the machine, kill the process or fail the disk between the two, in
// either order, and at the take-back of a record whose commit failed.

// failSyncIn makes the next n fdatasyncs that the function fn of this
// package (by name: "syncRecord", "retractRecord") calls fail with EIO,
// and returns how many failed so far.
func failSyncIn(t *testing.T, fn string, n int) *atomic.Int64 {
	t.Helper()
	return failSyncWhen(t, n, func(*os.File) bool { return syncCaller() == fn })
}

// syncCaller names the function of this package that called fdatasync
// (through a test's replacement of it): the first caller that is not a
// test's (a Test function's closure, failSync's).
func syncCaller() string {
	pc := make([]uintptr, 8)
	n := runtime.Callers(2, pc) // from syncCaller's caller
	frames := runtime.CallersFrames(pc[:n])
	for {
		f, more := frames.Next()
		name := strings.TrimPrefix(f.Function, "github.com/logbook-dev/logbook/ledger/boltstore.")
		if !strings.HasPrefix(name, "Test") && !strings.HasPrefix(name, "failSync") {
			return name
		}
		if !more {
			return ""
		}
	}
}

// limitFileSize lowers RLIMIT_FSIZE to n bytes (no file of the process
// may grow past them) until the function it returns is called.
func limitFileSize(t *testing.T, n int64) (restore func()) {
	t.Helper()
	if f := flag.Lookup("test.testlogfile"); f != nil && f.Value.String() != "" {
		// go test's cache log (test results kept for reuse), written by
		// the testing package as the test runs, is a file of the process
		// too: past the limit, the package failed ("can't write
		// testlog.txt: file too large") though every test passed.
		t.Skip("RLIMIT_FSIZE would stop go test's cache log: run with -count=1 (make test does)")
	}
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &was); err != nil {
		t.Fatal(err)
	}
	limit := was
	limit.Cur = uint64(n)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Skipf("cannot limit file sizes: %v", err)
	}
	return func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &was); err != nil {
			t.Fatal(err)
		}
	}
}

// isPrefix fails the test unless got is want's first events.
func isPrefix(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) > len(want) {
		t.Fatalf("%d events, more than the %d committed", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d differs from the one committed", i+1)
		}
	}
}

// A commit that fails after its record was written (the file may not
// grow: RLIMIT_FSIZE), and whose record then cannot be taken back (the
// flush of its zeroed salt fails), is answered ErrOutcomeUnknown, never as
// a commit that left nothing; a machine that stops then brings the call
// back or not, on a ledger that verifies; and the Store commits on, its
// next commits acknowledged and recovered whatever the disk kept.
// Held, and shared (the file let go after the failure, its generation
// ended).
func TestJournalTakeBackFails(t *testing.T) {
	for _, opts := range []Options{{Hold: true}, {}} {
		t.Run(fmt.Sprintf("hold=%v", opts.Hold), func(t *testing.T) { takeBackFails(t, opts) })
	}
}

func takeBackFails(t *testing.T, opts Options) {
	// Replaced before the Store opens, restored after it closes: the
	// shared file's committer ends its hold when it will.
	failed := failSyncIn(t, "retractRecord", 1)
	l, path, checkpoint := journaled(t, opts)
	appendOne(t, l, 0)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	begun := noCheckpoints(l)
	restore := limitFileSize(t, max(fi.Size(), journalSize))
	var ferr error
	for i := 0; i < 200 && ferr == nil; i++ {
		ferr = appendSized(l, 200<<10) // its record fits the journal
	}
	restore()
	l.generationBegun = begun // the generations after: a checkpoint each
	if ferr == nil || failed.Load() != 1 {
		t.Fatalf("no take-back failed (%d): the file grew past RLIMIT_FSIZE", failed.Load())
	}
	if !errors.Is(ferr, ErrOutcomeUnknown) {
		t.Fatalf("a commit whose record could not be taken back: %v, want ErrOutcomeUnknown", ferr)
	}
	acked := storedEvents(t, path, l)
	got := recoverImage(t, path)
	if len(got) < len(acked) || len(got) > len(acked)+1 {
		t.Fatalf("%d events after the stop, want the %d acknowledged, and the call of unknown outcome or not", len(got), len(acked))
	}
	isPrefix(t, got[:len(acked)], acked)

	// The Store commits on, across a generation's end.
	for i := range genCommits + 2 {
		appendOne(t, l, i+1)
	}
	want := storedEvents(t, path, l)
	if len(want) != len(acked)+genCommits+2 {
		t.Fatalf("%d events, want the %d acknowledged", len(want), len(acked)+genCommits+2)
	}
	recoversAll(t, recoverImageCopy(t, path), want)
	if !opts.Hold {
		// The shared file: the Store lets it go (its generation ended,
		// the file synced) when it will, under the copies a stop makes.
		return
	}
	rng := rand.New(rand.NewPCG(17, 5))
	for round := range 6 {
		setBoot(t, fmt.Sprintf("boot-after-take-back-%d", round))
		recoversAll(t, powerLoss(t, rng, checkpoint, path, t.TempDir()), want)
	}
	setBoot(t, mustBoot(t))
}

// noCheckpoints stops journaled's copies of the file as each generation
// begins, and returns the function that made them: under RLIMIT_FSIZE a
// copy of a file as large as the limit fails (copy_file_range: EFBIG).
func noCheckpoints(l *Store) func() {
	begun := l.generationBegun
	l.generationBegun = nil
	return begun
}

// recoverImageCopy copies the ledger at path and its journal as they stand
// (a process killed now, in this boot) to a directory of its own.
func recoverImageCopy(t *testing.T, path string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, path, img)
	copyFile(t, journalPath(path), journalPath(img))
	return img
}

// A commit whose record's flush fails, its own commit succeeding, is made
// durable by the generation's end (the file synced): it is acknowledged,
// and every later stop keeps it.
func TestJournalRecordSyncFails(t *testing.T) {
	l, path, checkpoint := journaled(t, Options{Hold: true})
	for i := range 3 {
		appendOne(t, l, i)
	}
	failed := failSyncIn(t, "syncRecord", 1)
	appendOne(t, l, 3)
	if failed.Load() != 1 {
		t.Fatal("no record's flush failed")
	}
	for i := range 5 {
		appendOne(t, l, 4+i)
	}
	want := storedEvents(t, path, l)
	if len(want) != 9 {
		t.Fatalf("%d events, want 9", len(want))
	}
	if got := recoverImage(t, path); len(got) != len(want) {
		t.Fatalf("%d events after the stop, want %d", len(got), len(want))
	}
	rng := rand.New(rand.NewPCG(23, 1))
	for round := range 6 {
		setBoot(t, fmt.Sprintf("boot-after-record-sync-%d", round))
		recoversAll(t, powerLoss(t, rng, checkpoint, path, t.TempDir()), want)
	}
	setBoot(t, mustBoot(t))
}

// A stop between a commit's record reaching the disk and bbolt writing the
// commit's meta page — in either order, since the kernel may write the
// file's unsynced pages back at any time — brings back the ledger with the
// unanswered commit or without it, never a broken chain: the record flushed
// and the file as it was before the commit (the machine stopped: recovery
// from the checkpoint and the records, the commit in, whether the machine
// stopped or the process was killed); the file's commit written and its
// record not (the machine stopped: out; killed: out too where the journal
// holds records, the file written back to their checkpoint, and in where
// it holds none, the file as it is). For commits across generations, their
// first and last ones included.
func TestJournalStopBetweenRecordAndMeta(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	// The order of a commit's writes that is not left pending (pending.go):
	// TestPendingStopped has those that are.
	l.noPending = true
	dir := t.TempDir()
	// checkpoint: the file as the current generation began from it;
	// flushed: the journal as the last record's flush left it (copied on
	// the goroutine that flushed it).
	var checkpoint string
	gens := 0
	l.generationBegun = func() {
		gens++
		checkpoint = filepath.Join(dir, fmt.Sprintf("checkpoint-%d", gens))
		copyFile(t, path, checkpoint)
	}
	flushed := filepath.Join(dir, "flushed.journal")
	var copyErr error
	var flushedFrom string // the checkpoint of the generation flushed's records are of
	real := fdatasync
	fdatasync = func(f *os.File) error {
		err := real(f)
		if err == nil && syncCaller() == "syncRecord" {
			copyErr, flushedFrom = copyPlain(journalPath(path), flushed), checkpoint
		}
		return err
	}
	t.Cleanup(func() { fdatasync = real })
	appendOne(t, l, 1) // the first generation begins

	stops := map[int]bool{2: true, 3: true, 33: true, genCommits - 1: true, genCommits: true, genCommits + 1: true, 2 * genCommits: true, 2*genCommits + 1: true}
	rng := rand.New(rand.NewPCG(29, 3))
	for k := 2; k <= 2*genCommits+1; k++ {
		if !stops[k] {
			appendOne(t, l, k)
			continue
		}
		before := filepath.Join(dir, "before.db") // the file before commit k
		copyFile(t, path, before)
		copyFile(t, journalPath(path), before+".journal.before")
		from := checkpoint // the generation commit k begins in
		appendOne(t, l, k)
		if copyErr != nil {
			t.Fatal(copyErr)
		}
		after := filepath.Join(dir, "after.db")
		copyFile(t, path, after)
		want := storedEvents(t, path, l)
		if len(want) != k {
			t.Fatalf("%d events after commit %d", len(want), k)
		}
		for _, c := range []struct {
			name, file, journal, checkpoint string
			stopped                         bool // the machine (another boot), or the process (this boot)
			events                          int
		}{
			{"record flushed, meta not written, machine stopped", before, flushed, flushedFrom, true, k},
			{"record flushed, meta not written, process killed", before, flushed, "", false, k},
			{"meta written, record not flushed, machine stopped", after, before + ".journal.before", from, true, k - 1},
			{"meta written, record not flushed, process killed", after, before + ".journal.before", "", false, k - min(1, journalHolds(t, before+".journal.before"))},
		} {
			img := filepath.Join(t.TempDir(), "ledger.db")
			copyFile(t, c.file, img)
			copyFile(t, c.journal, journalPath(img))
			if c.stopped {
				setBoot(t, fmt.Sprintf("boot-after-%d", k))
				img = lossSince(t, rng, c.checkpoint, img)
			}
			r, err := Open(img, Options{})
			if err != nil {
				t.Fatalf("commit %d, %s: open: %v", k, c.name, err)
			}
			rep, err := r.Verify(context.Background(), VerifyOptions{})
			r.Close()
			setBoot(t, mustBoot(t))
			if err != nil {
				t.Fatalf("commit %d, %s: verify: %v", k, c.name, err)
			}
			got := storedEvents(t, img, nil)
			if len(got) != c.events || rep.Size != uint64(c.events) {
				t.Fatalf("commit %d, %s: %d events (verify: %d), want %d", k, c.name, len(got), rep.Size, c.events)
			}
			isPrefix(t, got, want)
		}
	}
	if gens < 3 {
		t.Fatalf("%d generations, want 3", gens)
	}
}

// lossSince is powerLoss of the file img (its journal beside it), whose
// last synced state is checkpoint, written over img: img as it was if no
// page changed since.
func lossSince(t *testing.T, rng *rand.Rand, checkpoint, img string) string {
	t.Helper()
	a, err := os.ReadFile(checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		return img
	}
	return powerLoss(t, rng, checkpoint, img, t.TempDir())
}

// copyPlain copies src to dst, for goroutines other than the test's.
func copyPlain(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

const envChildLimit = "LOGBOOK_TEST_CHILD_FSIZE"

// TestCrashChildFailing appends until killed, on a file that may not grow
// past the size the environment names (RLIMIT_FSIZE): the commits that must
// grow the file fail after their journal record was written, and are taken
// back. Each Update appends one event whose subject names it; the child
// prints "ack <seq> <hash>" for each that returned nil and "fail <subject>"
// for each that returned an error other than ErrOutcomeUnknown.
func TestCrashChildFailing(t *testing.T) {
	path := childLedger(t)
	limit, err := strconv.ParseInt(os.Getenv(envChildLimit), 10, 64)
	if err != nil {
		t.Skip("runs only as a child of TestCrashFailedCommitsStayOut")
	}
	l, err := Open(path, Options{LockTimeout: time.Minute, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	limitFileSize(t, limit)
	id, _ := strconv.Atoi(os.Getenv(envChildID))
	var out sync.Mutex
	say := func(line string) {
		out.Lock()
		defer out.Unlock()
		if _, err := os.Stdout.WriteString(line); err != nil {
			panic(err)
		}
	}
	var n atomic.Int64
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for range 4 { // concurrent Updates share commits
		wg.Go(func() {
			for time.Now().Before(deadline) {
				subject := fmt.Sprintf("u-%04d-%08d", id, n.Add(1))
				var rec ledger.Record
				err := l.Update(func(tx *Tx) error {
					r, err := tx.Append(ledger.Event{
						Type: "test.crash", Version: 1, Actor: "A-1", Subjects: []string{subject},
						Payload: append([]byte{0xc6, 0, 0, 0x80, 0}, make([]byte, 0x8000)...), // msgpack bin 32 of 32 KiB
					})
					rec = r
					return err
				})
				switch {
				case err == nil:
					say(fmt.Sprintf("ack %d %s\n", rec.Seq, rec.Hash))
				case errors.Is(err, ErrOutcomeUnknown):
				default:
					say("fail " + subject + "\n")
				}
			}
		})
	}
	wg.Wait()
}

// A machine that stops while a process commits to a file that may not grow
// (its commits that must grow fail after their journal record was written
// and take it back) brings back every acknowledged event and none of a
// call answered with an error: the child is SIGKILLed at random and the
// ledger opened as in another boot, recovered from its checkpoint and the
// journal's records (the file's pages whole: what a kill leaves, read as
// after a restart).
func TestCrashFailedCommitsStayOut(t *testing.T) {
	if !NoSyncSupported() {
		t.Skip("no boot id here: no journal")
	}
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	l := openTest(t)
	path := l.Path()
	l.Close()
	failedTotal, recovered := 0, 0
	for round := range rounds {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		limit := max(fi.Size()+2<<20, journalSize)
		cmd, _, stdout, stderr := startChild(t, "TestCrashChildFailing", path,
			fmt.Sprintf("%s=%d", envChildID, round), fmt.Sprintf("%s=%d", envChildLimit, limit))
		var acks []ack
		var fails []string
		first := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			br := bufio.NewReader(stdout)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					done <- nil
					return
				}
				if s, ok := strings.CutPrefix(line, "fail "); ok {
					fails = append(fails, strings.TrimSpace(s))
					continue
				}
				var a ack
				var hash string
				if _, err := fmt.Sscanf(line, "ack %d %s\n", &a.Seq, &hash); err != nil {
					continue
				}
				if a.Hash, err = ledger.ParseHash(hash); err != nil {
					done <- err
					return
				}
				if len(acks) == 0 {
					close(first)
				}
				acks = append(acks, a)
			}
		}()
		select {
		case <-first:
		case err := <-done:
			cmd.Wait()
			t.Fatalf("round %d: child ended before appending anything: %v %v\n%s", round, err, cmd.ProcessState, stderr)
		case <-time.After(90 * time.Second): // a bound, not a measure: a child stuck shows where
			cmd.Process.Signal(syscall.SIGQUIT)
			<-done
			cmd.Wait()
			t.Fatalf("round %d: no call of the child answered:\n%s", round, stderr)
		}
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond) // the moment of the kill
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if strings.Contains(stderr.String(), "DATA RACE") {
			t.Fatalf("round %d: race in child:\n%s", round, stderr)
		}
		held := readHeader(t, path)
		if held {
			recovered++
		}
		setBoot(t, fmt.Sprintf("boot-after-kill-%d", round))
		r, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("round %d: recover: %v", round, err)
		}
		r.Close()
		checkAfterCrash(t, path, acks, VerifyReport{})
		raw := storedEvents(t, path, nil)
		for _, s := range fails {
			for i, e := range raw {
				if bytes.Contains(e, []byte(s)) {
					t.Fatalf("round %d: event %d is of %s, a call answered with an error", round, i+1, s)
				}
			}
		}
		failedTotal += len(fails)
		t.Logf("round %d: %d acknowledged, %d failed, the journal held: %v", round, len(acks), len(fails), held)
	}
	setBoot(t, mustBoot(t))
	if failedTotal == 0 || recovered == 0 {
		t.Fatalf("%d failed calls, %d rounds recovered from the journal: the test shows nothing", failedTotal, recovered)
	}
}

// journalHolds is how many events the records of the journal at path
// hold, under a header that holds.
func journalHolds(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := decodeHeader(b)
	if !ok {
		return 0
	}
	events, err := readRecords(b[journalRecords:], h.salt)
	if err != nil {
		t.Fatal(err)
	}
	return len(events)
}

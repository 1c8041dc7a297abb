package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// openTest opens a fresh ledger in a temp dir and verifies the whole chain
// when the test ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
			t.Errorf("verify at end of test: %v", err)
		}
	})
	return l
}

func appendN(t testing.TB, l *Store, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		err := l.Update(func(tx *Tx) error {
			_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{fmt.Sprintf("T-%04d", i)}, Payload: []byte{0x80}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendAssignsSeqPrevAndTime(t *testing.T) {
	l := openTest(t)
	var recs []ledger.Record
	for i := 0; i < 3; i++ {
		err := l.Update(func(tx *Tx) error {
			r, err := tx.Append(ledger.Event{Type: "x", Actor: "a", Payload: []byte{0xc0}})
			recs = append(recs, r)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Errorf("record %d: seq %d", i, r.Seq)
		}
		if i > 0 && r.Prev != recs[i-1].Hash {
			t.Errorf("record %d: prev %s, want %s", i, r.Prev, recs[i-1].Hash)
		}
		if r.Hash != ledger.LeafHash(r.Raw) {
			t.Errorf("record %d: hash is not ledger.LeafHash(raw)", i)
		}
	}
	if recs[0].Prev != (ledger.Hash{}) {
		t.Errorf("first prev = %s, want zero", recs[0].Prev)
	}
	err := l.View(func(tx *Tx) error {
		if h := tx.Head(); h.Seq != 3 || h.Hash != recs[2].Hash {
			t.Errorf("head = %+v", h)
		}
		got, err := tx.Event(2)
		if err != nil {
			return err
		}
		if string(got.Raw) != string(recs[1].Raw) || got.Type != "x" || got.Actor != "a" {
			t.Errorf("event 2 = %+v", got)
		}
		if _, err := tx.Event(4); !errors.Is(err, ErrNotFound) {
			t.Errorf("event 4: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentAppendsShareCommitsAndChain(t *testing.T) {
	l := openTest(t)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			appendN(t, l, 50)
		}()
	}
	wg.Wait()
	rep, err := l.Verify(context.Background(), VerifyOptions{Chunk: 97})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Size != 800 {
		t.Fatalf("size %d, want 800", rep.Size)
	}
	var f ledger.Frontier
	err = l.View(func(tx *Tx) error {
		return tx.Scan(1, 801, func(r ledger.Record) error { f.Append(r.Hash); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.Root() != rep.Root {
		t.Fatalf("root from stored nodes %s != root from leaves %s", rep.Root, f.Root())
	}
}

func TestFailedCallIsRolledBackAloneInBatch(t *testing.T) {
	l := openTest(t)
	boom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.Update(func(tx *Tx) error {
				if _, err := tx.Append(ledger.Event{Type: "x", Payload: []byte{0xc0}}); err != nil {
					return err
				}
				switch i % 5 {
				case 1:
					return boom
				case 2:
					panic("kaboom")
				}
				return nil
			})
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		var pe *PanicError
		switch {
		case i%5 == 1 && !errors.Is(err, boom):
			t.Errorf("call %d: %v, want boom", i, err)
		case i%5 == 2 && !errors.As(err, &pe):
			t.Errorf("call %d: %v, want PanicError", i, err)
		case i%5 != 1 && i%5 != 2 && err != nil:
			t.Errorf("call %d: %v", i, err)
		case err == nil:
			ok++
		}
	}
	l.View(func(tx *Tx) error {
		if tx.Head().Seq != uint64(ok) {
			t.Errorf("head %d, want %d committed events", tx.Head().Seq, ok)
		}
		return nil
	})
}

func TestOpenRefusesMissingFileWithoutCreate(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope.db"), Options{})
	if err == nil {
		t.Fatal("opened a missing file")
	}
}

// TestCreateInMissingFolder: creating a ledger in a folder that does not
// exist fails saying so (the folder is not created), not that the file was
// deleted or replaced: there never was one.
func TestCreateInMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nofolder")
	_, err := Open(filepath.Join(dir, "ledger.db"), Options{Create: true})
	if err == nil {
		t.Fatal("created a ledger in a missing folder")
	}
	if errors.Is(err, ErrReplaced) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("err = %v, want the missing folder %s named (os.ErrNotExist), not ErrReplaced", err, dir)
	}
}

func TestLockTimeoutIsBounded(t *testing.T) {
	l := openTest(t)
	appendN(t, l, 1)
	// Opening checks the file under its lock, which l may still hold for a
	// moment after its commit: on a loaded machine (the race detector,
	// other packages' tests) letting go can take longer than this Store's
	// 100 ms, which is not what this test is about, so Open tries again.
	var other *Store
	var err error
	for range 50 {
		if other, err = Open(l.Path(), Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held := make(chan struct{})
	release := make(chan struct{})
	go l.Update(func(tx *Tx) error { close(held); <-release; return nil })
	<-held
	// Returning at all (rather than hanging) with ErrLocked is the bound.
	err = other.Update(func(tx *Tx) error { return nil })
	close(release)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("err = %v, want ErrLocked", err)
	}
}

// TestFileIsReleasedAfterCommits: the committer keeps the file open for a
// moment after a commit in case another call comes (linger), then releases
// it for other processes: a blocking flock from outside is granted every
// time. (How soon is measured by the benchmarks, not asserted here.)
func TestFileIsReleasedAfterCommits(t *testing.T) {
	l := openTest(t)
	for range 20 {
		appendN(t, l, 1)
		f, err := os.OpenFile(l.Path(), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		granted := make(chan error, 1)
		go func() { granted <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
		select {
		case err := <-granted:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second): // a hang guard, not a timing check
			t.Fatal("the committer never released the file")
		}
		f.Close() // releases the lock
	}
}

func TestEmptyFileIsCreatedOnlyWithCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNotLedger) || !strings.Contains(err.Error(), path+" is empty") {
		t.Fatalf("open of an empty file without Create = %v, want ErrNotLedger naming the file", err)
	}
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatalf("open of an empty file with Create: %v", err)
	}
	appendN(t, l, 3)
	l.Close()
	if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ledgerOf is the path of a closed ledger of n events, l.db in a
// temporary folder of t's.
func ledgerOf(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, n)
	l.Close()
	return path
}

// TestFileEmptiedUnderAReader: a Store opened read-only on a ledger that
// an empty file then takes the place of (as a follower of the file sees
// it) says the file is empty, not a ledger — bbolt would try to make one
// of it, and a reader failed "write: bad file descriptor" — and writes
// nothing.
func TestFileEmptiedUnderAReader(t *testing.T) {
	path := ledgerOf(t, 3)
	r, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	empty := path + ".new"
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(empty, path); err != nil {
		t.Fatal(err)
	}
	err = r.View(func(tx *Tx) error { return nil })
	if !errors.Is(err, ErrNotLedger) || !strings.Contains(err.Error(), path+" is empty") {
		t.Errorf("a read of the file emptied: %v, want ErrNotLedger naming it", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file after the read: %v, %v", fi.Size(), err)
	}
}

// TestQueuedCallWaitsForTheLockOnce: after an attempt to take the lock
// fails, the calls whose wait is over are answered and the others retry
// with only what is left of their own timeout, so a call queued behind a
// failed attempt never waits a whole timeout twice.
func TestQueuedCallWaitsForTheLockOnce(t *testing.T) {
	now := time.Unix(1000, 0)
	errLocked := fmt.Errorf("%w (waited 5s)", ErrLocked)
	old := &request{done: make(chan error, 1), deadline: now}
	queued := &request{done: make(chan error, 1), deadline: now.Add(3 * time.Second)}
	if got := lockWait([]*request{queued, old}, now.Add(-2*time.Second)); got != 2*time.Second {
		t.Errorf("lock wait %v, want the oldest call's 2s left", got)
	}
	keep := answerExpired([]*request{old, queued}, errLocked, now)
	if len(keep) != 1 || keep[0] != queued {
		t.Fatalf("kept %d calls, want only the one with time left", len(keep))
	}
	if err := <-old.done; !errors.Is(err, ErrLocked) {
		t.Errorf("expired call answered %v", err)
	}
	if got := lockWait(keep, now); got != 3*time.Second {
		t.Errorf("retry waits %v, want the 3s left, not a whole timeout", got)
	}
	// Any other failure to open answers every call at once.
	if keep := answerExpired([]*request{queued}, os.ErrPermission, now); len(keep) != 0 || !errors.Is(<-queued.done, os.ErrPermission) {
		t.Error("a failure other than the lock kept calls waiting")
	}
}

// TestSlowCallsAreSplitAcrossCommits: however many calls are queued, a
// commit stops taking more once it has held the file for maxHold, so calls
// that each take longer than that commit one per transaction (and other
// processes get the file between sessions).
// The same with the file held, where the first call commits on its own
// goroutine (direct) and the committer's batch (MaxBatch 3) leaves calls
// queued, which no commit of one call may take and leave unanswered.
func TestSlowCallsAreSplitAcrossCommits(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "held"}[hold], func(t *testing.T) {
			opts := Options{Create: true}
			if hold {
				opts = Options{Create: true, Hold: true, MaxBatch: 3}
			}
			l, err := Open(filepath.Join(t.TempDir(), "ledger.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			slowCallsSplit(t, l)
		})
	}
}

func slowCallsSplit(t *testing.T, l *Store) {
	const calls = 12
	var mu sync.Mutex
	txids := map[*Tx]int{} // one Tx per commit (several may share a bbolt transaction: pending.go)
	var wg sync.WaitGroup
	block := make(chan struct{})
	started := make(chan struct{})
	// The first call holds the committer until the others are queued.
	go l.Update(func(tx *Tx) error { close(started); <-block; return nil })
	<-started
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.Update(func(tx *Tx) error {
				time.Sleep(2 * maxHold) // a call's own work, longer than maxHold
				mu.Lock()
				txids[tx]++
				mu.Unlock()
				_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester"})
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	for len(l.queue) < min(calls, cap(l.queue)) {
		runtime.Gosched()
	}
	close(block)
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("calls taken from the queue were never answered")
	}
	for id, n := range txids {
		if n > 1 {
			t.Errorf("commit %p ran %d slow calls; want one each", id, n)
		}
	}
	if len(txids) != calls {
		t.Errorf("%d calls committed in %d commits", calls, len(txids))
	}
}

// TestBrokenStructureIsDamaged: a ledger that lost one or two of its marks
// (a bucket's name or the format key changed by a flipped byte, as in
// cmd/logbook's TestE2EDamagedFile) is damaged, not "not a ledger"; a bbolt
// file with none of them, or only one, is another program's.
func TestBrokenStructureIsDamaged(t *testing.T) {
	rename := func(btx *bolt.Tx, from, to []byte) error {
		if _, err := btx.CreateBucket(to); err != nil {
			return err
		}
		return btx.DeleteBucket(from)
	}
	cases := []struct {
		name   string
		breaks func(*bolt.Tx) error
		want   error
	}{
		{"meta bucket renamed", func(btx *bolt.Tx) error { return rename(btx, bucketMeta, []byte("meTa")) }, ErrDamaged},
		{"events bucket renamed", func(btx *bolt.Tx) error { return rename(btx, bucketEvents, []byte("evEnts")) }, ErrDamaged},
		{"merkle bucket gone", func(btx *bolt.Tx) error { return btx.DeleteBucket(bucketMerkle) }, ErrDamaged},
		{"format key of 7 bytes", func(btx *bolt.Tx) error { return btx.Bucket(bucketMeta).Put(keyFormat, make([]byte, 7)) }, ErrDamaged},
		{"events and merkle gone", func(btx *bolt.Tx) error {
			return errors.Join(btx.DeleteBucket(bucketEvents), btx.DeleteBucket(bucketMerkle))
		}, ErrDamaged},
		{"only a meta bucket, no format key", func(btx *bolt.Tx) error {
			return errors.Join(btx.DeleteBucket(bucketEvents), btx.DeleteBucket(bucketMerkle), btx.Bucket(bucketMeta).Delete(keyFormat))
		}, ErrNotLedger},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := ledgerOf(t, 3)
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(c.breaks); err != nil {
				t.Fatal(err)
			}
			db.Close()
			_, err = Open(path, Options{})
			if !errors.Is(err, c.want) {
				t.Errorf("open: %v, want %v", err, c.want)
			}
			if c.want == ErrDamaged && errors.Is(err, ErrNotLedger) {
				t.Errorf("open: %v is both", err)
			}
		})
	}
	// Another program's bbolt file, with buckets of its own.
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(btx *bolt.Tx) error { _, err := btx.CreateBucket([]byte("users")); return err })
	db.Close()
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNotLedger) {
		t.Errorf("another program's file: %v, want ErrNotLedger", err)
	}
}

// TestBadMagicIsDamaged: a ledger whose two meta pages lost bbolt's magic
// (or its magic and version, or their whole first 24 bytes) is damaged,
// since the root page a meta page names holds the ledger's buckets; it
// was "not a logbook ledger", as bbolt calls it no bbolt file at all.
// Another program's bbolt file with the same damage, random bytes, and a
// ledger whose meta pages lost their root field too (nothing left to tell
// it by) stay not a ledger.
func TestBadMagicIsDamaged(t *testing.T) {
	ledgerFile := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "l.db")
		l, err := Open(path, Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 40)
		l.Close()
		return path
	}
	otherFile := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "other.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(btx *bolt.Tx) error {
			for _, name := range []string{"users", "events"} { // one of a ledger's names is not enough
				if _, err := btx.CreateBucket([]byte(name)); err != nil {
					return err
				}
			}
			return nil
		})
		db.Close()
		return path
	}
	randomFile := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "random")
		b := make([]byte, 64<<10)
		for i := range b {
			b[i] = byte(i*7919 + i>>8)
		}
		os.WriteFile(path, b, 0o600)
		return path
	}
	// zero writes n zero bytes at off in both meta pages.
	zero := func(off, n int) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, at := range []int{0, os.Getpagesize()} {
				if _, err := f.WriteAt(make([]byte, n), int64(at+off)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, c := range []struct {
		name   string
		file   func(*testing.T) string
		breaks func(*testing.T, string)
		want   error
	}{
		{"ledger, magic", ledgerFile, zero(16, 4), ErrDamaged},
		{"ledger, magic and version", ledgerFile, zero(16, 8), ErrDamaged},
		{"ledger, page header, magic, version", ledgerFile, zero(0, 24), ErrDamaged},
		{"ledger, magic to root", ledgerFile, zero(16, 24), ErrNotLedger},
		{"another program's, magic", otherFile, zero(16, 4), ErrNotLedger},
		{"random bytes", randomFile, func(*testing.T, string) {}, ErrNotLedger},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.file(t)
			c.breaks(t, path)
			for _, ro := range []bool{false, true} {
				_, err := Open(path, Options{ReadOnly: ro})
				if !errors.Is(err, c.want) || (c.want == ErrDamaged) == errors.Is(err, ErrNotLedger) {
					t.Errorf("open (read-only %v): %v, want %v", ro, err, c.want)
				}
			}
		})
	}
}

// appendSized commits one event of a payload of n bytes.
func appendSized(l *Store, n int) error {
	payload := make([]byte, n)
	payload[0] = 0xc6 // msgpack bin 32
	payload[1], payload[2], payload[3], payload[4] = byte((n-5)>>24), byte((n-5)>>16), byte((n-5)>>8), byte(n-5)
	return l.Update(func(tx *Tx) error {
		_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{"T-1"}, Payload: payload})
		return err
	})
}

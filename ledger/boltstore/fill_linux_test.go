package boltstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// After the commit that grows the file, the next one fills the hole bbolt's
// growth left past the last used page, so that commits write into written
// blocks; the file's bytes and size are what they would be without it.
func TestFillTailLeavesNoHole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openPath(t, path, Options{Create: true})
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// holeAfterMark is the first hole past the high-water mark, and the
	// file's size.
	holeAfterMark := func() (int64, int64) {
		t.Helper()
		var mark int64
		if err := l.View(func(tx *Tx) error { mark = tx.btx.Size(); return nil }); err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		hole, err := unix.Seek(int(f.Fd()), mark, unix.SEEK_HOLE)
		if err != nil {
			t.Skipf("the file system cannot say where holes are: %v", err)
		}
		return hole, fi.Size()
	}
	_, size := holeAfterMark()
	grown, filled := 0, 0
	for range 80 {
		if err := l.Update(func(tx *Tx) error {
			for range 64 {
				if _, err := tx.Append(benchEvent); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		hole, now := holeAfterMark()
		if now != size {
			// This commit grew the file: the hole is still there (which
			// shows the check below can fail), filled by the next.
			if hole < now {
				grown++
			}
			size = now
			continue
		}
		if hole < size {
			t.Fatalf("a hole at %d past the last used page, %d bytes before the end, after a commit that did not grow the file", hole, size-hole)
		}
		filled++
	}
	if grown < 2 || filled < 10 {
		t.Skipf("the file grew with a hole %d times, %d commits after: this file system does not make holes so", grown, filled)
	}
	if _, err := l.Verify(t.Context(), VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ReadAhead brings a ledger file that is not in the page cache into it,
// all of it, without the caller touching a page.
func TestReadAheadFillsCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openPath(t, path, Options{Create: true})
	appendN(t, l, 3000)
	// Closed, so that no mapping keeps its pages in the cache.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	resident := func() (in, all int) {
		t.Helper()
		m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Munmap(m)
		vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatal(e)
		}
		for _, v := range vec {
			in += int(v & 1)
		}
		return in, len(vec)
	}
	// Clean pages, dropped from the cache (the kernel may keep a few).
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Skipf("cannot drop the file from the cache here: %v", err)
	}
	if in, all := resident(); in > all/2 {
		t.Skipf("the kernel kept %d of %d pages cached: nothing to read ahead", in, all)
	}
	l.ReadAhead()
	// The reads complete in the background; a bound only a stalled
	// machine reaches.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		in, all := resident()
		if in == all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after ReadAhead %d of %d pages are in the cache", in, all)
		}
	}
}

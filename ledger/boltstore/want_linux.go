package boltstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// A process waiting for the file lock says so with an open-file-description
// (OFD) read lock on one byte far past the end of the file, which no data
// and no flock ever touches; the process holding the file checks for such
// a lock between commits and lets the file go as soon as one appears. So a
// process alone on its file keeps it open (and mapped) across calls, and
// one that others wait for gives it up after its current commit. OFD locks
// belong to the open file, not the process, and go away when it is closed:
// a waiter that dies or gives up leaves nothing behind.

// wantSignals reports whether waiters signal the holder (commit.go).
const wantSignals = true

const wantOffset = 1 << 62

// signalWant marks f, a file waiting for the flock, as waiting.
func signalWant(f *os.File) {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: wantOffset, Len: 1}
	unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk) // best effort: without it the holder lets go by time
}

// clearWant removes f's mark once it has the flock.
func clearWant(f *os.File) {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: wantOffset, Len: 1}
	unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}

// othersWant reports whether another open file of the same file (in any
// process) is waiting for the flock that f holds.
func othersWant(f *os.File) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: wantOffset, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return true // cannot tell: behave as if someone waits
	}
	return lk.Type != unix.F_UNLCK
}

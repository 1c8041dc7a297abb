package boltstore

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The process that serves the calls of the other processes on its ledger
// file (the hub, server's relay) is the one holding an open-file-description
// write lock on the byte after the waiting signal's: whoever takes it is the
// hub, and the kernel releases it when the hub exits however it exits, so
// no one ever guesses whether a hub is alive from a socket left behind.

const hubOffset = wantOffset + 1

// HubLock is the hub's lock on a ledger file.
type HubLock struct {
	f        *os.File
	dev, ino uint64
}

// ErrHubTaken: another process holds the hub lock.
var ErrHubTaken = errors.New("another process is the ledger's hub")

// LockHub takes the hub lock on the ledger file at path without waiting:
// ErrHubTaken if another process holds it.
func LockHub(path string) (*HubLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: hubOffset, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, ErrHubTaken
		}
		return nil, fmt.Errorf("hub lock: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("hub lock: %w", err)
	}
	return &HubLock{f: f, dev: uint64(st.Dev), ino: st.Ino}, nil
}

// File names the file the lock is on: its device and inode numbers.
func (h *HubLock) File() (dev, ino uint64) { return h.dev, h.ino }

// Release gives the lock up.
func (h *HubLock) Release() error { return h.f.Close() }

// HubSupported reports whether this system has the hub lock.
const HubSupported = true

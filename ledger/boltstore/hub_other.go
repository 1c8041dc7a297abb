//go:build !linux

package boltstore

import "errors"

// Without open-file-description locks there is no hub lock: each process
// takes its turn at the file.

// HubLock is the hub's lock on a ledger file (Linux only).
type HubLock struct{}

// ErrHubTaken: another process holds the hub lock.
var ErrHubTaken = errors.New("another process is the ledger's hub")

// LockHub is not supported here.
func LockHub(string) (*HubLock, error) { return nil, errors.ErrUnsupported }

// File names the file the lock is on.
func (h *HubLock) File() (dev, ino uint64) { return 0, 0 }

// Release gives the lock up.
func (h *HubLock) Release() error { return nil }

// HubSupported reports whether this system has the hub lock.
const HubSupported = false

package boltstore

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// othersWaiting reports whether a process (or another open of the file in
// this one) is blocked waiting for the lock of f, which this process holds:
// /proc/locks lists every flock held and, marked "->", every one waited
// for, by device and inode. Every logbook process waits for the file in a
// blocking flock (lockedOpener), so each one waiting is listed. When
// /proc/locks cannot be read, it says true: let the file go.
func othersWaiting(f *os.File) bool {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return true
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return true
	}
	return waitingFor(locks, uint64(st.Dev), st.Ino)
}

// waitingFor reports whether locks, /proc/locks's text, lists a lock
// waited for on the file of device dev and inode ino.
func waitingFor(locks []byte, dev, ino uint64) bool {
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	file := fmt.Appendf(nil, " %02x:%02x:%d ", major, minor, ino)
	for line := range bytes.Lines(locks) {
		if bytes.Contains(line, []byte("->")) && bytes.Contains(line, file) {
			return true
		}
	}
	return false
}

//go:build !linux

package boltstore

import "strconv"

// Holder is a process holding a file's lock (Linux only).
type Holder struct {
	PID     int
	Name    string
	Stopped bool
}

// String names the holder.
func (h Holder) String() string { return "process " + strconv.Itoa(h.PID) }

// Holders is not supported here: none.
func Holders(string) []Holder { return nil }

// Stopped is not supported here: false.
func Stopped(int) bool { return false }

// HeldBy is not supported here: "".
func HeldBy(string) (string, bool) { return "", false }

package boltstore

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// journalOS: commits go through a journal (journal.go) on 64-bit Linux,
// where the kernel names its boot and a large mapping costs no memory.
const journalOS = ^uint(0)>>32 != 0

// fdatasync flushes f's data (and the size, if it changed), as bbolt does.
// A variable: tests make it fail.
var fdatasync = func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// hardLinks is how many names the file fi describes has.
func hardLinks(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

package mcp

import (
	"os"
	"syscall"
)

// datasync flushes f's data as the journal does (fdatasync).
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

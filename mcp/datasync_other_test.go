//go:build !linux

package mcp

import "os"

// datasync flushes f's data: fsync where there is no fdatasync.
func datasync(f *os.File) error { return f.Sync() }

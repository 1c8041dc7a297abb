//go:build !linux

package boltstore

import "os"

// journalOS: no journal without the kernel's boot id (journal.go).
const journalOS = false

var fdatasync = func(f *os.File) error { return f.Sync() }

func hardLinks(os.FileInfo) uint64 { return 1 }

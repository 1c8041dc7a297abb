//go:build !linux

package boltstore

import "os"

// statPath is what checkSameFile reads of the file path names (the Linux
// version says why it is not os.Stat there).
func statPath(path string) (pathStat, error) { return statPathPortable(path) }

// statFile is statPath for a file open as f.
func statFile(f *os.File) (pathStat, error) { return statFilePortable(f) }

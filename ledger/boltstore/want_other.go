//go:build !linux

package boltstore

import "os"

// Without open-file-description locks a waiter cannot signal the holder:
// the holder keeps the file only briefly (linger, maxHold).
const wantSignals = false

func signalWant(*os.File)      {}
func clearWant(*os.File)       {}
func othersWant(*os.File) bool { return false }

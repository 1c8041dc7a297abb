//go:build !linux

package boltstore

import bolt "go.etcd.io/bbolt"

// fillTail fills the holes bbolt leaves growing a file where that is known
// to pay: Linux (fill_linux.go).
func (l *Store) fillTail(*openFile, *bolt.Tx) {}

// ReadAhead does nothing here (fill_linux.go).
func (l *Store) ReadAhead() {}

// roomFor: commits are left pending only where there is a journal (Linux).
func (l *Store) roomFor(*openFile) bool { return false }

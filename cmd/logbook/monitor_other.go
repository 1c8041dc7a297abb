//go:build !linux

package main

// quietMonitor does nothing here (monitor_linux.go says what it does on
// Linux).
func quietMonitor([]string) {}

package boltstore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Temporary files that a process killed with SIGKILL (which runs no
// clean-up) can leave behind: a rebuild's or a verify's scratch file in
// the moment before its name is removed, a snapshot's copy. Each is named
// prefix + the pid of the process that made it + "-" + random, so a later
// process can tell those whose maker is gone (RemoveDeadTemps).

// CreateOwnTemp creates a new file in dir (the system temp dir if "") named
// prefix + this process's pid + "-" + random + suffix, open for reading and
// writing.
func CreateOwnTemp(dir, prefix, suffix string) (*os.File, error) {
	return os.CreateTemp(dir, prefix+strconv.Itoa(os.Getpid())+"-*"+suffix)
}

// RemoveDeadTemps removes from dir (the system temp dir if "") the regular
// files named as CreateOwnTemp names them with prefix whose process is gone
// and which no process holds locked (a Store open on one holds it). It
// removes nothing else, and reports nothing: what it cannot remove stays.
// A process in another pid namespace sharing dir (a container sharing the
// ledger's directory or the temp dir) looks gone: its file is spared only
// while it is locked, so one of its files may be removed in the moments
// it is not: a scratch file between its creation and its Store's open
// (OpenScratch then fails, or goes on with the name already gone); a
// snapshot's copy before bbolt opens it, between its copy and its refold,
// and between the refold and its link to --out (that snapshot fails,
// nothing written at --out). Neither the ledger nor a finished file is
// touched: only a run in flight in another namespace can fail. A pid
// reused since its file was made spares the file until that process too
// is gone.
func RemoveDeadTemps(dir, prefix string) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		digits, _, found := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(digits)
		if !ok || !found || err != nil || pid <= 0 || !e.Type().IsRegular() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			if tryLock(f) {
				os.Remove(path)
			}
			f.Close()
		}
	}
}

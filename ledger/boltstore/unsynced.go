package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// A Store opened with Options.NoSync commits without fsync: a process that
// dies leaves its commits in the kernel's page cache, whole, but a machine
// that stops (power loss, kernel panic) may leave the file torn — pages of
// the last commits missing or stale under a valid-looking root, which no
// check is sure to notice. So before its first unsynced commit the Store
// writes, durably, a marker beside the file (<file>.unsynced) naming the
// kernel's boot; a clean Close fsyncs the file and removes it. Any Open
// that finds a marker from another boot refuses the file as damaged
// (ErrDamaged): it may be, and only deleting it (the node then ingests the
// replicated log anew) is safe. Nothing is repaired on its own.

// unsyncedSuffix names the marker of a file written without fsync.
const unsyncedSuffix = ".unsynced"

// bootIDFile holds the kernel's random id of the current boot (Linux).
var bootIDFile = "/proc/sys/kernel/random/boot_id"

// bootSeen is the boot id last read, and the file it was read from: a
// boot's id does not change while a process runs, and reading it took 36
// µs, which every journal generation (64 commits) and every open paid.
var bootSeen struct {
	sync.Mutex
	file string
	id   []byte
}

// bootID is the current boot's id. The caller may append to it, not
// change its bytes.
func bootID() ([]byte, error) {
	file := bootIDFile
	bootSeen.Lock()
	defer bootSeen.Unlock()
	if bootSeen.id != nil && bootSeen.file == file {
		return bootSeen.id, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("the boot id (%s): %w", file, err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("the boot id (%s) is empty", file)
	}
	b = b[:len(b):len(b)] // an append copies it
	bootSeen.file, bootSeen.id = file, b
	return b, nil
}

// NoSyncSupported tells whether Options.NoSync can be used here: it needs
// the kernel's boot id (Linux) to tell a dead process, whose unsynced
// commits are whole, from a stopped machine, whose may be torn.
func NoSyncSupported() bool {
	_, err := bootID()
	return err == nil
}

// unsyncedMarker is the marker path of the ledger file at path (Beside:
// every name of the file shares it).
func unsyncedMarker(path string) string { return Beside(path, unsyncedSuffix) }

// Beside names a file that goes with the ledger file at path: path with
// suffix, once symbolic links in path are resolved. Processes that name
// one ledger through different links then meet at one journal, marker or
// socket; one that wrote its journal beside a link would leave a holding
// generation no open through another name sees (a power loss then lost
// its commits, and a later open through the link wrote a stale checkpoint
// back over them). A path that names no file yet is taken as it is (Open
// refuses a link to a missing file, so a ledger it creates is where path
// says). Hard links cannot be told apart: a file with more than one runs
// no journal (beginGeneration).
func Beside(path, suffix string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	return path + suffix
}

// openBeside opens a file kept beside the ledger (the journal, the
// unsynced marker), never following a symbolic link nor waiting (a named
// pipe's open waits for a writer): nil if there is none (or its name is too
// long for one); refused, saying so, if it is not a regular file, which is
// left as it is.
func openBeside(name string, flag int) (*os.File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENAMETOOLONG) {
		return nil, nil
	}
	if err != nil {
		if fi, lerr := os.Lstat(name); lerr == nil && !fi.Mode().IsRegular() {
			return nil, notRegular(name) // a link, a directory, a socket…
		}
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = notRegular(name)
		}
		return nil, err
	}
	return f, nil
}

func notRegular(name string) error {
	return fmt.Errorf("%s is not a regular file: move it away (it is left as it is)", name)
}

// checkUnsynced tells whether the file at path was left with unsynced
// commits (marked) and refuses it, as damaged, if the machine restarted
// since they were made.
func checkUnsynced(path string) (marked bool, err error) {
	f, err := openBeside(unsyncedMarker(path), os.O_RDONLY)
	if err != nil || f == nil {
		return false, err // none (a name too long for one: NoSync is refused there)
	}
	// A boot id is 36 bytes: what is past 4 KiB is not one either.
	mark, err := io.ReadAll(io.LimitReader(f, 4096))
	f.Close()
	if err != nil {
		return false, err
	}
	boot, err := bootID()
	if err != nil || !bytes.Equal(bytes.TrimSpace(mark), boot) {
		return true, fmt.Errorf("%w: %s was written without fsync (a copy of a replicated log, Options.NoSync) and the machine has restarted since (%s names another boot): "+
			"it may be torn; delete it, and the node ingests the log anew", ErrDamaged, path, unsyncedMarker(path))
	}
	return true, nil
}

// markUnsynced durably marks the file at path as written without fsync
// during this boot, before any such write.
func markUnsynced(path string) error {
	boot, err := bootID()
	if err != nil {
		return fmt.Errorf("NoSync needs %w", err)
	}
	return writeMarker(unsyncedMarker(path), append(boot, '\n'))
}

// writeMarker durably writes a marker beside the ledger: the file (a
// temporary one renamed in place: a reader sees all of it or none) and its
// directory entry synced.
func writeMarker(marker string, content []byte) error {
	tmp := marker + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, marker)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(marker))
}

// clearUnsynced removes the marker of the file at path, once its contents
// are on disk.
func clearUnsynced(path string) error {
	marker := unsyncedMarker(path)
	if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(marker))
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// danglingLink refuses a path that is a symbolic link to no file: a
// ledger created through it would be made wherever the link points (a
// typo'd or stale link: /nonexistent was created), and its journal and
// marker named after the link until the file existed (Beside).
func danglingLink(path string) error {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s: %w: it is a symbolic link to a missing file, and no ledger is created through a link; name the file itself", path, os.ErrNotExist)
	}
	return nil
}

// leftBesideLink refuses a ledger named through a symbolic link beside
// which a logbook older than Beside left a journal holding commits, or an
// unsynced marker: they are the file's, and an open looks for them beside
// the file itself, so it would miss them (a power loss's commits lost, a
// torn copy taken for whole). A retired journal there holds nothing. A
// path that only spells the file another way ("./l.db", a linked folder)
// names the same journal: nothing was left elsewhere.
func leftBesideLink(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil // no file yet
	}
	for _, suffix := range []string{journalSuffix, unsyncedSuffix} {
		old, now := path+suffix, real+suffix
		f, err := os.OpenFile(old, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue // none (or a link, which no logbook writes)
		}
		holds := !sameFile(f, now)
		if holds && suffix == journalSuffix {
			b := make([]byte, headerLen)
			n, _ := f.ReadAt(b, 0)
			_, holds = decodeHeader(b[:n])
		}
		f.Close()
		if holds {
			return fmt.Errorf("%w: %s was left beside the link %s by an older logbook; it belongs to the file the link names: with no process using the ledger, move it to %s and open the ledger again", ErrUnrecovered, old, path, now)
		}
	}
	return nil
}

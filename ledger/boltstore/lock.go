package boltstore

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// ErrLocked is returned (wrapped) when another process held the ledger file
// for longer than Options.LockTimeout.
var ErrLocked = errors.New("ledger file is locked by another process")

// lockedOpener returns an os.OpenFile replacement for bbolt that takes the
// file's flock itself before bbolt does. bbolt polls for the lock every 50 ms,
// which would make every contended commit cost up to 50 ms and lets the
// process that just released the lock take it again before pollers wake.
// Here a contended open waits in a blocking flock, which the kernel grants
// as soon as the holder releases it, and gives up with ErrLocked at the
// deadline. bbolt's own flock on the same open file then succeeds at once,
// and bbolt releases the lock when it closes the file.
//
// Unless create is set, the file is never created: bbolt asks for O_CREATE,
// which would put an empty ledger-less file where a deleted ledger was.
func lockedOpener(timeout time.Duration, create bool) func(string, int, os.FileMode) (*os.File, error) {
	return func(path string, flag int, mode os.FileMode) (*os.File, error) {
		if !create {
			flag &^= os.O_CREATE
		}
		key := parkKey{path, flag}
		if w := takeParked(key); w != nil {
			return w.await(path, timeout)
		}
		f, err := os.OpenFile(path, flag, mode)
		if err != nil {
			return nil, err
		}
		how := syscall.LOCK_EX
		if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
			how = syscall.LOCK_SH
		}
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock: %w", err)
		}
		// Tell the holder someone waits (want_linux.go), so that it lets
		// go after its current commit instead of keeping the file.
		signalWant(f)
		return startWait(key, f, how).await(path, timeout)
	}
}

// A blocking flock cannot be interrupted, so a wait that times out goes on
// in its goroutine, parked under the file's path and open flags: the next
// open of the same path with the same flags takes that wait over instead of
// starting another (takeParked). A file held by a stuck process thus costs
// this process one blocked thread and one open file, not one per attempt.
// A parked wait that is granted while no open waits on it releases the lock
// and closes the file at once.

type parkKey struct {
	path string
	flag int
}

var parked = struct {
	sync.Mutex
	m map[parkKey]*flockWait
}{m: map[parkKey]*flockWait{}}

// flockWait is one blocking flock on f, in its own goroutine.
type flockWait struct {
	key    parkKey
	f      *os.File
	result chan error // the flock's answer, sent only to an open waiting on it

	mu       sync.Mutex
	watched  bool // an open waits on result; else the wait is parked
	finished bool // the flock returned
}

func startWait(key parkKey, f *os.File, how int) *flockWait {
	w := &flockWait{key: key, f: f, result: make(chan error, 1), watched: true}
	go func() {
		err := syscall.Flock(int(f.Fd()), how)
		w.mu.Lock()
		w.finished = true
		watched := w.watched
		if watched {
			w.result <- err
		}
		w.mu.Unlock()
		if !watched {
			f.Close() // closing the file releases the lock
			parked.Lock()
			if parked.m[key] == w {
				delete(parked.m, key)
			}
			parked.Unlock()
		}
	}()
	return w
}

// takeParked returns the parked wait for key, if one is still waiting on
// the file now at key's path, now watched by its caller. A wait on a file
// since replaced at the path is left to end on its own (its goroutine lets
// the lock go when granted): waiting on it would refuse opens of the new
// file, which nobody may hold, for as long as the old one's holder lives.
func takeParked(key parkKey) *flockWait {
	parked.Lock()
	w := parked.m[key]
	delete(parked.m, key)
	parked.Unlock()
	if w == nil {
		return nil
	}
	if !sameFile(w.f, key.path) {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return nil // granted while parked, and let go
	}
	w.watched = true
	return w
}

// await waits at most timeout for the flock and returns the locked file; on
// timeout it parks the wait and returns ErrLocked.
func (w *flockWait) await(path string, timeout time.Duration) (*os.File, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-w.result:
		return w.granted(path, err, timeout)
	case <-timer.C:
	}
	w.mu.Lock()
	select {
	case err := <-w.result: // granted just now
		w.mu.Unlock()
		return w.granted(path, err, timeout)
	default:
	}
	w.watched = false
	w.mu.Unlock()
	parked.Lock()
	if parked.m[w.key] == nil { // else two opens waited at once: this one stays unlisted, and lets go when granted
		parked.m[w.key] = w
	}
	parked.Unlock()
	// If the flock returned just before the wait was listed, the goroutine
	// has closed the file and left a finished wait listed: takeParked skips
	// it.
	return nil, fmt.Errorf("%w (waited %v)", ErrLocked, timeout)
}

// granted finishes a wait that the kernel answered. A taken-over wait may
// have begun on a file since replaced at path: that one is let go, and the
// path opened afresh.
func (w *flockWait) granted(path string, err error, timeout time.Duration) (*os.File, error) {
	if err != nil {
		w.f.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	if !sameFile(w.f, path) {
		w.f.Close()
		flag := w.key.flag
		return lockedOpener(timeout, flag&os.O_CREATE != 0)(path, flag, 0o600)
	}
	clearWant(w.f)
	return w.f, nil
}

// sameFile reports whether f is the file at path now.
func sameFile(f *os.File, path string) bool {
	fs, err := statFile(f)
	if err != nil {
		return false
	}
	ps, err := statPath(path)
	return err == nil && fs.dev == ps.dev && fs.ino == ps.ino
}

// tryLock takes f's exclusive lock if nobody holds it, without waiting;
// closing f releases it.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

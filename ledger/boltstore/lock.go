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
		if f, err = waitLock(f, how, timeout); err != nil {
			return nil, err
		}
		clearWant(f)
		return f, nil
	}
}

// waitLock blocks in flock for at most timeout. A blocking flock cannot be
// interrupted, so on timeout the waiting goroutine is abandoned: when it
// does get the lock it releases it and closes the file at once.
func waitLock(f *os.File, how int, timeout time.Duration) (*os.File, error) {
	var mu sync.Mutex
	abandoned := false
	got := make(chan error, 1)
	go func() {
		err := syscall.Flock(int(f.Fd()), how)
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			f.Close() // closing the file releases the lock
			return
		}
		got <- err
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock: %w", err)
		}
		return f, nil
	case <-timer.C:
		mu.Lock()
		defer mu.Unlock()
		select {
		case err := <-got: // granted just now
			if err == nil {
				return f, nil
			}
			f.Close()
			return nil, fmt.Errorf("lock: %w", err)
		default:
		}
		abandoned = true
		return nil, fmt.Errorf("%w (waited %v)", ErrLocked, timeout)
	}
}

// tryLock takes f's exclusive lock if nobody holds it, without waiting;
// closing f releases it.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

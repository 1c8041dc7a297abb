package ledger

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// ErrLocked is returned (wrapped) when another process held the ledger file
// for longer than Options.LockTimeout.
var ErrLocked = errors.New("ledger file is locked by another process")

// lockedOpener returns an os.OpenFile replacement for bbolt that takes the
// file's flock itself before bbolt does. bbolt polls for the lock every 50 ms,
// which would make every contended commit cost 50 ms; here the wait starts at
// 20 µs and backs off to 1 ms, and ends with ErrLocked at the deadline. bbolt's
// own flock on the same open file then succeeds at once, and bbolt releases
// the lock when it closes the file.
func lockedOpener(timeout time.Duration) func(string, int, os.FileMode) (*os.File, error) {
	return func(path string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(path, flag, mode)
		if err != nil {
			return nil, err
		}
		how := syscall.LOCK_EX
		if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
			how = syscall.LOCK_SH
		}
		deadline := time.Now().Add(timeout)
		wait := 20 * time.Microsecond
		for {
			err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
			if err == nil {
				return f, nil
			}
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				f.Close()
				return nil, fmt.Errorf("lock: %w", err)
			}
			if time.Now().After(deadline) {
				f.Close()
				return nil, fmt.Errorf("%w (waited %v)", ErrLocked, timeout)
			}
			time.Sleep(wait)
			if wait < time.Millisecond {
				wait *= 2
			}
		}
	}
}

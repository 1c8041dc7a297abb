package boltstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// statPath is what checkSameFile reads of the file path names, before
// each commit: through statx, asking for no timestamp. A stat that reads
// a file's change time makes the kernel (6.13 and later: multigrain
// timestamps) give that file's next write a fine-grained time, which
// moves every file's next timestamp on; so the journal's record, written
// next, changed the journal's mtime at every commit, and every flush of
// the journal wrote its inode too — on ext4 without a journal, a second
// write the flush waited for (perf: 2,080 inode writes for 2,005 flushes;
// without the times asked, about one a clock tick, 4 ms here).
func statPath(path string) (pathStat, error) {
	var st unix.Statx_t
	err := statx(unix.AT_FDCWD, path, unix.AT_STATX_SYNC_AS_STAT, statMask, &st)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		// A kernel older than 4.11, or a sandbox refusing statx (older
		// container seccomp profiles say EPERM).
		return statPathPortable(path)
	}
	if err != nil {
		return pathStat{}, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	return statxStat(&st), nil
}

// statMask is what statPath and statFile ask: no timestamp.
const statMask = unix.STATX_TYPE | unix.STATX_INO | unix.STATX_SIZE | unix.STATX_NLINK

// statxStat is st's pathStat.
func statxStat(st *unix.Statx_t) pathStat {
	return pathStat{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino, size: int64(st.Size), links: uint64(st.Nlink)}
}

// statFile is statPath for a file open as f (its descriptor, no path):
// what the commits' checks read of the ledger file and its journal, with
// no timestamp asked, for the reason statPath gives.
func statFile(f *os.File) (pathStat, error) {
	var st unix.Statx_t
	// Through the descriptor held (Control), as f.Stat reads it: a lock
	// waiter's file may be closed by another goroutine meanwhile.
	rc, err := f.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			err = statx(int(fd), "", unix.AT_EMPTY_PATH, statMask, &st)
		})
		if cerr != nil {
			err = cerr
		}
	}
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		return statFilePortable(f)
	}
	if err != nil {
		return pathStat{}, &os.PathError{Op: "statx", Path: f.Name(), Err: err}
	}
	return statxStat(&st), nil
}

// statx is unix.Statx; a test makes it fail as a sandbox or an old kernel
// would.
var statx = unix.Statx

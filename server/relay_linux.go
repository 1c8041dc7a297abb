package server

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// checkPeer refuses a connection whose other end runs as a user other
// than uid (this process's effective uid), and returns the pid of the
// process at the other end (when it connected or listened).
func checkPeer(c *net.UnixConn, uid int) (pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("peer credentials: %w", cerr)
	}
	if int64(cred.Uid) != int64(uid) {
		return 0, fmt.Errorf("the process at the other end runs as uid %d, not %d", cred.Uid, uid)
	}
	return int(cred.Pid), nil
}

// fileOwner is the user owning the file at path; ok is false if it cannot
// be told.
func fileOwner(path string) (uid int, ok bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return 0, false
	}
	return int(st.Uid), true
}

// fileID is the device and inode numbers of the file at path.
func fileID(path string) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Dev), st.Ino, nil
}

// sunPathMax is the most bytes a socket's path may have (sun_path, less
// its terminating NUL).
const sunPathMax = 107

// sockName is a name of the socket at path short enough for bind and
// connect: path itself, or, past sunPathMax, the same file named through
// an open descriptor of its directory (/proc/self/fd/N/base). Call done
// once the name has been used.
func sockName(path string) (name string, done func(), err error) {
	if len(path) <= sunPathMax {
		return path, func() {}, nil
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, &os.PathError{Op: "open", Path: filepath.Dir(path), Err: err}
	}
	name = fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(path))
	if len(name) > sunPathMax {
		unix.Close(fd)
		return "", nil, fmt.Errorf("socket name %s: longer than %d bytes even through its folder's descriptor", filepath.Base(path), sunPathMax)
	}
	return name, func() { unix.Close(fd) }, nil
}

package server

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// checkPeer refuses a connection whose other end runs as a user other
// than uid (this process's effective uid).
func checkPeer(c *net.UnixConn, uid int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if int64(cred.Uid) != int64(uid) {
		return fmt.Errorf("the process at the other end runs as uid %d, not %d", cred.Uid, uid)
	}
	return nil
}

// fileID is the device and inode numbers of the file at path.
func fileID(path string) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Dev), st.Ino, nil
}

package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pollable returns a file reading what f reads, through the runtime's
// poller where f is a pipe or a socket (an MCP client's stdin: a pipe,
// or a socket as Node.js launches its children), and what to call when
// done with it; f itself otherwise, or where that cannot be had.
//
// The process's stdin is a blocking descriptor, and a read of it holds a
// thread and its processor in the system call between calls. With two
// processors, that processor in a system call while the other works on a
// call is one the runtime's monitor takes back, every call — and every
// time it does, the monitor goes back to waking every 20 µs: 9 sleeps of
// it a call, a tenth of logbook serve's CPU (perf). Read through the
// poller, the waiting reader holds neither: 330–360 → 275–285 µs of CPU a
// task_create over stdio, p50 unchanged.
//
// The non-blocking flag belongs to the open pipe or socket, which other
// processes may share (their reads and writes would then fail with
// EAGAIN): a pipe is opened again (/proc/self/fd), a new open pipe of its
// own; a socket cannot be. It is made non-blocking only where no one else
// is seen to have it — not one of outs (stdout, stderr, written as
// blocking files), not open in the parent process (Node.js closes its
// children's ends once they started; a shell running a pipeline keeps
// them) — and is set back to blocking by done, unless it was non-blocking
// already.
func pollable(f *os.File, outs ...*os.File) (r *os.File, done func()) {
	done = func() {}
	// The descriptor, read without f.Fd(), which would set a pollable f
	// blocking.
	fd := -1
	if c, err := f.SyscallConn(); err == nil {
		c.Control(func(d uintptr) { fd = int(d) })
	}
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil {
		return f, done
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_ACCMODE == unix.O_WRONLY {
		return f, done // not readable: reads of f fail as they would
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		r, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return f, done
		}
		var rst unix.Stat_t
		if err := unix.Fstat(r, &rst); err != nil || rst.Dev != st.Dev || rst.Ino != st.Ino {
			unix.Close(r)
			return f, done
		}
		return os.NewFile(uintptr(r), f.Name()), done
	case unix.S_IFSOCK:
		if sameAsAny(st, outs) || heldByParent(st.Ino) {
			// The socket is stdout too (inetd, socat, ssh), or the
			// process that started logbook has it (a shell running
			// logbook serve | tee, whose tee writes to it): non-blocking,
			// it would fail their writes, as a blocking file's, with
			// EAGAIN once its buffer fills.
			return f, done
		}
		r, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return f, done
		}
		if fl&unix.O_NONBLOCK == 0 {
			if err := unix.SetNonblock(r, true); err != nil {
				unix.Close(r)
				return f, done
			}
			done = func() { unix.SetNonblock(fd, false) }
		}
		return os.NewFile(uintptr(r), f.Name()), done
	}
	return f, done
}

// sameAsAny reports whether any of files is the file st describes.
func sameAsAny(st unix.Stat_t, files []*os.File) bool {
	for _, f := range files {
		c, err := f.SyscallConn()
		if err != nil {
			continue
		}
		var ost unix.Stat_t
		var serr error
		if err := c.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &ost) }); err != nil || serr != nil {
			continue
		}
		if ost.Dev == st.Dev && ost.Ino == st.Ino {
			return true
		}
	}
	return false
}

// heldByParent reports whether the parent process has the socket with
// inode ino open, or whether that cannot be told (its descriptors not
// readable: another user's process).
func heldByParent(ino uint64) bool {
	dir := "/proc/" + strconv.Itoa(os.Getppid()) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	for _, e := range entries {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && target == want {
			return true
		}
	}
	return false
}

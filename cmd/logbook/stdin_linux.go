package main

import (
	"io"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollable returns a reader of what f reads, through the runtime's poller
// where f is a pipe or a socket (an MCP client's stdin: a pipe, or a
// socket as Node.js launches its children), and what to call when done
// with it; f itself otherwise, or where that cannot be had.
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
// The pipe or socket stays blocking for everyone else: its non-blocking
// flag belongs to the open pipe or socket, which other processes may share
// — a shell running logbook serve | tee on a socket that is its stdin and
// stdout, whose tee's writes would fail with EAGAIN. A pipe is opened
// again (/proc/self/fd), a new open pipe of its own, non-blocking. A
// socket cannot be: it is read with recv(MSG_DONTWAIT), which waits for
// nothing whatever the flag, through the poller, with which it is
// registered by setting the flag for the few system calls that takes, at
// start, and clearing it again.
func pollable(f *os.File) (r io.Reader, done func()) {
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
		pf := os.NewFile(uintptr(r), f.Name())
		return pf, func() { pf.Close() }
	case unix.S_IFSOCK:
		r, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return f, done
		}
		blocking := fl&unix.O_NONBLOCK == 0
		if blocking && unix.SetNonblock(r, true) != nil {
			unix.Close(r)
			return f, done
		}
		pf := os.NewFile(uintptr(r), f.Name()) // non-blocking: registered with the poller
		if blocking {
			unix.SetNonblock(r, false)
		}
		rc, err := pf.SyscallConn()
		if err != nil {
			pf.Close()
			return f, done
		}
		return &dontWait{f: pf, rc: rc}, func() { pf.Close() }
	}
	return f, done
}

// dontWait reads a socket with recv(MSG_DONTWAIT), waiting in the poller
// while there is nothing to read.
type dontWait struct {
	f  *os.File
	rc syscall.RawConn
}

func (d *dontWait) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := d.rc.Read(func(fd uintptr) bool {
		for {
			r, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), unix.MSG_DONTWAIT, 0, 0)
			switch errno {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait in the poller
			case 0:
				n, rerr = int(r), nil
			default:
				n, rerr = 0, errno
			}
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, &os.PathError{Op: "read", Path: d.f.Name(), Err: rerr}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// SetReadDeadline bounds the reads to come, as os.File's does.
func (d *dontWait) SetReadDeadline(t time.Time) error { return d.f.SetReadDeadline(t) }

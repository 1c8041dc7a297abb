package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The read side of a pipe is opened again, pollable (a read deadline
// holds), reading what the pipe carries up to its end, and the pipe as
// the launcher shares it stays blocking.
func TestPollableStdinPipe(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	in := os.NewFile(uintptr(p[0]), "/dev/stdin")
	w := os.NewFile(uintptr(p[1]), "w")
	defer in.Close()
	defer w.Close()
	if err := in.SetReadDeadline(time.Now()); err == nil {
		t.Fatal("the blocking pipe takes a deadline: the test proves nothing")
	}
	r, done := pollable(in)
	defer done()
	if r == in {
		t.Fatal("the pipe was not opened again")
	}
	defer r.Close()
	if err := r.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("not pollable: %v", err)
	}
	buf := make([]byte, 16)
	if _, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of an empty pipe: %v, want the deadline", err)
	}
	if err := r.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if fl, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("the launcher's pipe: flags %#x, %v; want it blocking", fl, err)
	}
	go func() {
		w.Write([]byte("{\"jsonrpc\":\"2.0\"}\n"))
		w.Close()
	}()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "{\"jsonrpc\":\"2.0\"}\n" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// A socket (Node.js launches its children with socket pairs for stdio)
// cannot be opened again: it is read through a descriptor of its own, set
// non-blocking, and set back to blocking when done — unless it was
// non-blocking before.
func TestPollableStdinSocket(t *testing.T) {
	for _, wasNonblocking := range []bool{false, true} {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if wasNonblocking {
			if err := unix.SetNonblock(fds[0], true); err != nil {
				t.Fatal(err)
			}
		}
		in := os.NewFile(uintptr(fds[0]), "/dev/stdin")
		w := os.NewFile(uintptr(fds[1]), "w")
		r, done := pollable(in)
		if r == in {
			t.Fatal("the socket is read as it was")
		}
		if err := r.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			t.Fatalf("not pollable: %v", err)
		}
		buf := make([]byte, 16)
		if _, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read of an empty socket: %v, want the deadline", err)
		}
		r.SetReadDeadline(time.Time{})
		go func() {
			w.Write([]byte("{}\n"))
			w.Close()
		}()
		if got, err := io.ReadAll(r); err != nil || string(got) != "{}\n" {
			t.Fatalf("read %q, %v", got, err)
		}
		r.Close()
		done()
		fl, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFL, 0)
		if err != nil || (fl&unix.O_NONBLOCK != 0) != wasNonblocking {
			t.Fatalf("the launcher's socket after done: flags %#x, %v; want non-blocking %v as before", fl, err, wasNonblocking)
		}
		in.Close()
	}
}

// A socket that is stdout too (inetd, socat) is left blocking: stdout's
// writes, as a blocking file's, would fail with EAGAIN once its buffer
// filled.
func TestPollableStdinSocketAlsoStdout(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := os.NewFile(uintptr(fds[0]), "/dev/stdin")
	defer in.Close()
	defer unix.Close(fds[1])
	dup, err := unix.FcntlInt(uintptr(fds[0]), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := os.NewFile(uintptr(dup), "/dev/stdout")
	defer out.Close()
	if r, _ := pollable(in, out); r != in {
		r.Close()
		t.Fatal("the socket that is stdout too was made non-blocking")
	}
	if fl, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("flags %#x, %v; want blocking", fl, err)
	}
}

// Anything but a readable pipe or socket is used as it is: a file, a device, the
// write side of a pipe.
func TestPollableStdinOthers(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	rd, wr := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	defer rd.Close()
	defer wr.Close()
	for _, in := range []*os.File{f, null, wr} {
		if got, _ := pollable(in); got != in {
			got.Close()
			t.Errorf("%s was opened again", in.Name())
		}
	}
}

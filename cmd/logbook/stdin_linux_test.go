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

// deadliner is what a pollable reader takes: a read deadline (os.File's
// holds only for a descriptor the poller watches).
type deadliner interface {
	SetReadDeadline(time.Time) error
}

// readsThroughPoller checks that r waits in the poller (a deadline holds on
// an empty pipe or socket), then reads want up to the end.
func readsThroughPoller(t *testing.T, r io.Reader, w *os.File, want string) {
	t.Helper()
	dl, ok := r.(deadliner)
	if !ok {
		t.Fatalf("%T takes no deadline", r)
	}
	if err := dl.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("not pollable: %v", err)
	}
	buf := make([]byte, 16)
	if _, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing to read: %v, want the deadline", err)
	}
	if err := dl.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write([]byte(want))
		w.Close()
	}()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// stillBlocking fails the test unless fd's open file is blocking: it may be
// shared with the process that launched logbook.
func stillBlocking(t *testing.T, fd int) {
	t.Helper()
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("the launcher's descriptor: flags %#x, %v; want it blocking", fl, err)
	}
}

// The read side of a pipe is opened again, pollable, reading what the pipe
// carries up to its end; the pipe as the launcher shares it stays blocking.
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
	if r == io.Reader(in) {
		t.Fatal("the pipe was not opened again")
	}
	stillBlocking(t, p[0])
	readsThroughPoller(t, r, w, "{\"jsonrpc\":\"2.0\"}\n")
	stillBlocking(t, p[0])
}

// A socket (Node.js launches its children with socket pairs for stdio)
// cannot be opened again: it is read with recv(MSG_DONTWAIT) through the
// poller, and stays as it was — blocking, or not — for everyone sharing
// it: a shell's tee writing to the same socket, stdout being the socket.
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
		if r == io.Reader(in) {
			t.Fatal("the socket is read as it was")
		}
		flags := func() bool {
			fl, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFL, 0)
			if err != nil {
				t.Fatal(err)
			}
			return fl&unix.O_NONBLOCK != 0
		}
		if flags() != wasNonblocking {
			t.Fatalf("the socket's flag changed: non-blocking %v, was %v", !wasNonblocking, wasNonblocking)
		}
		readsThroughPoller(t, r, w, "{}\n")
		done()
		if flags() != wasNonblocking {
			t.Fatalf("the socket's flag changed after the reads: non-blocking %v, was %v", !wasNonblocking, wasNonblocking)
		}
		in.Close()
	}
}

// Anything but a readable pipe or socket is used as it is: a file, a
// device, the write side of a pipe.
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
		if got, done := pollable(in); got != io.Reader(in) {
			done()
			t.Errorf("%s was opened again", in.Name())
		}
	}
}

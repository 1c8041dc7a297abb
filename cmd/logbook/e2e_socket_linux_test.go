package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// logbook serve over stdio given as sockets: one socket pair for stdin and
// another for stdout, as Node.js launches its children, and one socket for
// both, as inetd or socat do. The client writes many requests before it
// reads an answer, so the server's answers fill the socket and its writes
// wait: a stdout made non-blocking under a file written as blocking (stdin
// read through the poller, the socket being stdout too) failed them with
// EAGAIN.
func TestServeOverSockets(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			in, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			out := in
			if !shared {
				if out, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
					t.Fatal(err)
				}
			}
			// The test's own ends read and written through the poller, so
			// that their deadlines hold.
			for _, fd := range []int{in[0], out[0]} {
				if err := unix.SetNonblock(fd, true); err != nil {
					t.Fatal(err)
				}
			}
			childIn, childOut := os.NewFile(uintptr(in[1]), "stdin"), os.NewFile(uintptr(out[1]), "stdout")
			client := os.NewFile(uintptr(in[0]), "client")
			answers := client
			if !shared {
				answers = os.NewFile(uintptr(out[0]), "answers")
				defer answers.Close()
			}
			defer client.Close()
			cmd := exec.Command(e2eBinary(t), "serve", "--db", filepath.Join(t.TempDir(), "l.db"), "--agent", "sock")
			cmd.Stdin, cmd.Stdout = childIn, childOut
			stderr, wait := startWaited(t, cmd)
			childIn.Close()
			if !shared {
				childOut.Close()
			}
			if err := answers.SetReadDeadline(time.Now().Add(time.Minute)); err != nil { // a hang bound
				t.Fatal(err)
			}
			rd := bufio.NewReaderSize(answers, 1<<20)
			next := func() map[string]any {
				t.Helper()
				line, err := rd.ReadBytes('\n')
				if err != nil {
					t.Fatalf("reading an answer: %v\nstderr: %s", err, stderr.String())
				}
				var m map[string]any
				if err := json.Unmarshal(line, &m); err != nil {
					t.Fatalf("answer %q: %v", line, err)
				}
				return m
			}
			if err := client.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil { // a hang bound
				t.Fatal(err)
			}
			send := func(s string) {
				t.Helper()
				if _, err := client.Write([]byte(s + "\n")); err != nil {
					t.Fatal(err)
				}
			}
			send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			if m := next(); m["result"] == nil {
				t.Fatalf("initialize: %v", m)
			}
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			const n = 60
			// The answers are read from a second on: until then the
			// server's writes fill the socket and wait.
			type read struct {
				bytes int
				err   error
			}
			got := make(chan read, 1)
			go func() {
				time.Sleep(time.Second)
				total := 0
				for range n {
					line, err := rd.ReadBytes('\n')
					if err != nil {
						got <- read{total, fmt.Errorf("reading an answer: %w", err)}
						return
					}
					var m struct {
						Error  any `json:"error"`
						Result struct {
							IsError bool `json:"isError"`
						} `json:"result"`
					}
					if err := json.Unmarshal(line, &m); err != nil || m.Error != nil || m.Result.IsError {
						got <- read{total, fmt.Errorf("answer %.200q: %v", line, err)}
						return
					}
					total += len(line)
				}
				got <- read{total, nil}
			}()
			for i := 1; i <= n; i++ {
				if i%2 == 0 {
					send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i))
				} else {
					send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"task_create","arguments":{"title":"t%d","project":"sock"}}}`, i, i))
				}
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("%v\nstderr: %s", r.err, stderr.String())
			}
			if r.bytes < 1<<20 {
				t.Fatalf("%d bytes of answers: too few to fill the socket", r.bytes)
			}
			client.Close()
			if err := wait(); err != nil {
				t.Fatalf("serve, its stdin closed: %v\nstderr: %s", err, stderr.String())
			}
			if strings.Contains(stderr.String(), "EAGAIN") || strings.Contains(stderr.String(), "temporarily unavailable") {
				t.Fatalf("stderr: %s", stderr.String())
			}
		})
	}
}

// logbook serve | cat on a socket that is both the pipeline's stdin and
// stdout (inetd, socat, ssh): cat writes to the socket logbook reads, and
// must keep blocking writes. The socket set non-blocking for logbook's
// reads failed cat's writes with EAGAIN once the client read slower than
// the answers came ("cat: write error: Resource temporarily unavailable",
// 4 answers of 199) — with a shell as logbook's parent, and with the
// pipeline's two processes started side by side by the client (siblings).
func TestServeInAPipelineOverASocket(t *testing.T) {
	for _, layout := range []string{"shell", "siblings"} {
		t.Run(layout, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.SetNonblock(fds[0], true); err != nil {
				t.Fatal(err)
			}
			client, child := os.NewFile(uintptr(fds[0]), "client"), os.NewFile(uintptr(fds[1]), "child")
			defer client.Close()
			db := filepath.Join(t.TempDir(), "l.db")
			var waits []func() error
			var stderrs []*lockedBuffer
			serveErr := filepath.Join(t.TempDir(), "serve.stderr") // the shell's serve's (a file: no pipe Wait waits on)
			if layout == "shell" {
				cmd := exec.Command("sh", "-c", fmt.Sprintf("%q serve --db %q 2>%q | cat", e2eBinary(t), db, serveErr))
				cmd.Stdin, cmd.Stdout = child, child
				stderr, wait := startWaited(t, cmd)
				waits, stderrs = append(waits, wait), append(stderrs, stderr)
			} else {
				pr, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				serve := exec.Command(e2eBinary(t), "serve", "--db", db)
				serve.Stdin, serve.Stdout = child, pw
				cat := exec.Command("cat")
				cat.Stdin, cat.Stdout = pr, child
				for _, cmd := range []*exec.Cmd{serve, cat} {
					stderr, wait := startWaited(t, cmd)
					waits, stderrs = append(waits, wait), append(stderrs, stderr)
				}
				pr.Close()
				pw.Close()
			}
			child.Close()
			said := func() string {
				var b strings.Builder
				for _, s := range stderrs {
					b.WriteString(e2eTrunc(s.String(), 2000))
				}
				if data, err := os.ReadFile(serveErr); err == nil {
					b.WriteString(e2eTrunc(string(data), 20000))
				}
				return b.String()
			}
			const n = 200
			var req strings.Builder
			req.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
			req.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
			for i := 2; i <= n; i++ {
				fmt.Fprintf(&req, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i)
			}
			if err := client.SetDeadline(time.Now().Add(time.Minute)); err != nil { // a hang bound
				t.Fatal(err)
			}
			if _, err := client.Write([]byte(req.String())); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second) // the answers fill the socket; cat's writes wait
			rd := bufio.NewReaderSize(client, 1<<20)
			for i := 1; i <= n; i++ {
				line, err := rd.ReadBytes('\n')
				if err != nil {
					t.Fatalf("answer %d of %d: %v\nstderr: %s", i, n, err, said())
				}
				var m struct {
					Result json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal(line, &m); err != nil || m.Result == nil {
					t.Fatalf("answer %d: %.200q, %v", i, line, err)
				}
			}
			unix.Shutdown(fds[0], unix.SHUT_WR)
			for _, wait := range waits {
				if err := wait(); err != nil {
					t.Fatalf("the pipeline, its stdin closed: %v\nstderr: %s", err, said())
				}
			}
		})
	}
}

// startWaited starts cmd in a process group of its own, keeping its
// stderr, and returns that and wait: cmd's exit error, once it exits
// within a minute. Past that its whole group (a shell's pipeline too) is
// sent SIGQUIT — a Go process writes its goroutines to its stderr — then
// killed, and the failure says so; Wait gives up on output a survivor
// still holds (WaitDelay), so a hang fails the test rather than hold it.
// The test's end kills the group if it still runs.
func startWaited(t *testing.T, cmd *exec.Cmd) (*lockedBuffer, func() error) {
	t.Helper()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	group := -cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	var werr error
	wait := func() error {
		once.Do(func() {
			select {
			case werr = <-exited:
			case <-time.After(time.Minute):
				unix.Kill(group, unix.SIGQUIT)
				time.Sleep(2 * time.Second)
				unix.Kill(group, unix.SIGKILL)
				<-exited
				werr = errors.New("still running after a minute (its group sent SIGQUIT, then killed)")
			}
		})
		return werr
	}
	t.Cleanup(func() {
		unix.Kill(group, unix.SIGKILL)
		wait()
	})
	return stderr, wait
}

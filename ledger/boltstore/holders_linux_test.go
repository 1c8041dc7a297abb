package boltstore

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHolders: the process holding a file's flock is named, stopped or
// not, and a file nobody holds has no holder.
func TestHolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if hs := Holders(path); len(hs) != 0 {
		t.Errorf("a file nobody holds: %v", hs)
	}
	cmd, stdin, stdout, _ := startChild(t, "TestChildHoldsLock", path)
	defer stdin.Close()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	pid := cmd.Process.Pid
	want := func(stopped bool) {
		t.Helper()
		// The kernel stops and resumes a process in its own time.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			hs := Holders(path)
			if len(hs) == 1 && hs[0].PID == pid && hs[0].Stopped == stopped && Stopped(pid) == stopped {
				if stopped != strings.Contains(hs[0].String(), "kill -CONT") {
					t.Errorf("holder %q: says it is stopped: %v, want %v", hs[0], !stopped, stopped)
				}
				if hs[0].Name == "" {
					t.Errorf("holder %+v: no name", hs[0])
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("holders %+v of the file the child (pid %d) holds, stopped %v: want it alone, stopped %v", hs, pid, Stopped(pid), stopped)
			}
		}
	}
	want(false)
	cmd.Process.Signal(syscall.SIGSTOP)
	want(true)
	cmd.Process.Signal(syscall.SIGCONT)
	want(false)
	stdin.Close()
	cmd.Wait()
	if hs := Holders(path); len(hs) != 0 {
		t.Errorf("after the holder ended: %v", hs)
	}
	if Stopped(pid) {
		t.Errorf("a process that ended is stopped")
	}
	// A process is a holder only with the file open: /proc/locks names
	// the process that took a lock, which may have left it to a child.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if hasOpen(os.Getpid(), fi) {
		t.Error("this process has the file open, it says")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !hasOpen(os.Getpid(), fi) {
		t.Error("this process, with the file open, has it not open, it says")
	}
}

// TestChildHoldsLock is TestHolders's child: it takes the file's flock,
// says so, and holds it until its stdin closes.
func TestChildHoldsLock(t *testing.T) {
	path := childLedger(t)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

package boltstore

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A process stopped by a signal (SIGSTOP, or ^Z in the terminal of the
// agent that started it) keeps what it holds — the ledger file's lock, a
// relay hub's calls — until it is resumed, and nothing can tell it apart
// from a slow one but the kernel's record of its state. Holders and
// Stopped read that record, so that a call kept waiting says who keeps it
// waiting and a follower of a stopped hub stops handing it calls.

// Holder is a process holding a file's lock.
type Holder struct {
	PID     int
	Name    string // its command (/proc/PID/comm), "" if unknown
	Stopped bool   // stopped (by a signal or a tracer) when looked at
}

// String names the holder for a person: "process 1234 (logbook), which is
// stopped (...)".
func (h Holder) String() string {
	s := "process " + strconv.Itoa(h.PID)
	if h.Name != "" {
		s += " (" + h.Name + ")"
	}
	if h.Stopped {
		s += fmt.Sprintf(", which is stopped (SIGSTOP, or ^Z in its terminal) and keeps the file until it is resumed (kill -CONT %d) or ends", h.PID)
	}
	return s
}

// Holders returns the processes holding the flock of the file at path, as
// /proc/locks lists them: none if nobody does or it cannot be told. A
// lock is matched by the file's inode number, whatever device /proc/locks
// names (a btrfs subvolume's or an overlay's differs from what stat
// says), and its process kept only if it has the file open: /proc/locks
// names the process that took the lock, which may have ended and left it
// to a child — and its pid to another process.
func Holders(path string) []Holder {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	// A line: "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9978050 0 EOF"; a
	// waiter's has "->" after the number.
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	var hs []Holder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || !strings.HasSuffix(fields[5], ino) {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 || slices.ContainsFunc(hs, func(h Holder) bool { return h.PID == pid }) || !hasOpen(pid, fi) {
			continue // (a process holding it through two opens is listed once)
		}
		name, _ := os.ReadFile("/proc/" + fields[4] + "/comm")
		hs = append(hs, Holder{PID: pid, Name: string(bytes.TrimSpace(name)), Stopped: Stopped(pid)})
	}
	return hs
}

// hasOpen reports whether process pid has the file fi open.
func hasOpen(pid int, fi os.FileInfo) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if other, err := os.Stat(dir + fd.Name()); err == nil && os.SameFile(fi, other) {
			return true
		}
	}
	return false
}

// HeldBy names the processes other than this one holding the flock of
// the file at path ("" if none can be told), and whether one of them is
// stopped: it keeps the file until it is resumed.
func HeldBy(path string) (who string, stopped bool) {
	var names []string
	for _, h := range Holders(path) {
		if h.PID != os.Getpid() {
			names = append(names, h.String())
			stopped = stopped || h.Stopped
		}
	}
	return strings.Join(names, "; "), stopped
}

// Stopped reports whether process pid is stopped — by a signal (state T)
// or a tracer (t) — as /proc/PID/stat says; false if it cannot be read
// (the process is gone).
func Stopped(pid int) bool {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var buf [512]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil || n <= 0 {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')' (comm may hold
	// any byte, parentheses included).
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'T' || b[i+2] == 't'
}

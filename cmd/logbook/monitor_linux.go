package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Go runtime's monitor (sysmon) costs logbook serve a third of its CPU
// unless told otherwise. Between two calls of an agent every processor is
// idle, so the monitor sleeps until something wakes it; the next call's
// first system call (reading stdin) does, and the monitor then wakes every
// 20 µs until it next finds every processor idle — the whole call, the
// journal's flush included: 10–15 wake-ups of a thread a call, each a
// timer, a system call and two context switches on this VM. perf of serve
// under a client making one call at a time: runtime.sysmon 22% of the
// process's CPU. The runtime has no setting for it but GODEBUG's
// schedtrace, read only as a process starts: set, the monitor never sleeps
// that deep sleep, so nothing wakes it to the 20 µs pace; a monitor with
// nothing to do backs off to a wake-up each 10 ms. Go issue 18236 ("sysmon
// tick is hardcoded") is the runtime's side of it.
//
// So serve and server start again (exec of /proc/self/exe, the same
// process: the same pid, descriptors, signals ignored and arguments, its
// name put back, nameProcess) with GODEBUG's schedtrace at its largest,
// 2^31−1 ms. What that costs:
//   - the monitor prints its one-line trace ("SCHED …") to stderr each
//     time the system's monotonic clock (time since boot) passes a
//     multiple of 24.8 days; so it is set only where that clock is more
//     than a week short of the first (a process started then and running
//     for more than a week prints one line each 24.8 days);
//   - a fatal error or SIGQUIT's dump begins with the scheduler's state;
//   - idle, the monitor wakes every 10 ms instead of sleeping: about 100
//     wake-ups a second, 0.1% of a processor;
//   - start-up takes one exec more (about 8 ms); --help is not started
//     again.
// GODEBUG naming schedtrace already (its own, or a user's:
// GODEBUG=schedtrace=0 turns this off) is left as it is, and a failed exec
// goes on as before. 267 → 157–185 µs of CPU a thought_record over stdio
// (a client making 3,000–4,000 calls one at a time, runs alternated).

// quietTrace is the schedtrace set: the largest the runtime reads.
const quietTrace = 1<<31 - 1 // ms

// quietSetting is what quietMonitor adds to GODEBUG.
var quietSetting = "schedtrace=" + strconv.Itoa(quietTrace)

// quietMonitor starts the process again with the monitor quiet, for the
// long-running commands args (os.Args) names; it returns only where it
// does not.
func quietMonitor(args []string) {
	if len(args) < 2 || args[1] != "serve" && args[1] != "server" || slices.ContainsFunc(args[2:], isHelp) {
		return
	}
	if godebug := os.Getenv("GODEBUG"); hasSchedtrace(godebug) {
		if strings.HasSuffix(godebug, quietSetting) {
			nameProcess(args[0])
		}
		return
	}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil ||
		time.Duration(ts.Nano())+7*24*time.Hour >= quietTrace*time.Millisecond {
		return
	}
	godebug := quietSetting
	if old := os.Getenv("GODEBUG"); old != "" {
		godebug = old + "," + godebug
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	syscall.Exec("/proc/self/exe", args, append(env, "GODEBUG="+godebug)) // returns only if it failed
}

// hasSchedtrace tells whether GODEBUG value v sets schedtrace.
func hasSchedtrace(v string) bool {
	for _, kv := range strings.Split(v, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "schedtrace=") {
			return true
		}
	}
	return false
}

// nameProcess gives the process started again the name an exec of the
// binary by its own path would have (the kernel names it after the path
// exec was given: "exe"), so that ps, pgrep -x logbook and the lock
// holder's name in logbook's own messages (boltstore.Holders) see logbook.
func nameProcess(argv0 string) {
	if comm, err := os.ReadFile("/proc/self/comm"); err != nil || strings.TrimSpace(string(comm)) != "exe" {
		return
	}
	name := filepath.Base(argv0)
	if len(name) > 15 { // the kernel keeps 15 bytes
		name = name[:15]
	}
	if p, err := unix.BytePtrFromString(name); err == nil {
		unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0)
	}
}

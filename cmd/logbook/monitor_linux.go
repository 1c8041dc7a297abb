package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

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
// So serve and server start again (exec, the same process: the same pid,
// descriptors and arguments) with GODEBUG's schedtrace at its largest,
// 2^31−1 ms: the monitor prints its one-line trace to stderr each time the
// system's monotonic clock (time since boot) passes another multiple of
// that, 24.8 days. So it is set only where the clock is more than a week
// short of the first: a process up for a week or more may print one line
// "SCHED …" to stderr. GODEBUG naming schedtrace already (its own, or a
// user's: GODEBUG=schedtrace=0 turns this off) is left as it is, and a
// failed exec goes on as before. 267 → 170–185 µs of CPU a thought_record
// over stdio (a client making 4,000 calls one at a time, twice each).

// quietTrace is the schedtrace set: the largest the runtime reads.
const quietTrace = 1<<31 - 1 // ms

// quietMonitor starts the process again with the monitor quiet, for the
// long-running commands args (os.Args) names; it returns only where it
// does not.
func quietMonitor(args []string) {
	if len(args) < 2 || args[1] != "serve" && args[1] != "server" || hasSchedtrace(os.Getenv("GODEBUG")) {
		return
	}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil ||
		time.Duration(ts.Nano())+7*24*time.Hour >= quietTrace*time.Millisecond {
		return
	}
	godebug := "schedtrace=" + strconv.Itoa(quietTrace)
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

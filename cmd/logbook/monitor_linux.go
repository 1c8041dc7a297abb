package main

import (
	"os"
	"slices"
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
// So serve and server start again (exec of /proc/self/exe, the same
// process: the same pid, descriptors, signals ignored and arguments, its
// name put back, nameProcess) with GODEBUG's schedtrace at its largest,
// 2^31−1 ms. What that costs:
//   - the monitor prints its one-line trace ("SCHED …") to stderr each
//     time the system's monotonic clock (time since boot) passes a
//     multiple of 24.8 days; so it is set only where that clock is more
//     than a week short of the first (a process started then and running
//     for more than a week prints one line each 24.8 days);
//   - a fatal error's, an unrecovered panic's or SIGQUIT's dump begins
//     with the scheduler's whole state (every P, M and goroutine); a
//     runtime fault while the runtime holds its scheduler lock would then
//     hang the process rather than end it (Go issue 59758);
//   - idle, the monitor wakes every 10 ms instead of sleeping: about 100
//     wake-ups a second, 0.1% of a processor;
//   - start-up takes one exec more (about 8 ms); --help is not started
//     again; a debugger that starts serve loses it at the exec (set
//     GODEBUG=schedtrace=0).
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
	if name, ok := os.LookupEnv(execName); ok {
		os.Unsetenv(execName) // nothing of it reaches the environment logbook reads or passes on
		nameProcess(name)
		return
	}
	if hasSchedtrace(os.Getenv("GODEBUG")) {
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
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		return
	}
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") && !strings.HasPrefix(kv, execName+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GODEBUG="+godebug, execName+"="+strings.TrimSuffix(string(comm), "\n"))
	syscall.Exec("/proc/self/exe", args, env) // returns only if it failed
}

// execName carries the process's name across quietMonitor's exec, which
// names it after the path it was given ("exe"): nameProcess gives it back.
const execName = "LOGBOOK_EXEC_NAME"

// hasSchedtrace tells whether GODEBUG value v sets schedtrace.
func hasSchedtrace(v string) bool {
	for _, kv := range strings.Split(v, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "schedtrace=") {
			return true
		}
	}
	return false
}

// nameProcess names every thread of the process name, the name the
// kernel gave it before quietMonitor's exec (which named it "exe"), so
// that ps, pgrep -x logbook, top -H, perf's threads and the lock holder's
// name in logbook's own messages (boltstore.Holders) see what they did
// before. Threads the runtime starts later take their creator's name.
func nameProcess(name string) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, t := range tasks {
		if f, err := os.OpenFile("/proc/self/task/"+t.Name()+"/comm", os.O_WRONLY, 0); err == nil {
			f.WriteString(name) // best effort
			f.Close()
		}
	}
}

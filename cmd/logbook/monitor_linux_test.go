package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// logbook serve starts again, as the same process and under its own name,
// with the runtime's monitor kept from its deep sleep (monitor_linux.go):
// GODEBUG's schedtrace added to what the environment had; one the user set
// is left alone. (Each case sets GODEBUG, whatever the test's own.)
func TestServeQuietsTheMonitor(t *testing.T) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	if time.Duration(ts.Nano())+7*24*time.Hour >= quietTrace*time.Millisecond {
		t.Skip("this system has been up for more than 17 days: serve leaves the monitor as it is")
	}
	for _, tc := range []struct{ env, want string }{
		{"GODEBUG=", "GODEBUG=schedtrace=2147483647"},
		{"GODEBUG=panicnil=1", "GODEBUG=panicnil=1,schedtrace=2147483647"},
		{"GODEBUG=schedtrace=0", "GODEBUG=schedtrace=0"},
	} {
		s := startE2E(t, e2eConfig{DB: filepath.Join(t.TempDir(), "ledger.db"), Env: strings.Fields(tc.env)})
		s.initialize("2025-06-18") // answered: the process has started again by now
		environ, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, kv := range strings.Split(string(environ), "\x00") {
			if strings.HasPrefix(kv, "GODEBUG=") {
				got = append(got, kv)
			}
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("started with %q: the serving process's environment has %q, want %q", tc.env, got, tc.want)
		}
		// Every thread under the binary's name (an exec of /proc/self/exe
		// names them "exe").
		dir := "/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/task/"
		tasks, err := os.ReadDir(dir)
		if err != nil || len(tasks) < 2 {
			t.Fatalf("the serving process's threads: %d, %v", len(tasks), err)
		}
		name := filepath.Base(e2eBinary(t))
		for _, task := range tasks {
			comm, err := os.ReadFile(dir + task.Name() + "/comm")
			if err != nil || strings.TrimSpace(string(comm)) != name {
				t.Errorf("started with %q: thread %s is named %q (%v), want %q", tc.env, task.Name(), comm, err, name)
			}
		}
	}
}

func TestHasSchedtrace(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "schedtrace=0": true, "gctrace=1,schedtrace=10": true, " schedtrace=5": true,
		"scheddetail=1": false, "xschedtrace=1": false, "gctrace=1": false,
	} {
		if got := hasSchedtrace(v); got != want {
			t.Errorf("hasSchedtrace(%q) = %v, want %v", v, got, want)
		}
	}
}

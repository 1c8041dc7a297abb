package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// e2eBurst sends n task_create calls without waiting and returns their
// answer channels. Titles and contents carry e2eSecret.
func e2eBurst(s *e2eServer, n int) []<-chan e2eMessage {
	chs := make([]<-chan e2eMessage, n)
	for i := range chs {
		chs[i] = s.callToolAsync("task_create", e2eJSON(s.t, map[string]any{
			"title": fmt.Sprintf("%s burst %d", e2eSecret, i), "project": "life", "description": e2eSecret,
		}))
	}
	return chs
}

// e2eCollect gathers the answers that arrived before the process exited:
// each must be a success envelope.
func e2eCollect(t *testing.T, chs []<-chan e2eMessage) (answered int) {
	t.Helper()
	for i, ch := range chs {
		select {
		case m, ok := <-ch:
			if !ok {
				continue // not read before the server stopped taking calls
			}
			if r := parseE2EReply(t, "task_create", m); !r.Env.OK {
				t.Errorf("call %d: %s", i, r.Result)
			}
			answered++
		case <-time.After(e2eTimeout):
			t.Fatalf("call %d: neither answered nor dropped", i)
		}
	}
	return answered
}

// e2eCountCalls counts the tool.called events of tool, and checks the file.
func e2eCountCalls(t *testing.T, db, tool string) int {
	t.Helper()
	e2eVerify(t, db)
	_, events := e2eReadLedger(t, db, 0)
	n := 0
	for _, e := range events {
		if e.Call != nil && e.Call.Tool == tool {
			n++
		}
	}
	return n
}

// TestE2EStdinEOF: a client that sends calls and closes stdin at once gets
// every call answered, then the server exits 0.
func TestE2EStdinEOF(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "eof.db")
	s := startE2E(t, e2eConfig{DB: db, Agent: "eof", Env: []string{"LOGBOOK_LOG=debug"}})
	s.initialize("2025-06-18")
	const n = 48
	chs := e2eBurst(s, n)
	s.closeStdin()
	if code := s.waitExit(e2eTimeout); code != 0 {
		t.Fatalf("exit code %d after stdin EOF; stderr:\n%s", code, e2eTrunc(s.stderr.String(), 4000))
	}
	if got := e2eCollect(t, chs); got != n {
		t.Errorf("%d of %d in-flight calls answered before exit", got, n)
	}
	if got := e2eCountCalls(t, db, "task_create"); got != n {
		t.Errorf("%d task_create calls recorded, want %d", got, n)
	}
	if strings.Contains(s.stderr.String(), e2eSecret) {
		t.Errorf("stderr (LOGBOOK_LOG=debug) carries an argument payload:\n%s", e2eTrunc(s.stderr.String(), 4000))
	}
}

// TestE2ENohup: started with SIGHUP ignored (nohup), serve keeps ignoring
// it: the session's end does not end it (Notify for SIGHUP would undo the
// ignoring).
func TestE2ENohup(t *testing.T) {
	t.Parallel()
	s := startE2E(t, e2eConfig{DB: filepath.Join(t.TempDir(), "nohup.db"), Agent: "nohup", IgnoreHUP: true})
	s.initialize("2025-11-25")
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.ping() // still serving
	s.ok("task_create", map[string]any{"title": "after the hangup", "project": "nohup"}, nil)
	s.closeStdin()
	if code := s.waitExit(e2eTimeout); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, e2eTrunc(s.stderr.String(), 4000))
	}
}

// TestE2ESignals: SIGTERM, SIGINT or SIGHUP (the terminal or session
// gone) with calls in flight and stdin still open: the server answers
// every call it had read, takes no more, exits 0, and the ledger holds
// exactly the calls answered.
func TestE2ESignals(t *testing.T) {
	t.Parallel()
	if signal.Ignored(syscall.SIGHUP) {
		// This test process was started with SIGHUP ignored (nohup, a
		// runner detached from its terminal): serve would inherit the
		// ignoring and rightly keep it (TestE2ENohup), and outlive the
		// hangup. Handled here, SIGHUP goes back to its default in the
		// processes started from now on.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "signal.db")
			s := startE2E(t, e2eConfig{DB: db, Agent: "signalled", Env: []string{"LOGBOOK_LOG=debug"}})
			s.initialize("2025-11-25")
			const n = 64
			chs := e2eBurst(s, n)
			<-chs[0] // calls are flowing
			if err := s.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code := s.waitExit(e2eTimeout)
			answered := 1 + e2eCollect(t, chs[1:])
			if code != 0 {
				t.Fatalf("exit code %d after %v; stderr:\n%s", code, sig, e2eTrunc(s.stderr.String(), 4000))
			}
			if got := e2eCountCalls(t, db, "task_create"); got != answered {
				t.Errorf("%d task_create calls recorded, %d answered: every recorded call must be answered and vice versa", got, answered)
			}
			t.Logf("%v: %d of %d calls answered before exit", sig, answered, n)
			if strings.Contains(s.stderr.String(), e2eSecret) {
				t.Errorf("stderr (LOGBOOK_LOG=debug) carries an argument payload:\n%s", e2eTrunc(s.stderr.String(), 4000))
			}
		})
	}
	t.Run("idle", func(t *testing.T) {
		s := startE2E(t, e2eConfig{DB: filepath.Join(t.TempDir(), "idle.db"), Agent: "idle"})
		s.initialize("2025-11-25")
		s.ping()
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := s.waitExit(e2eTimeout); code != 0 {
			t.Fatalf("idle server exited %d on SIGTERM", code)
		}
	})
}

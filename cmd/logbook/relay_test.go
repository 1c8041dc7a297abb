package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/server"
)

// The relay (server/relay.go): several `logbook serve` processes on one
// ledger file, the hub committing the others' calls. These tests run the
// real binary over stdio.

const (
	hubLine    = "this process is the hub"
	followLine = "committing through the hub"
)

// relayStart starts serve for agent (no --agent when agent is ""), and
// initializes it with client as its clientInfo name.
func relayStart(t *testing.T, db, agent, client string, args ...string) *e2eServer {
	t.Helper()
	s := startE2E(t, e2eConfig{DB: db, Agent: agent, Args: args})
	m := s.request("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": client, "version": "1"},
	})
	if m.Error != nil {
		t.Fatalf("initialize: %s", m.Error.Message)
	}
	if err := s.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitStderr waits until s has logged line.
func waitStderr(t *testing.T, s *e2eServer, line string) {
	t.Helper()
	for deadline := time.Now().Add(e2eTimeout); !strings.Contains(s.stderr.String(), line); {
		if time.Now().After(deadline) {
			t.Fatalf("%s never logged %q:\n%s", s.cfg.Agent, line, e2eTrunc(s.stderr.String(), 4000))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func relayTask(t *testing.T, s *e2eServer, title string) string {
	t.Helper()
	var out struct {
		TaskID string `json:"task_id"`
	}
	s.ok("task_create", map[string]any{"title": title, "project": "relay"}, &out)
	return out.TaskID
}

// TestRelayRecordsCallsAsTheirSender: calls another process forwards to
// the hub are recorded with that process's actor and client, its own
// skills.loaded record once, and its own options (--read-only).
func TestRelayRecordsCallsAsTheirSender(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "relay.db")
	hub := relayStart(t, db, "hub-agent", "hub-client")
	relayTask(t, hub, "the hub's own")
	waitStderr(t, hub, hubLine)
	named := relayStart(t, db, "follower-agent", "follower-client")
	unnamed := relayStart(t, db, "", "claude-code")
	reader := relayStart(t, db, "reader-agent", "reader-client", "--read-only")
	before := e2eHead(t, db)

	task := relayTask(t, named, "forwarded")
	named.ok("thought_record", map[string]any{"task_id": task, "type": "analysis", "content": "forwarded thought"}, nil)
	relayTask(t, unnamed, "forwarded, actor from the client")
	if r := reader.call("task_create", map[string]any{"title": "refused", "project": "relay"}); r.code() != "ERR_READ_ONLY" {
		t.Errorf("a --read-only follower's task_create: %s", r.Result)
	}
	var got struct {
		Title string `json:"title"`
	}
	reader.ok("task_get", map[string]any{"task_id": task}, &got)
	if got.Title != "forwarded" {
		t.Errorf("task_get through the hub: %+v", got)
	}
	for _, s := range []*e2eServer{named, unnamed, reader} {
		waitStderr(t, s, followLine)
		if strings.Contains(s.stderr.String(), hubLine) {
			t.Fatalf("%s became the hub while the first was alive", s.cfg.Agent)
		}
	}

	_, events := e2eReadLedger(t, db, before)
	type key struct{ actor, tool, client, outcome string }
	calls := map[key]int{}
	loaded := map[string]int{}
	for _, e := range events {
		switch {
		case e.Call != nil:
			if e.Call.ClientClaim != "" || len(e.Call.Token) != 0 {
				t.Errorf("seq %d: a stdio call recorded with a claim or token: %+v", e.Seq, e.Call)
			}
			calls[key{e.Actor, e.Call.Tool, e.Call.Client, e.Call.Outcome}]++
		case e.Type == "skills.loaded":
			loaded[e.Actor]++
		case e.Actor != "follower-agent" && e.Actor != "claude-code":
			t.Errorf("seq %d: %s by %s", e.Seq, e.Type, e.Actor)
		}
	}
	want := map[key]int{
		{"follower-agent", "task_create", "follower-client", "OK"}:        1,
		{"follower-agent", "thought_record", "follower-client", "OK"}:     1,
		{"claude-code", "task_create", "claude-code", "OK"}:               1,
		{"reader-agent", "task_create", "reader-client", "ERR_READ_ONLY"}: 1,
		{"reader-agent", "task_get", "reader-client", "OK"}:               1,
	}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("tool.called events:\n got %v\nwant %v", calls, want)
	}
	if fmt.Sprint(loaded) != fmt.Sprint(map[string]int{"follower-agent": 1, "claude-code": 1, "reader-agent": 1}) {
		t.Errorf("skills.loaded per actor: %v (one per process, as if each had committed its calls itself)", loaded)
	}
	for _, s := range []*e2eServer{named, unnamed, reader, hub} {
		s.closeStdin()
		if code := s.waitExit(e2eTimeout); code != 0 {
			t.Errorf("%s exited %d", s.cfg.Agent, code)
		}
	}
	e2eVerify(t, db)
}

// relayWriter records thoughts on its own task through one process, each
// with content never sent before, and keeps what it was told: the
// acknowledged thoughts, and how many answers said the outcome is unknown.
type relayWriter struct {
	srv     *e2eServer
	task    string
	sent    int
	acks    []ack
	unknown int
	other   []string
}

func (w *relayWriter) write(t *testing.T) {
	t.Helper()
	w.sent++
	r := w.srv.call("thought_record", map[string]any{"task_id": w.task, "type": "analysis", "content": fmt.Sprintf("%s step %d", w.srv.cfg.Agent, w.sent)})
	switch {
	case r.Env.OK:
		var a ack
		r.data(t, &a)
		w.acks = append(w.acks, a)
	case r.code() == "ERR_STORAGE" && strings.Contains(r.Env.Error.Message, "outcome is unknown"):
		w.unknown++
	default:
		w.other = append(w.other, string(r.Result))
	}
}

// relayHubAndWriters starts a hub on db, then n followers of it, each a
// relayWriter on its own task.
func relayHubAndWriters(t *testing.T, db string, n int) (*e2eServer, []*relayWriter) {
	t.Helper()
	hub := relayStart(t, db, "hub", "c")
	waitStderr(t, hub, hubLine)
	var ws []*relayWriter
	for i := range n {
		s := relayStart(t, db, fmt.Sprintf("follower-%d", i), "c")
		ws = append(ws, &relayWriter{srv: s, task: relayTask(t, s, "writes")})
		waitStderr(t, s, followLine)
	}
	return hub, ws
}

// relayThoughts counts the thought.recorded events per actor.
func relayThoughts(t *testing.T, db string) map[string]int {
	_, events := e2eReadLedger(t, db, 0)
	n := map[string]int{}
	for _, e := range events {
		if e.Type == "thought.recorded" {
			n[e.Actor]++
		}
	}
	return n
}

// TestRelayHubKilled: three followers write through the hub while the
// test kills the hub (SIGKILL), maybe with calls in flight. Every
// acknowledged thought is in the ledger as told and none twice; a call
// whose answer said its outcome is unknown is in it at most once (never
// retried); the followers carry on, one of them the new hub; the ledger
// verifies.
func TestRelayHubKilled(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "kill.db")
	hub, ws := relayHubAndWriters(t, db, 3)
	var wg sync.WaitGroup
	var killed sync.Once
	kill := make(chan struct{})
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40 || len(w.acks) < 5; i++ {
				if i == 20 {
					killed.Do(func() {
						hub.cmd.Process.Signal(syscall.SIGKILL)
						close(kill)
					})
				}
				if i > 20 {
					<-kill
				}
				w.write(t)
				if i > 400 {
					t.Errorf("%s: fewer than 5 acknowledged in %d calls", w.srv.cfg.Agent, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	hub.waitExit(e2eTimeout)
	// After the kill each writer is still served.
	for _, w := range ws {
		n := len(w.acks)
		w.write(t)
		if len(w.acks) != n+1 {
			t.Errorf("%s after the kill: %v", w.srv.cfg.Agent, w.other)
		}
	}
	hubs := 0
	var acks []ack
	unknown := 0
	for _, w := range ws {
		for _, o := range w.other {
			t.Errorf("%s: %s", w.srv.cfg.Agent, o)
		}
		if strings.Contains(w.srv.stderr.String(), hubLine) {
			hubs++
		}
		acks = append(acks, w.acks...)
		unknown += w.unknown
	}
	if hubs == 0 {
		t.Errorf("no follower became the hub after the kill")
	}
	for _, w := range ws {
		w.srv.closeStdin()
		if code := w.srv.waitExit(e2eTimeout); code != 0 {
			t.Errorf("%s exited %d", w.srv.cfg.Agent, code)
		}
	}
	checkAcks(t, db, acks)
	stored := relayThoughts(t, db)
	for _, w := range ws {
		n := stored[w.srv.cfg.Agent]
		if n < len(w.acks) || n > len(w.acks)+w.unknown {
			t.Errorf("%s: %d thoughts stored; %d acknowledged, %d of unknown outcome, %d sent", w.srv.cfg.Agent, n, len(w.acks), w.unknown, w.sent)
		}
	}
	t.Logf("%d acknowledged, %d of unknown outcome", len(acks), unknown)
}

// TestRelayHubStopped: the hub stopped (SIGSTOP, as ^Z in the terminal of
// the agent that started it stops its logbook serve too) does not hold the
// followers up: their calls run against the file while it is stopped —
// each answered ok, none waiting out relayAnswerWait (a minute) — and,
// once it is resumed, everyone writes again. Every acknowledged thought is
// in the ledger, none twice, and the ledger verifies.
func TestRelayHubStopped(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stopped.db")
	hub, ws := relayHubAndWriters(t, db, 2)
	for _, w := range ws {
		w.write(t) // through the hub
	}
	// Idle, the hub lets the file go within quietHold (100 ms) — on a
	// loaded machine maybe later: stopped while holding it, it would keep
	// it (which TestServeBesideStoppedHolderSaysWhy covers).
	for deadline := time.Now().Add(e2eTimeout); slices.ContainsFunc(boltstore.Holders(db), func(h boltstore.Holder) bool { return h.PID == hub.cmd.Process.Pid }); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the idle hub never let the file go")
		}
	}
	if err := hub.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The kernel stops it in its own time: a call sent before is one it
	// was handed running (answered outcome unknown, as documented).
	for deadline := time.Now().Add(e2eTimeout); !boltstore.Stopped(hub.cmd.Process.Pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hub never showed as stopped")
		}
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			hub.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	for _, w := range ws {
		for i := range 3 {
			w.sent++
			ch := w.srv.callToolAsync("thought_record", e2eJSON(t, map[string]any{"task_id": w.task, "type": "analysis", "content": fmt.Sprintf("%s while the hub is stopped %d", w.srv.cfg.Agent, i)}))
			select {
			case m := <-ch:
				r := parseE2EReply(t, "thought_record", m)
				if !r.Env.OK {
					t.Fatalf("%s, the hub stopped: %s", w.srv.cfg.Agent, r.Result)
				}
				var a ack
				r.data(t, &a)
				w.acks = append(w.acks, a)
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: a call still waits for the stopped hub after 30s", w.srv.cfg.Agent)
			}
		}
	}
	resume()
	for _, w := range ws {
		w.write(t)
	}
	var acks []ack
	for _, w := range ws {
		for _, o := range w.other {
			t.Errorf("%s: %s", w.srv.cfg.Agent, o)
		}
		if w.unknown > 0 {
			t.Errorf("%s: %d calls of unknown outcome (none was handed to the hub while it was stopped)", w.srv.cfg.Agent, w.unknown)
		}
		acks = append(acks, w.acks...)
	}
	hub.ok("server_ping", map[string]any{}, nil)
	for _, s := range append([]*e2eServer{hub}, ws[0].srv, ws[1].srv) {
		s.closeStdin()
		if code := s.waitExit(e2eTimeout); code != 0 {
			t.Errorf("%s exited %d", s.cfg.Agent, code)
		}
	}
	checkAcks(t, db, acks)
	stored := relayThoughts(t, db)
	for _, w := range ws {
		if n := stored[w.srv.cfg.Agent]; n != len(w.acks) {
			t.Errorf("%s: %d thoughts stored, %d acknowledged", w.srv.cfg.Agent, n, len(w.acks))
		}
	}
}

// TestRelayFollowerLockTimeout: a call handed to the hub waits for the
// file lock as long as its own process's --lock-timeout says, not the
// hub's: with the file held by another process, a follower at 300ms is
// answered ERR_STORAGE, nothing recorded (not outcome unknown), long before
// the hub's 2m — which, applied to it, kept it waiting a minute for an
// answer of unknown outcome (chaos review) — and writes again once the file
// is free.
func TestRelayFollowerLockTimeout(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "locktimeout.db")
	hub := relayStart(t, db, "hub", "c", "--lock-timeout", "2m")
	waitStderr(t, hub, hubLine)
	f := relayStart(t, db, "follower", "c", "--lock-timeout", "300ms")
	task := relayTask(t, f, "waits its own time")
	waitStderr(t, f, followLine)
	time.Sleep(500 * time.Millisecond) // the hub lets the file go (quietHold)
	file, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ch := f.callToolAsync("thought_record", e2eJSON(t, map[string]any{"task_id": task, "type": "analysis", "content": "while the file is held"}))
	select {
	case m := <-ch:
		r := parseE2EReply(t, "thought_record", m)
		if r.code() != "ERR_STORAGE" || !strings.Contains(string(r.Env.Error.Details), "locked") || strings.Contains(r.Env.Error.Message, "outcome is unknown") {
			t.Errorf("a follower's call while the file is held: %s", r.Result)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a follower's call at --lock-timeout 300ms still waits after 30s: the hub's 2m applied")
	}
	syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
	w := &relayWriter{srv: f, task: task}
	w.write(t)
	if len(w.acks) != 1 {
		t.Errorf("the follower once the file is free: %v", w.other)
	}
	if n := relayThoughts(t, db)["follower"]; n != 1 {
		t.Errorf("%d thoughts of the follower's in the ledger, want the one acknowledged", n)
	}
}

// TestRelayHandOver: the hub's agent ends while the followers write; the
// hub answers what it took, and the followers carry on without a single
// failed call, one of them becoming the hub.
func TestRelayHandOver(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "handover.db")
	hub, ws := relayHubAndWriters(t, db, 3)
	var wg sync.WaitGroup
	var once sync.Once
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				if i == 20 {
					once.Do(hub.closeStdin)
				}
				w.write(t)
			}
		}()
	}
	wg.Wait()
	if code := hub.waitExit(e2eTimeout); code != 0 {
		t.Errorf("the hub exited %d", code)
	}
	// Whoever needs the hub next takes it, once the old one let go: the
	// followers write on until one has (their calls meanwhile go to the
	// file).
	for deadline := time.Now().Add(e2eTimeout); ; {
		taken := false
		for _, w := range ws {
			taken = taken || strings.Contains(w.srv.stderr.String(), hubLine)
		}
		if taken || time.Now().After(deadline) {
			break
		}
		for _, w := range ws {
			w.write(t)
		}
		time.Sleep(10 * time.Millisecond)
	}
	hubs := 0
	var acks []ack
	for _, w := range ws {
		if len(w.other) > 0 || w.unknown > 0 || len(w.acks) != w.sent {
			t.Errorf("%s: %d sent, %d acknowledged, %d unknown, other answers %v", w.srv.cfg.Agent, w.sent, len(w.acks), w.unknown, w.other)
		}
		if strings.Contains(w.srv.stderr.String(), hubLine) {
			hubs++
		}
		acks = append(acks, w.acks...)
	}
	if hubs != 1 {
		t.Errorf("%d followers became the hub, want 1", hubs)
	}
	for _, w := range ws {
		w.srv.closeStdin()
		w.srv.waitExit(e2eTimeout)
	}
	checkAcks(t, db, acks)
	stored := relayThoughts(t, db)
	for _, w := range ws {
		if stored[w.srv.cfg.Agent] != len(w.acks) {
			t.Errorf("%s: %d thoughts stored, %d acknowledged", w.srv.cfg.Agent, stored[w.srv.cfg.Agent], len(w.acks))
		}
	}
}

// TestRelayStaleSocket: a socket left at <db>.relay.sock by a hub that died (no
// one listening, or a listener that is not a hub) is not followed: the
// hub lock decides, and the process that takes it replaces the socket.
func TestRelayStaleSocket(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stale.db")
	sock := server.SocketPath(db)
	// A socket file with no one listening.
	listenUnixAt(t, sock).Close()
	hub := relayStart(t, db, "hub", "c")
	relayTask(t, hub, "first")
	waitStderr(t, hub, hubLine)
	f := relayStart(t, db, "follower", "c")
	relayTask(t, f, "forwarded")
	waitStderr(t, f, followLine)
	for _, s := range []*e2eServer{f, hub} {
		s.closeStdin()
		s.waitExit(e2eTimeout)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the hub left its socket behind: %v", err)
	}
}

// TestRelayNoHubWithoutTheLock: a listener at <db>.relay.sock while the hub lock
// is free is a stale socket, never followed: the process takes the lock
// and becomes the hub, and nothing connects to the impostor.
func TestRelayNoHubWithoutTheLock(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "impostor.db")
	ln := listenUnixAt(t, server.SocketPath(db))
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	s := relayStart(t, db, "agent", "c")
	relayTask(t, s, "written to the file")
	waitStderr(t, s, hubLine)
	select {
	case <-accepted:
		t.Error("serve connected to a socket whose owner does not hold the hub lock")
	default:
	}
}

// TestRelayFallsBackToTheFile: a process the hub refuses (the hub lock
// is held here, by the test, whose listener refuses as a hub of another
// build would) runs its calls against the file.
func TestRelayFallsBackToTheFile(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "fallback.db")
	first := relayStart(t, db, "first", "c")
	relayTask(t, first, "creates the file")
	first.closeStdin()
	first.waitExit(e2eTimeout)
	lock, err := boltstore.LockHub(db)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	// A listener that refuses every hello, as a hub of another build does.
	ln := listenUnixAt(t, server.SocketPath(db))
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w, _ := json.Marshal(map[string]any{"ok": false, "reason": "another logbook build"})
			hdr := []byte{0, 0, 0, byte(len(w) + 1), 2}
			c.Write(append(hdr, w...))
			c.Close()
		}
	}()
	s := relayStart(t, db, "agent", "c")
	task := relayTask(t, s, "written to the file")
	s.ok("thought_record", map[string]any{"task_id": task, "type": "analysis", "content": "still recorded"}, nil)
	if strings.Contains(s.stderr.String(), followLine) || strings.Contains(s.stderr.String(), hubLine) {
		t.Errorf("serve followed a hub that refused it, or took a lock held elsewhere:\n%s", s.stderr.String())
	}
	s.closeStdin()
	s.waitExit(e2eTimeout)
	if n := relayThoughts(t, db)["agent"]; n != 1 {
		t.Errorf("%d thoughts stored, want 1", n)
	}
}

// listenUnixAt listens on a Unix socket at path; one past the 108 bytes of
// a socket's name (a long TMPDIR: "bind: invalid argument") is named
// through its folder's descriptor (Linux), as logbook names its own then.
// Unlinking on Close is off: the name it was bound as may be the
// descriptor's.
func listenUnixAt(t *testing.T, path string) *net.UnixListener {
	t.Helper()
	name := path
	if len(path) > 107 {
		dir, err := os.Open(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		name = fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	}
	ln, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	return ul
}

//go:build linux

package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
)

// relayProcess is one serve process's pieces, in this test process: its
// own open of the ledger file, service, edge and relay (serving or
// following only peers of uid).
type relayProcess struct {
	l     *boltstore.Store
	edge  *mcp.Server
	svc   *commands.Service
	relay *Relay
}

func startRelayProcess(t *testing.T, db, agent string, uid int) *relayProcess {
	t.Helper()
	l, err := boltstore.Open(db, boltstore.Options{Create: true, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	edge, svc, err := tools(l, t.TempDir(), "test", commands.Options{Agent: agent, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	p := &relayProcess{l: l, edge: edge, svc: svc, relay: startRelay(l, edge, svc, log, uid)}
	t.Cleanup(func() {
		p.relay.Close()
		l.Close()
	})
	return p
}

// ping forwards a server_ping call through p's relay.
func (p *relayProcess) ping() (commands.Forwarded, error) {
	return p.relay.Forward(context.Background(), commands.Forward{Name: "server_ping", Args: json.RawMessage(`{}`), Client: "c"})
}

func (p *relayProcess) isHub() bool {
	p.relay.mu.Lock()
	defer p.relay.mu.Unlock()
	return p.relay.hub != nil
}

// TestCheckPeer: SO_PEERCRED is read on both ends of a connection, and a
// peer of another uid is refused.
func TestCheckPeer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln := listenUnixAt(t, sock)
	defer ln.Close()
	c, err := dialUnix(context.Background(), sock, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, end := range []*net.UnixConn{c, s} {
		if pid, err := checkPeer(end, os.Geteuid()); err != nil || pid != os.Getpid() {
			t.Errorf("same uid: pid %d, %v; want %d", pid, err, os.Getpid())
		}
		if _, err := checkPeer(end, os.Geteuid()+1); err == nil || !strings.Contains(err.Error(), "runs as uid") {
			t.Errorf("another uid: %v", err)
		}
	}
}

// TestRelayOtherUIDs: a hub does not serve a process of another user, and
// a process does not follow a hub of another user; either way the calls
// run against the file, and nothing is forwarded.
func TestRelayOtherUIDs(t *testing.T) {
	uid := os.Geteuid()
	for _, tc := range []struct {
		name                string
		hubUID, followerUID int
	}{
		{"hub refuses", uid + 1, uid},
		{"follower refuses", uid, uid + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "l.db")
			hub := startRelayProcess(t, db, "hub", tc.hubUID)
			if !hub.isHub() {
				t.Fatal("the first process did not become the hub")
			}
			f := startRelayProcess(t, db, "follower", tc.followerUID)
			if f.isHub() {
				t.Fatal("a second hub")
			}
			_, err := f.ping()
			if !errors.Is(err, commands.ErrNotSent) {
				t.Errorf("Forward across users: %v, want ErrNotSent", err)
			}
			// The same pair, same user: forwarded.
			f.relay.mu.Lock()
			f.relay.uid, f.relay.retry = uid, time.Time{}
			f.relay.mu.Unlock()
			hub.relay.mu.Lock()
			hub.relay.uid = uid
			hub.relay.mu.Unlock()
			res, err := f.ping()
			if err != nil || !strings.HasPrefix(string(res.Reply), `{"ok":true`) {
				t.Errorf("Forward, same user: %s %v", res.Reply, err)
			}
		})
	}
}

// TestRelayMalformedFrames: a connection that sends what no follower
// sends is closed; the hub goes on serving.
func TestRelayMalformedFrames(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	hub := startRelayProcess(t, db, "hub", os.Geteuid())
	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0, 0, 0, 0, frameHello},             // a frame of no bytes
		{0xff, 0xff, 0xff, 0xff, frameHello}, // over maxFrame
		{0, 0, 0, 3, frameCall, 0, 0},
		{0, 0, 0, 2, frameHello, '{'},
	} {
		c, err := dialUnix(context.Background(), SocketPath(db), 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(junk)
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if b, err := io.ReadAll(c); (err != nil && !errors.Is(err, syscall.ECONNRESET)) || len(b) != 0 {
			t.Errorf("%q: answered %q, %v; want the connection closed", junk, b, err)
		}
		c.Close()
	}
	f := startRelayProcess(t, db, "follower", os.Geteuid())
	res, err := f.ping()
	if err != nil || !strings.HasPrefix(string(res.Reply), `{"ok":true`) {
		t.Errorf("after the junk: %s %v", res.Reply, err)
	}
	if !hub.isHub() {
		t.Error("the hub stopped being one")
	}
}

// TestReadFrameClaimsNothingUpFront: a frame's length is a claim; the
// reader holds what arrived, not what was claimed (a peer announcing a
// huge frame and sending a few bytes costs the hub those bytes), and a
// call frame past maxCallFrame is refused before any of it is read.
func TestReadFrameClaimsNothingUpFront(t *testing.T) {
	hdr := []byte{0x20, 0, 0, 0, frameReply, 1, 2, 3} // claims 512 MiB, sends 3 bytes
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := readFrame(bytes.NewReader(hdr), maxFrame)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading a 3-byte frame claiming 512 MiB allocated %d bytes", got)
	}
	big := binary.BigEndian.AppendUint32(nil, maxCallFrame+1)
	if _, _, err := readFrame(bytes.NewReader(append(big, frameCall)), maxCallFrame); err == nil || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a call frame past maxCallFrame: %v, want refused", err)
	}
	ok := append(binary.BigEndian.AppendUint32(nil, 4), frameReply, 'a', 'b', 'c')
	if kind, b, err := readFrame(bytes.NewReader(ok), maxCallFrame); err != nil || kind != frameReply || string(b) != "abc" {
		t.Errorf("a whole frame: %d %q %v", kind, b, err)
	}
}

// rawFollower connects to the hub of db and says hello as a process of
// hub's build on db would, changed by edit: the hub's welcome and the
// connection.
func rawFollower(t *testing.T, db string, hub *relayProcess, edit func(*hello)) (welcome, *net.UnixConn) {
	t.Helper()
	dev, ino, err := fileID(db)
	if err != nil {
		t.Fatal(err)
	}
	hi := hello{Proto: relayProto, Build: hub.relay.build, Dev: dev, Ino: ino, Agent: "raw", Started: time.Now().UnixNano()}
	if edit != nil {
		edit(&hi)
	}
	c, err := dialUnix(context.Background(), SocketPath(db), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b, _ := json.Marshal(hi)
	if _, err := writeFrame(c, frameHello, b); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	kind, b, err := readFrame(c, maxFrame)
	c.SetReadDeadline(time.Time{})
	var w welcome
	if err != nil || kind != frameWelcome || json.Unmarshal(b, &w) != nil {
		t.Fatalf("welcome: kind %d %q %v", kind, b, err)
	}
	return w, c
}

// TestRelayRefusesWhatFlagsWouldNot: a hello whose agent or project its
// own process's flags would have refused is refused: a guest's calls are
// recorded as its own run would record them, and that run would not have
// started.
func TestRelayRefusesWhatFlagsWouldNot(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	hub := startRelayProcess(t, db, "hub", os.Geteuid())
	for _, edit := range []func(*hello){
		func(h *hello) { h.Agent = "evil\nagent" },
		func(h *hello) { h.Agent = strings.Repeat("a", 129) },
		func(h *hello) { h.Project = "Not A Slug" },
		func(h *hello) { h.Build = "other" },
		func(h *hello) { h.Ino++ },
		func(h *hello) { h.Proto = 99 },
	} {
		var hi hello
		edit(&hi)
		if w, _ := rawFollower(t, db, hub, edit); w.OK || w.Reason == "" {
			t.Errorf("%+v: welcomed %+v", hi, w)
		}
	}
	if w, _ := rawFollower(t, db, hub, func(h *hello) { h.Project = "ok-project" }); !w.OK {
		t.Errorf("a good hello refused: %+v", w)
	}
}

// TestRelayLongPath: a ledger whose socket path is past sun_path's 108
// bytes still has a hub its followers reach.
func TestRelayLongPath(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 160 {
		dir = filepath.Join(dir, strings.Repeat("d", 40))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "l.db")
	hub := startRelayProcess(t, db, "hub", os.Geteuid())
	if !hub.isHub() {
		t.Fatal("no hub")
	}
	f := startRelayProcess(t, db, "follower", os.Geteuid())
	res, err := f.ping()
	if err != nil || !strings.HasPrefix(string(res.Reply), `{"ok":true`) {
		t.Errorf("Forward, long path: %s %v", res.Reply, err)
	}
}

// TestRelaySymlinkedLedger: processes that name one ledger file through
// different symlinks meet at one socket, beside the file itself.
func TestRelaySymlinkedLedger(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "real.db")
	link := filepath.Join(t.TempDir(), "link.db")
	startRelayProcess(t, db, "creator", os.Geteuid()).relay.Close() // creates the file
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	hub := startRelayProcess(t, link, "hub", os.Geteuid())
	if !hub.isHub() {
		t.Fatal("no hub")
	}
	if _, err := os.Lstat(SocketPath(db)); err != nil {
		t.Errorf("the socket is not beside the file: %v", err)
	}
	f := startRelayProcess(t, db, "follower", os.Geteuid())
	res, err := f.ping()
	if err != nil || !strings.HasPrefix(string(res.Reply), `{"ok":true`) {
		t.Errorf("Forward through a symlink: %s %v", res.Reply, err)
	}
}

// fakeHub takes the hub lock of db and listens on its socket like a hub,
// welcoming any follower and then doing whatever serve does with
// each connection.
func fakeHub(t *testing.T, db string, serve func(*net.UnixConn)) {
	t.Helper()
	lock, err := boltstore.LockHub(db)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listenUnix(SocketPath(db))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
		lock.Release()
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			defer c.Close()
			if _, _, err := readFrame(c, maxCallFrame); err != nil {
				continue // (a follower that gave up before its hello)
			}
			w, _ := json.Marshal(welcome{OK: true})
			writeFrame(c, frameWelcome, w)
			go serve(c)
		}
	}()
}

// TestRelayHubStopsReading: a hub that takes a call's first bytes and
// then reads nothing more (a stopped process) holds the follower's call
// up for relayAnswerWait, not for good; the call, never handed over
// whole, is not sent (it runs against the file).
func TestRelayHubStopsReading(t *testing.T) {
	defer func(w time.Duration) { relayAnswerWait = w }(relayAnswerWait)
	relayAnswerWait = 300 * time.Millisecond
	if err := forwardToDeafHub(t); !errors.Is(err, commands.ErrNotSent) {
		t.Errorf("a call the hub never read whole: %v, want ErrNotSent", err)
	}
}

// forwardToDeafHub forwards an 8 MB call to a hub that welcomes the
// follower and then reads nothing, and returns Forward's error; it fails
// the test if Forward has not returned within a minute.
func forwardToDeafHub(t *testing.T) error {
	t.Helper()
	db := filepath.Join(t.TempDir(), "l.db")
	p := startRelayProcess(t, db, "follower", os.Geteuid())
	p.relay.Close() // it was the hub: the fake one takes its place
	fakeHub(t, db, func(*net.UnixConn) {})
	r := startRelay(p.l, p.edge, p.svc, slog.New(slog.DiscardHandler), os.Geteuid())
	t.Cleanup(r.Close)
	args := json.RawMessage(`{"text":"` + strings.Repeat("x", 8<<20) + `"}`)
	got := make(chan error, 1)
	go func() {
		_, err := r.Forward(context.Background(), commands.Forward{Name: "thought_record", Args: args, Client: "c"})
		got <- err
	}()
	select {
	case err := <-got:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Forward still writing to a hub that reads nothing")
		return nil
	}
}

// TestRelayHubStopsMidCall: a hub stopped while a large call is being
// written to it (its socket's buffer full) does not hold the follower's
// calls up for relayAnswerWait: once it has been seen stopped for
// relayStall the write is given up, and the call, never handed over whole,
// is not sent (it runs against the file).
func TestRelayHubStopsMidCall(t *testing.T) {
	defer func(w, s, p time.Duration, f func(int) bool) {
		relayAnswerWait, relayStall, stopPoll, hubStopped = w, s, p, f
	}(relayAnswerWait, relayStall, stopPoll, hubStopped)
	relayAnswerWait, relayStall, stopPoll = 10*time.Minute, 100*time.Millisecond, 10*time.Millisecond
	// Running for the dial's look and the call's look before it writes;
	// stopped from then on (the fake reads nothing after its welcome).
	var looks atomic.Int32
	hubStopped = func(int) bool { return looks.Add(1) > 2 }
	if err := forwardToDeafHub(t); !errors.Is(err, commands.ErrNotSent) {
		t.Errorf("a call cut short by the hub's stop: %v, want ErrNotSent", err)
	}
	if looks.Load() <= 2 {
		t.Errorf("the call was not refused while being written (%d looks)", looks.Load())
	}
}

// TestRelayFollowerStopsReading: a follower that sends calls and reads
// none of the answers costs the hub relayAnswerWait: then the connection
// is closed (its answers cannot be written whole), and the hub goes on
// serving others.
func TestRelayFollowerStopsReading(t *testing.T) {
	defer func(w time.Duration) { relayAnswerWait = w }(relayAnswerWait)
	relayAnswerWait = 300 * time.Millisecond
	db := filepath.Join(t.TempDir(), "l.db")
	hub := startRelayProcess(t, db, "hub", os.Geteuid())
	// Each answer is a memory's history of 12 versions of 10,000
	// characters: 32 answers of 120 KB, far past what the socket holds.
	// (An unknown tool's name was echoed whole once, and made them.)
	version, _ := json.Marshal(map[string]string{"key": "k", "scope": "global", "content": strings.Repeat("n", 10000)})
	for range 12 {
		if _, err := hub.svc.Do(context.Background(), hub.edge.Call("memory_write", version, "c")); err != nil {
			t.Fatalf("memory_write: %v", err)
		}
	}
	w, c := rawFollower(t, db, hub, nil)
	if !w.OK {
		t.Fatalf("refused: %+v", w)
	}
	for id := range 32 {
		if _, err := writeFrame(c, frameCall, idFirst(uint64(id), false), lenPrefixed("memory_history"), lenPrefixed("c"), []byte(`{"key":"k","scope":"global"}`)); err != nil {
			t.Fatal(err)
		}
	}
	conns := func() int {
		hub.relay.mu.Lock()
		h := hub.relay.hub
		hub.relay.mu.Unlock()
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.conns)
	}
	for stop := time.Now().Add(30 * time.Second); conns() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(stop) {
			t.Fatal("the hub still holds the connection of a follower that reads nothing")
		}
	}
	// What it gets when it reads: whole answers, then the end (perhaps
	// in the middle of one: never another frame after a cut one).
	c.SetReadDeadline(time.Now().Add(time.Minute))
	n := 0
	for {
		kind, _, err := readFrame(c, maxFrame)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("after %d answers: %v", n, err)
			}
			break
		}
		if kind != frameReply {
			t.Fatalf("frame kind %d", kind)
		}
		n++
	}
	if n == 32 {
		t.Error("every answer went through: the socket held them all, the test proves nothing")
	}
	f := startRelayProcess(t, db, "follower", os.Geteuid())
	res, err := f.ping()
	if err != nil || !strings.HasPrefix(string(res.Reply), `{"ok":true`) {
		t.Errorf("another follower: %s %v", res.Reply, err)
	}
}

// TestRelayTooManyConnections: past maxRelayConns a connection is closed
// at once, unwelcomed; one that ends frees its place.
func TestRelayTooManyConnections(t *testing.T) {
	defer func(n int) { maxRelayConns = n }(maxRelayConns)
	maxRelayConns = 2
	db := filepath.Join(t.TempDir(), "l.db")
	hub := startRelayProcess(t, db, "hub", os.Geteuid())
	_, c1 := rawFollower(t, db, hub, nil)
	rawFollower(t, db, hub, nil)
	c, err := dialUnix(context.Background(), SocketPath(db), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dev, ino, _ := fileID(db)
	hi, _ := json.Marshal(hello{Proto: relayProto, Build: hub.relay.build, Dev: dev, Ino: ino})
	writeFrame(c, frameHello, hi)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if b, err := io.ReadAll(c); (err != nil && !errors.Is(err, syscall.ECONNRESET)) || len(b) != 0 {
		t.Errorf("a third connection: %q %v, want it closed unwelcomed", b, err)
	}
	c1.Close()
	f := startRelayProcess(t, db, "follower", os.Geteuid())
	for stop := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		f.relay.mu.Lock()
		f.relay.retry = time.Time{}
		f.relay.mu.Unlock()
		_, err := f.ping()
		if err == nil {
			break
		}
		if !errors.Is(err, commands.ErrNotSent) || time.Now().After(stop) {
			t.Fatalf("after a connection ended: %v", err)
		}
	}
}

// TestRelaySlowWelcome: while one call waits for a hub's welcome (a
// stopped hub), the process's other calls do not wait with it: they run
// against the file.
func TestRelaySlowWelcome(t *testing.T) {
	defer func(w time.Duration) { relayHandshake = w }(relayHandshake)
	relayHandshake = time.Minute
	db := filepath.Join(t.TempDir(), "l.db")
	p := startRelayProcess(t, db, "follower", os.Geteuid())
	p.relay.Close() // it was the hub: the fake one takes its place
	lock, err := boltstore.LockHub(db)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	r := startRelay(p.l, p.edge, p.svc, slog.New(slog.DiscardHandler), os.Geteuid()) // no socket yet: no hub to follow
	defer r.Close()
	ln, err := listenUnix(SocketPath(db))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r.mu.Lock()
	r.retry = time.Time{}
	r.mu.Unlock()
	helloRead, release := make(chan struct{}), make(chan struct{})
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		readFrame(c, maxCallFrame)
		close(helloRead)
		<-release // never welcomed: the follower gives up when released
	}()
	go r.Forward(context.Background(), commands.Forward{Name: "server_ping", Args: json.RawMessage(`{}`), Client: "c"})
	<-helloRead
	got := make(chan error, 1)
	go func() {
		_, err := r.Forward(context.Background(), commands.Forward{Name: "server_ping", Args: json.RawMessage(`{}`), Client: "c"})
		got <- err
	}()
	select {
	case err := <-got:
		if !errors.Is(err, commands.ErrNotSent) {
			t.Errorf("a call while another waits for the welcome: %v, want ErrNotSent", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("a call waited for another's handshake")
	}
	close(release)
}

// waitPending waits until r's link has a call waiting for its answer.
func waitPending(r *Relay) {
	for waiting := false; !waiting; time.Sleep(5 * time.Millisecond) {
		r.mu.Lock()
		if l := r.link; l != nil {
			l.mu.Lock()
			waiting = len(l.pending) > 0
			l.mu.Unlock()
		}
		r.mu.Unlock()
	}
}

// TestRelayStalledHub: while a hub answers nothing (stopped), a follower
// hands it no more calls: they run against the file, instead of waiting
// relayAnswerWait to end outcome unknown.
func TestRelayStalledHub(t *testing.T) {
	defer func(w, s time.Duration) { relayAnswerWait, relayStall = w, s }(relayAnswerWait, relayStall)
	relayAnswerWait, relayStall = 5*time.Second, time.Nanosecond
	db := filepath.Join(t.TempDir(), "l.db")
	p := startRelayProcess(t, db, "follower", os.Geteuid())
	p.relay.Close() // it was the hub: the fake one takes its place
	// The fake reads calls and answers none.
	fakeHub(t, db, func(c *net.UnixConn) { io.Copy(io.Discard, c) })
	r := startRelay(p.l, p.edge, p.svc, slog.New(slog.DiscardHandler), os.Geteuid())
	defer r.Close()
	first := make(chan error, 1)
	go func() {
		_, err := r.Forward(context.Background(), commands.Forward{Name: "server_ping", Args: json.RawMessage(`{}`), Client: "c"})
		first <- err
	}()
	waitPending(r)
	if _, err := r.Forward(context.Background(), commands.Forward{Name: "server_ping", Args: json.RawMessage(`{}`), Client: "c"}); !errors.Is(err, commands.ErrNotSent) {
		t.Errorf("a call while the hub answers nothing: %v, want ErrNotSent", err)
	}
	if err := <-first; err == nil || errors.Is(err, commands.ErrNotSent) {
		t.Errorf("the call the hub never answered: %v, want outcome unknown", err)
	}
}

// TestRelayStoppedHub: a hub whose process is stopped (SIGSTOP, ^Z)
// answers nothing until resumed. A follower hands it no call while it is
// stopped — not on the link it has, not on a new one — so they run
// against the file; a call it was handed before it stopped is answered
// outcome unknown once it has been seen stopped for relayStall, not after
// relayAnswerWait; and once resumed it is followed again. (The hub here is
// this test's own process: hubStopped is told what to say.
// cmd/logbook's TestRelayHubStopped stops a real one.)
func TestRelayStoppedHub(t *testing.T) {
	defer func(w, s, p time.Duration, f func(int) bool) {
		relayAnswerWait, relayStall, stopPoll, hubStopped = w, s, p, f
	}(relayAnswerWait, relayStall, stopPoll, hubStopped)
	// (relayStall long enough that a call just after another began to
	// wait is not refused as stalled: stopped is what refuses it.)
	relayAnswerWait, relayStall, stopPoll = 10*time.Minute, time.Second, 10*time.Millisecond
	var stopped atomic.Bool
	hubStopped = func(pid int) bool {
		if pid != os.Getpid() {
			t.Errorf("hubStopped asked of pid %d, not the hub's (%d)", pid, os.Getpid())
		}
		return stopped.Load()
	}
	db := filepath.Join(t.TempDir(), "l.db")
	p := startRelayProcess(t, db, "follower", os.Geteuid())
	p.relay.Close() // it was the hub: the fake one takes its place
	// The fake reads calls and answers none until it is "resumed".
	resumed := make(chan struct{})
	fakeHub(t, db, func(c *net.UnixConn) {
		for {
			kind, b, err := readFrame(c, maxCallFrame)
			if err != nil || kind != frameCall {
				return
			}
			<-resumed
			id, first, _, _ := readIDFirst(b)
			writeFrame(c, frameReply, idFirst(id, first), appendSeen(nil, boltstore.Seen{}), []byte("reply"))
		}
	})
	r := startRelay(p.l, p.edge, p.svc, slog.New(slog.DiscardHandler), os.Geteuid())
	defer r.Close()
	forward := func() chan error {
		got := make(chan error, 1)
		go func() {
			_, err := r.Forward(context.Background(), commands.Forward{Name: "server_ping", Args: json.RawMessage(`{}`), Client: "c"})
			got <- err
		}()
		return got
	}
	first := forward()
	waitPending(r)
	stopped.Store(true)
	if err := <-forward(); !errors.Is(err, commands.ErrNotSent) {
		t.Errorf("a call while the hub is stopped: %v, want ErrNotSent", err)
	}
	select {
	case err := <-first:
		if !errors.Is(err, errHubStopped) || errors.Is(err, commands.ErrNotSent) {
			t.Errorf("the call the hub took before it stopped: %v, want outcome unknown, the hub stopped", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a call handed to a stopped hub still waits")
	}
	// The link is gone; a new one is not made to a stopped hub.
	r.mu.Lock()
	r.retry = time.Time{}
	r.mu.Unlock()
	if err := <-forward(); !errors.Is(err, commands.ErrNotSent) {
		t.Errorf("a call to a stopped hub, connecting afresh: %v, want ErrNotSent", err)
	}
	r.mu.Lock()
	if r.link != nil {
		t.Error("a link was made to a stopped hub")
	}
	r.mu.Unlock()
	// Resumed, it is followed again.
	stopped.Store(false)
	close(resumed)
	r.mu.Lock()
	r.retry = time.Time{}
	r.mu.Unlock()
	if res, err := r.Forward(context.Background(), commands.Forward{Name: "server_ping", Args: json.RawMessage(`{}`), Client: "c"}); err != nil || string(res.Reply) != "reply" {
		t.Errorf("a call to the resumed hub: %q, %v", res.Reply, err)
	}
}

// TestRelayRefusesReplacedLedger: a follower's Store refuses a file that
// is no longer the ledger it has been using (ErrReplaced), and forwarding
// must not get around that: replaced under a follower (another ledger
// renamed or copied over it, or an older copy of it renamed over it) and
// served by a hub that opened it afresh, the file is refused by the hub
// for that follower (an older copy: older than what the hub committed for
// it), whose next call then fails as a lone process's does
// — ERR_STORAGE, replaced — and writes nothing into the file. A process
// that has seen nothing else is served.
func TestRelayRefusesReplacedLedger(t *testing.T) {
	for name, tc := range map[string]struct {
		swap func(t *testing.T, db, older, other string)
		why  string
	}{
		"another ledger renamed over it": {func(t *testing.T, db, _, other string) { rename(t, other, db) }, "id changed"},
		"another ledger copied over it":  {func(t *testing.T, db, _, other string) { copyFile(t, other, db) }, "id changed"},
		"an older copy renamed over it":  {func(t *testing.T, db, older, _ string) { rename(t, older, db) }, "went back from seq"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db, older, other := filepath.Join(dir, "l.db"), filepath.Join(dir, "older.db"), filepath.Join(dir, "other.db")
			o := startRelayProcess(t, other, "other", os.Geteuid())
			if _, err := o.ping(); !errors.Is(err, commands.ErrNotSent) { // (its own hub: runs it itself)
				t.Fatal(err)
			}
			if _, err := o.svc.Do(context.Background(), o.edge.Call("server_ping", nil, "c")); err != nil {
				t.Fatal(err)
			}
			o.relay.Close()
			o.l.Close()
			hub := startRelayProcess(t, db, "hub", os.Geteuid())
			if !hub.isHub() {
				t.Fatal("no hub")
			}
			ping := func(p *relayProcess) error {
				_, err := p.svc.Do(context.Background(), p.edge.Call("server_ping", nil, "c"))
				return err
			}
			if err := ping(hub); err != nil {
				t.Fatal(err)
			}
			f := startRelayProcess(t, db, "follower", os.Geteuid())
			forward := func() {
				t.Helper()
				if res, err := f.ping(); err != nil || !strings.HasPrefix(string(res.Reply), `{"ok":true`) {
					t.Fatalf("forwarded before the swap: %s %v", res.Reply, err)
				}
			}
			// The older copy is past what the follower's Store read at
			// open, not past what the hub committed for it: the hub's
			// replies tell it.
			forward()
			copyFile(t, db, older)
			forward()
			hub.relay.Close()
			hub.l.Close()
			tc.swap(t, db, older, other)
			hub2 := startRelayProcess(t, db, "hub2", os.Geteuid())
			if !hub2.isHub() {
				t.Fatal("no hub after the swap")
			}
			before, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}

			if _, err := dial(f.relay, os.Geteuid()); !errors.Is(err, errRefused) ||
				!strings.Contains(err.Error(), "not the follower's") || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("the follower's hello after the swap: %v, want refused: %s", err, tc.why)
			}
			if _, err := f.ping(); !errors.Is(err, commands.ErrNotSent) {
				t.Errorf("Forward after the swap: %v, want ErrNotSent", err)
			}
			err = ping(f)
			if !errors.Is(err, boltstore.ErrReplaced) || !strings.Contains(string(f.edge.Reply(nil, err)), mcp.CodeStorage) {
				t.Errorf("the follower's call after the swap: %v (%s), want %s, replaced", err, f.edge.Reply(nil, err), mcp.CodeStorage)
			}
			if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
				t.Error("the follower's call wrote into the file that replaced its ledger")
			}

			// A process that has seen only this file follows its hub.
			fresh := startRelayProcess(t, db, "fresh", os.Geteuid())
			if res, err := fresh.ping(); err != nil || !strings.HasPrefix(string(res.Reply), `{"ok":true`) {
				t.Errorf("a fresh process after the swap: %s %v", res.Reply, err)
			}
		})
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSocketNamesNeverMeet: no ledger's relay socket is another ledger's
// admin socket (with <db>.sock, the ledger x.admin's relay socket was the
// ledger x's admin socket).
func TestSocketNamesNeverMeet(t *testing.T) {
	dir := t.TempDir()
	names := []string{"x", "x.admin", "x.relay", "x.admin.relay", "x.relay.admin", "x.db", "x.db.admin"}
	admin := map[string]string{}
	for _, n := range names {
		admin[AdminSocketPath(filepath.Join(dir, n))] = n
	}
	for _, n := range names {
		if other, ok := admin[SocketPath(filepath.Join(dir, n))]; ok {
			t.Errorf("the relay socket of %s is the admin socket of %s", n, other)
		}
	}
}

package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/skills"
	"golang.org/x/sync/semaphore"
)

// The relay lets several `logbook serve` processes on one ledger file commit
// together. Taking turns at the file costs each commit a lock hand-off, a
// reopen and two fsyncs; one process committing everyone's calls puts
// them in its group commits instead. The process holding the hub lock
// (boltstore.LockHub, released by the kernel however it exits) is the hub:
// it listens on <db>.relay.sock (0600, same uid only, checked on both ends with
// SO_PEERCRED) and runs each call another process hands it through a guest
// commands.Service with that process's options, so the ledger records it as
// if that process had run it. A call goes to the hub whole (tool name, raw
// arguments, client name) and its exact reply bytes come back.
//
// Hand-over: a hub that exits cleanly stops accepting, tells each
// connection goodbye, answers every call it read, and only then lets the
// lock go; the next process to need the hub takes the lock and becomes it.
// A call sent to a hub that went away before answering is answered
// ERR_STORAGE, its outcome unknown: it is never sent again. A call that
// never reached a hub (no hub, a hub saying goodbye, a frame it never got
// whole) runs against the file as before.

// SocketPath is the relay's socket for the ledger at db: beside the file
// db names once symlinks are resolved, so that processes naming one file
// through different links meet at one socket. Its suffix differs from the
// admin socket's (AdminSocketPath): with <db>.sock, the ledger x.admin's
// relay socket was the ledger x's admin socket.
func SocketPath(db string) string { return boltstore.Beside(db, ".relay.sock") }

const (
	relayProto = 2 // 2: the hello says what the follower's Store saw, a reply what the hub's did
	// relayRetry: after failing to reach or become a hub, a process runs
	// its calls against the file for this long before trying again.
	relayRetry = 50 * time.Millisecond
	// relayDrain bounds how long a hub that exits waits for its
	// connections to say they send nothing more; calls then still waiting
	// for an answer are answered outcome unknown by their senders.
	relayDrain = 10 * time.Second
	// maxFrame bounds a reply; maxCallFrame a call, which is at most one
	// stdio message (mcp.DefaultMaxMessageBytes: the tool's name, the
	// client's and the arguments are in it) plus the frame's own fields.
	maxFrame     = 1 << 30
	maxCallFrame = mcp.DefaultMaxMessageBytes + 64<<10
)

// relayHandshake bounds the hello and the welcome. A var: tests lengthen
// it.
var relayHandshake = 5 * time.Second

// relayAnswerWait bounds how long a follower waits to hand a call over and
// for its answer, past the follower's own lock timeout (the hub may wait
// that long for the file, with the call): far past a commit. A var: tests
// shorten it.
var relayAnswerWait = time.Minute

// maxRelayConns bounds the hub's connections, handshakes included: past
// it a connection is closed at once (that process takes turns at the
// file), so no number of connections can take the hub's descriptors or
// memory from its own agent. A var: tests lower it.
var maxRelayConns = 512

// maxConnHeld bounds the bytes of one connection's calls read and not yet
// answered (each counted as at least 4 KiB), as mcp bounds a stdio
// session's (16 MiB): past it the hub reads nothing more from that
// follower until answers go out.
const maxConnHeld = 16 << 20

// Frame kinds: a frame is a 4-byte big-endian length, a kind byte and the
// payload.
const (
	frameHello   = 1 // JSON hello
	frameWelcome = 2 // JSON welcome
	frameCall    = 3 // id u64, first u8, name and client (u32 length each), arguments (the rest)
	frameReply   = 4 // id u64, first u8, the hub's ledger id (u32 length) and head (seq u64, hash), reply bytes (the rest)
	frameGoodbye = 5 // the hub takes no more calls on this connection
)

// hello is what a process following the hub says first.
type hello struct {
	Proto    int    `json:"proto"`
	Build    string `json:"build"`
	Dev      uint64 `json:"dev"`
	Ino      uint64 `json:"ino"`
	Agent    string `json:"agent"`
	Project  string `json:"project"`
	ReadOnly bool   `json:"read_only"`
	Version  string `json:"version"`
	Started  int64  `json:"started_unix_ns"`
	// LockTimeout: how long the follower's calls wait for the file lock
	// (its --lock-timeout), in ns; the hub commits them with it.
	LockTimeout int64                 `json:"lock_timeout_ns,omitempty"`
	Skills      []wireSkill           `json:"skills"`
	Skipped     []events.SkippedSkill `json:"skipped"`
	// Seen: what the follower's Store has seen of its ledger (nil if
	// nothing yet); the hub commits its calls only into that ledger, its
	// log intact up to that head.
	Seen *wireSeen `json:"seen,omitempty"`
}

// wireSeen is a boltstore.Seen.
type wireSeen struct {
	ID   []byte `json:"id"`
	Seq  uint64 `json:"seq"`
	Hash []byte `json:"hash"`
}

// wireSkill is a skills.Skill with its SHA-256 (which Skill's JSON omits).
type wireSkill struct {
	skills.Skill
	SHA256 string `json:"sha256"`
}

type welcome struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

// Relay is one `logbook serve` process's end of the relay: the hub, or a
// follower of it, or neither for now (its calls run against the file).
type Relay struct {
	l        *boltstore.Store
	db, sock string
	edge     *mcp.Server
	svc      *commands.Service
	log      *slog.Logger
	build    string
	uid      int // the only user whose processes it serves or follows

	mu      sync.Mutex
	hub     *hub  // while this process is the hub
	link    *link // while it follows one
	retry   time.Time
	warned  bool // a failure to listen was logged (once: it recurs)
	dialing bool // a call is connecting to the hub (without mu)
	closed  bool
}

// StartRelay makes svc, the service behind edge on the ledger l, run its
// calls through the hub when another process is it, and tries to become
// the hub at once. Close it before closing the ledger.
func StartRelay(l *boltstore.Store, edge *mcp.Server, svc *commands.Service, log *slog.Logger) *Relay {
	return startRelay(l, edge, svc, log, os.Geteuid())
}

// startRelay is StartRelay for a process that takes only peers of uid
// (tests pass another uid than theirs).
func startRelay(l *boltstore.Store, edge *mcp.Server, svc *commands.Service, log *slog.Logger, uid int) *Relay {
	db := l.Path()
	r := &Relay{l: l, db: db, sock: SocketPath(db), edge: edge, svc: svc, log: log, uid: uid}
	if boltstore.HubSupported {
		r.build = buildID(edge)
		r.mu.Lock()
		r.connect()
		r.mu.Unlock()
		svc.SetRemote(r)
	}
	return r
}

// buildID names what a call's outcome depends on besides the ledger: the
// binary's version and build, the tools and the projections' version. A
// hub serves only processes of the same build.
func buildID(edge *mcp.Server) string {
	h := sha256.New()
	if bi, ok := debug.ReadBuildInfo(); ok {
		io.WriteString(h, bi.String())
	}
	fmt.Fprintf(h, "\x00%d\x00", projections.Version)
	for _, t := range edge.Tools() {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", t.Name, t.InputSchema, t.OutputSchema)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Forward is commands.Remote's: f goes to the hub, if there is one and it
// is not this process.
func (r *Relay) Forward(ctx context.Context, f commands.Forward) (commands.Forwarded, error) {
	for range 2 { // a link that just said goodbye: once more, to the next hub
		r.mu.Lock()
		l := r.connect()
		r.mu.Unlock()
		if l == nil {
			break
		}
		res, err := l.call(f)
		if !errors.Is(err, commands.ErrNotSent) {
			return res, err
		}
	}
	return commands.Forwarded{}, commands.ErrNotSent
}

// connect returns the link to the hub, after becoming the hub or
// connecting to it if need be; nil when this process is the hub or no hub
// can be reached now. r.mu is held; connect lets it go while it dials.
func (r *Relay) connect() *link {
	if r.closed || r.hub != nil {
		return nil
	}
	if r.link != nil && r.link.usable() {
		return r.link
	}
	r.link = nil
	if time.Now().Before(r.retry) || r.dialing {
		return nil // (dialing: another call is reaching the hub; this one runs against the file)
	}
	lock, err := boltstore.LockHub(r.db)
	if err == nil {
		h, err := startHub(r, lock)
		if err == nil {
			r.hub = h
			r.log.Info("relay: this process is the hub; other logbook serve processes on the ledger commit through it", "socket", r.sock)
			return nil
		}
		lock.Release()
		level := slog.LevelWarn
		if r.warned {
			level = slog.LevelDebug
		}
		r.warned = true
		r.log.Log(context.Background(), level, "relay: cannot serve other processes' calls; each commits on its own", "err", err)
		r.retry = time.Now().Add(time.Second)
		return nil
	}
	if !errors.Is(err, boltstore.ErrHubTaken) {
		r.log.Debug("relay: hub lock", "err", err)
		r.retry = time.Now().Add(relayRetry)
		return nil
	}
	// Without r.mu: a hub slow to welcome (stopped: an agent suspended
	// with ^Z stops its logbook serve too) holds up this call only, not
	// every call of this process.
	r.dialing = true
	uid := r.uid
	r.mu.Unlock()
	l, err := dial(r, uid)
	r.mu.Lock()
	r.dialing = false
	if err != nil {
		r.log.Debug("relay: no hub to follow now", "err", err)
		wait := relayRetry
		if errors.Is(err, errRefused) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errHubStopped) {
			// It refuses until another process is the hub; one that did
			// not welcome in time is likely stopped.
			wait = time.Second
		}
		r.retry = time.Now().Add(wait)
		return nil
	}
	if r.closed || r.hub != nil {
		l.close()
		return nil
	}
	r.link = l
	return l
}

// Close stops forwarding; a hub stops accepting, answers what it read and
// lets the hub lock go.
func (r *Relay) Close() {
	r.mu.Lock()
	r.closed = true
	h, l := r.hub, r.link
	r.hub, r.link = nil, nil
	r.mu.Unlock()
	r.svc.SetRemote(nil)
	if l != nil {
		l.close()
	}
	if h != nil {
		h.close()
	}
}

// --- frames ---

func writeFrame(w io.Writer, kind byte, parts ...[]byte) (int, error) {
	return w.Write(frame(kind, parts...))
}

// frame is the frame of kind holding parts, one after the other.
func frame(kind byte, parts ...[]byte) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	b = append(b, kind)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// readFrame reads one frame of at most max bytes. The length is only a
// claim: the body grows as its bytes arrive, so a peer that announces a
// large frame and sends little costs what it sent.
func readFrame(r io.Reader, max uint32) (kind byte, body []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 1 || n > max {
		return 0, nil, fmt.Errorf("relay: frame of %d bytes", n)
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, int64(n-1)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[4], buf.Bytes(), nil
}

func idFirst(id uint64, first bool) []byte {
	b := binary.BigEndian.AppendUint64(nil, id)
	if first {
		return append(b, 1)
	}
	return append(b, 0)
}

func lenPrefixed(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

var errFrame = errors.New("relay: malformed frame")

// appendSeen appends a reply's ledger id and head.
func appendSeen(b []byte, s boltstore.Seen) []byte {
	b = append(binary.BigEndian.AppendUint32(b, uint32(len(s.ID))), s.ID...)
	b = binary.BigEndian.AppendUint64(b, s.Head.Seq)
	return append(b, s.Head.Hash[:]...)
}

// readSeen reads what appendSeen appended off b.
func readSeen(b []byte) (boltstore.Seen, []byte, error) {
	var s boltstore.Seen
	id, b, err := cut(b)
	if err != nil || len(b) < 8+len(ledger.Hash{}) {
		return s, nil, errFrame
	}
	s.ID, s.Head.Seq = []byte(id), binary.BigEndian.Uint64(b)
	copy(s.Head.Hash[:], b[8:])
	return s, b[8+len(ledger.Hash{}):], nil
}

// cut reads a u32-length-prefixed string off b.
func cut(b []byte) (string, []byte, error) {
	if len(b) < 4 || uint64(len(b)-4) < uint64(binary.BigEndian.Uint32(b)) {
		return "", nil, errFrame
	}
	n := binary.BigEndian.Uint32(b)
	return string(b[4 : 4+n]), b[4+n:], nil
}

func readIDFirst(b []byte) (uint64, bool, []byte, error) {
	if len(b) < 9 || b[8] > 1 {
		return 0, false, nil, errFrame
	}
	return binary.BigEndian.Uint64(b), b[8] == 1, b[9:], nil
}

// --- the follower's end ---

// link is a follower's connection to the hub.
type link struct {
	c     *net.UnixConn
	log   *slog.Logger
	store *boltstore.Store // this process's: it learns the heads the hub saw

	pid     int        // the hub's process
	mu      sync.Mutex // writes, and the fields below
	next    uint64
	pending map[uint64]chan linkResult
	closing bool // the hub said goodbye, or this process closes: send nothing more
	dead    bool
	// heard: when the hub last answered, or calls began to wait for it
	// (pending became non-empty); see stalled.
	heard time.Time
	// left: why this process left the hub, if it did (the calls still
	// waiting are told).
	left error
}

// relayStall: a hub that has answered nothing for this long while calls
// wait for it (stopped, say) is handed no more calls until it answers;
// they run against the file. A var: tests shorten it.
var relayStall = 2 * time.Second

// stalled reports whether calls wait for a hub that has not answered for
// relayStall. l.mu is held.
func (l *link) stalled() bool {
	return len(l.pending) > 0 && time.Since(l.heard) > relayStall
}

// hubStopped reports whether the hub's process, pid, is stopped (SIGSTOP,
// or ^Z in the terminal of the agent that started it): it answers nothing
// until resumed, however long that takes. A var: tests stop a hub that is
// their own process.
var hubStopped = boltstore.Stopped

// stopPoll is how often a call waiting for its answer looks whether the
// hub is stopped. A var: tests shorten it.
var stopPoll = 250 * time.Millisecond

// errHubStopped: the hub's process is stopped.
var errHubStopped = errors.New("the hub's process is stopped (SIGSTOP, or ^Z in its terminal)")

type linkResult struct {
	res commands.Forwarded
	err error
}

var (
	errHubGone = errors.New("the hub closed the connection before answering")
	errRefused = errors.New("the hub refused this process")
)

// dial connects to the hub, which must run as uid, and says hello.
func dial(r *Relay, uid int) (*link, error) {
	dev, ino, err := fileID(r.db)
	if err != nil {
		return nil, err
	}
	c, err := dialUnix(context.Background(), r.sock, relayHandshake)
	if err != nil {
		return nil, err
	}
	pid, err := checkPeer(c, uid)
	if err != nil {
		c.Close()
		return nil, err
	}
	if hubStopped(pid) {
		// (Its kernel took the connection; it would never welcome it.)
		c.Close()
		return nil, fmt.Errorf("%w: process %d", errHubStopped, pid)
	}
	g := r.svc.Guest()
	h := hello{Proto: relayProto, Build: r.build, Dev: dev, Ino: ino, Agent: g.Agent, Project: g.Project,
		ReadOnly: g.ReadOnly, Version: g.Version, Started: g.Started.UnixNano(), Skipped: g.Skipped, LockTimeout: int64(g.LockTimeout)}
	for _, sk := range g.Skills {
		h.Skills = append(h.Skills, wireSkill{sk, sk.SHA256})
	}
	// Read now, after the dial: the hub checks its file against all this
	// process has seen up to the connection.
	if seen, ok := r.l.Seen(); ok {
		h.Seen = &wireSeen{ID: seen.ID, Seq: seen.Head.Seq, Hash: seen.Head.Hash[:]}
	}
	b, err := json.Marshal(h)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Now().Add(relayHandshake))
	var w welcome
	if _, err = writeFrame(c, frameHello, b); err == nil {
		var kind byte
		kind, b, err = readFrame(c, maxCallFrame)
		switch {
		case err != nil:
		case kind != frameWelcome:
			err = errFrame
		default:
			err = json.Unmarshal(b, &w)
		}
	}
	if err == nil && !w.OK {
		err = fmt.Errorf("%w: %s", errRefused, w.Reason)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	l := &link{c: c, log: r.log, store: r.l, pid: pid, pending: make(map[uint64]chan linkResult)}
	r.log.Info("relay: committing through the hub", "socket", r.sock)
	go l.read()
	return l, nil
}

func (l *link) usable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.closing && !l.dead
}

// call sends f and waits for its answer. ErrNotSent: the hub never got
// all of f.
func (l *link) call(f commands.Forward) (commands.Forwarded, error) {
	ch := make(chan linkResult, 1)
	l.mu.Lock()
	if l.closing || l.dead || l.stalled() || hubStopped(l.pid) {
		// (stalled, stopped: a call handed to the hub would wait for it
		// to be resumed, or end outcome unknown.)
		l.mu.Unlock()
		return commands.Forwarded{}, commands.ErrNotSent
	}
	id := l.next
	l.next++
	if len(l.pending) == 0 {
		l.heard = time.Now()
	}
	l.pending[id] = ch
	b := frame(frameCall, idFirst(id, f.First), lenPrefixed(f.Name), lenPrefixed(f.Client), f.Args)
	n, err := l.send(b)
	if err != nil {
		// The rest of the stream cannot be trusted: end it. A frame the
		// hub did not get whole it never runs.
		delete(l.pending, id)
		l.dead = true
		l.c.Close()
		l.mu.Unlock()
		if n < len(b) {
			return commands.Forwarded{}, commands.ErrNotSent
		}
		return commands.Forwarded{}, err
	}
	l.mu.Unlock()
	return l.answer(ch)
}

// send writes b, a call's frame, with l.mu held (so that frames do not
// mix): a hub that stops reading cannot hold this process's calls up for
// good. It gives up after relayAnswerWait, or once the hub has been seen
// stopped for relayStall (a large call's write outlasts the look before
// it), looking every stopPoll; it returns the bytes written.
func (l *link) send(b []byte) (int, error) {
	by := time.Now().Add(relayAnswerWait)
	w := stopWatch{pid: l.pid}
	n := 0
	for {
		now := time.Now()
		l.c.SetWriteDeadline(now.Add(min(stopPoll, max(by.Sub(now), 0))))
		m, err := l.c.Write(b[n:])
		n += m
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || time.Now().After(by) {
			return n, err
		}
		if w.gone(time.Now()) {
			l.log.Warn("relay: the hub's process is stopped; leaving it", "pid", l.pid)
			return n, fmt.Errorf("%w: process %d", errHubStopped, l.pid)
		}
	}
}

// stopWatch tells, look after look, when the hub's process has been seen
// stopped for relayStall.
type stopWatch struct {
	pid   int
	since time.Time // when it was first seen stopped, since it last ran
}

// gone looks at the hub now and reports whether it has been stopped for
// relayStall.
func (w *stopWatch) gone(now time.Time) bool {
	switch {
	case !hubStopped(w.pid):
		w.since = time.Time{}
	case w.since.IsZero():
		w.since = now
	default:
		return now.Sub(w.since) >= relayStall
	}
	return false
}

// answer waits for the answer on ch. A hub that answers nothing for
// relayAnswerWait is stuck; one seen stopped for relayStall is left at
// once: the link ends, every call waiting on it is answered outcome
// unknown (the hub, resumed, may still run them), and the next calls look
// for a hub again — they run against the file meanwhile.
func (l *link) answer(ch chan linkResult) (commands.Forwarded, error) {
	wait := relayAnswerWait + l.store.LockTimeout()
	t := time.NewTimer(min(stopPoll, wait))
	defer t.Stop()
	by := time.Now().Add(wait)
	w := stopWatch{pid: l.pid}
	for {
		select {
		case r := <-ch:
			return r.res, r.err
		case now := <-t.C:
			if w.gone(now) {
				l.log.Warn("relay: the hub's process is stopped; leaving it", "pid", l.pid)
				return l.leave(ch, fmt.Errorf("%w: process %d", errHubStopped, l.pid))
			}
			if now.After(by) {
				l.log.Warn("relay: the hub did not answer in time; leaving it", "waited", wait)
				return l.leave(ch, fmt.Errorf("the hub did not answer in %v", wait))
			}
			t.Reset(min(stopPoll, max(time.Until(by), 0)))
		}
	}
}

// leave ends the link for why and returns the answer on ch: the hub's, if
// it came meanwhile, else outcome unknown.
func (l *link) leave(ch chan linkResult, why error) (commands.Forwarded, error) {
	l.mu.Lock()
	if l.left == nil {
		l.left = why
	}
	l.mu.Unlock()
	l.c.Close()
	r := <-ch
	return r.res, r.err
}

// read takes the hub's frames until the connection ends, then answers
// every call still waiting: outcome unknown.
func (l *link) read() {
	var err error
	for {
		var kind byte
		var b []byte
		kind, b, err = readFrame(l.c, maxFrame)
		if err != nil {
			break
		}
		if kind == frameGoodbye {
			l.mu.Lock()
			if !l.closing {
				l.closing = true
				l.c.CloseWrite() // nothing more comes: the hub may finish
			}
			l.mu.Unlock()
			continue
		}
		var id uint64
		var res commands.Forwarded
		if kind != frameReply {
			err = errFrame
			break
		}
		var rest []byte
		if id, res.First, rest, err = readIDFirst(b); err != nil {
			break
		}
		var seen boltstore.Seen
		if seen, res.Reply, err = readSeen(rest); err != nil {
			break
		}
		// What the hub committed for this process is what this process
		// has seen of its ledger: a file replaced later by a copy older
		// than that is refused (by the next hub's handshake, and by this
		// process's own Store).
		l.store.Saw(seen)
		l.mu.Lock()
		ch := l.pending[id]
		delete(l.pending, id)
		l.heard = time.Now()
		l.mu.Unlock()
		if ch == nil {
			err = errFrame
			break
		}
		ch <- linkResult{res: res}
	}
	l.mu.Lock()
	l.dead = true
	l.c.Close()
	if l.left != nil {
		err = l.left
	}
	n := len(l.pending)
	for id, ch := range l.pending {
		ch <- linkResult{err: fmt.Errorf("%w (%w)", errHubGone, err)}
		delete(l.pending, id)
	}
	l.mu.Unlock()
	if !errors.Is(err, io.EOF) && n > 0 {
		l.log.Warn("relay: the hub went away", "err", err)
	}
}

// close ends a follower's link: it sends nothing more and the hub answers
// what it has; the calls still waiting get their answers or, if the hub
// goes away first, outcome unknown.
func (l *link) close() {
	l.mu.Lock()
	if !l.closing && !l.dead {
		l.closing = true
		l.c.CloseWrite()
	}
	l.mu.Unlock()
}

// --- the hub's end ---

type hub struct {
	r    *Relay
	lock *boltstore.HubLock
	ln   *net.UnixListener

	mu      sync.Mutex
	conns   map[*hubConn]struct{}
	closing bool
	slots   chan struct{}  // one per connection (maxRelayConns)
	wg      sync.WaitGroup // the accept loop and the connections
}

type hubConn struct {
	c       *net.UnixConn
	closeBy atomic.Int64 // unix ns: the hub closes, no write may last past this
	mu      sync.Mutex   // writes, and broken
	broken  bool         // a write failed: a frame may be cut, nothing more is written
}

// write writes one frame, within relayAnswerWait (a follower that stops
// reading cannot hold an answer, its goroutine and the hub's close up for
// longer) and before closeBy. A write that fails may have cut its frame:
// the connection is closed, so no later frame is read as that one's rest;
// the follower's calls still waiting are then outcome unknown.
func (hc *hubConn) write(kind byte, parts ...[]byte) error {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.broken {
		return net.ErrClosed
	}
	by := time.Now().Add(relayAnswerWait)
	if cb := hc.closeBy.Load(); cb != 0 && cb < by.UnixNano() {
		by = time.Unix(0, cb)
	}
	hc.c.SetWriteDeadline(by)
	if _, err := writeFrame(hc.c, kind, parts...); err != nil {
		hc.broken = true
		hc.c.Close()
		return err
	}
	return nil
}

func startHub(r *Relay, lock *boltstore.HubLock) (*hub, error) {
	// Only the holder of the hub lock gets here: whatever socket is at the
	// path was left by a hub that is gone.
	ln, err := listenUnix(r.sock)
	if err != nil {
		return nil, fmt.Errorf("relay socket: %w", err)
	}
	h := &hub{r: r, lock: lock, ln: ln, conns: make(map[*hubConn]struct{}), slots: make(chan struct{}, maxRelayConns)}
	h.wg.Add(1)
	go h.accept()
	return h, nil
}

func (h *hub) accept() {
	defer h.wg.Done()
	for {
		c, err := h.ln.AcceptUnix()
		if err != nil {
			return // closed
		}
		select {
		case h.slots <- struct{}{}:
		default:
			h.r.log.Debug("relay: too many connections; one refused", "max", cap(h.slots))
			c.Close()
			continue
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer func() { <-h.slots }()
			defer func() {
				// Whatever a peer sends ends its connection at worst, never
				// the hub (a forwarded call's own panic is run's: ERR_INTERNAL).
				if p := recover(); p != nil {
					h.r.log.Error("relay: a connection's handling panicked; closing it", "panic", p, "stack", string(debug.Stack()))
					c.Close()
				}
			}()
			h.serve(c)
		}()
	}
}

// serve runs one follower's connection: the handshake, then its calls
// until it sends nothing more; it answers every call it read.
func (h *hub) serve(c *net.UnixConn) {
	defer c.Close()
	h.r.mu.Lock()
	uid := h.r.uid
	h.r.mu.Unlock()
	if _, err := checkPeer(c, uid); err != nil {
		h.r.log.Warn("relay: connection refused", "err", err)
		return
	}
	hc := &hubConn{c: c}
	guest, err := h.handshake(hc)
	if err != nil {
		level := slog.LevelInfo
		if errors.Is(err, io.EOF) {
			// It left before its hello: one that found this hub stopped
			// (dial), whose connection the kernel had queued.
			level = slog.LevelDebug
		}
		h.r.log.Log(context.Background(), level, "relay: a process could not follow", "err", err)
		return
	}
	defer func() {
		h.mu.Lock()
		delete(h.conns, hc)
		h.mu.Unlock()
	}()
	var calls sync.WaitGroup
	defer calls.Wait()
	held := semaphore.NewWeighted(maxConnHeld)
	for {
		kind, b, err := readFrame(c, maxCallFrame)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				h.r.log.Debug("relay: connection ended", "err", err)
			}
			return
		}
		if kind != frameCall {
			h.r.log.Warn("relay: unexpected frame", "kind", kind)
			return
		}
		id, first, rest, err := readIDFirst(b)
		var name, client string
		if err == nil {
			name, rest, err = cut(rest)
		}
		if err == nil {
			client, rest, err = cut(rest)
		}
		if err != nil {
			h.r.log.Warn("relay: malformed call", "err", err)
			return
		}
		// A call counts at least 4 KiB: tiny frames cannot pile up a
		// million goroutines (at most 4,096 calls wait per connection).
		cost := int64(max(len(b), 4<<10)) // <= maxCallFrame < maxConnHeld
		held.Acquire(context.Background(), cost)
		calls.Add(1)
		go func() {
			defer calls.Done()
			defer held.Release(cost)
			reply, stillFirst := h.run(guest, name, rest, client, first)
			seen, _ := h.r.l.Seen() // read after the call: at least its commit
			if err := hc.write(frameReply, idFirst(id, stillFirst), appendSeen(nil, seen), reply); err != nil {
				h.r.log.Debug("relay: a follower went away before its answer", "err", err)
			}
		}()
	}
}

// handshake reads the hello and answers it: the guest service for the
// follower's calls, or an error (refused).
func (h *hub) handshake(hc *hubConn) (*commands.Service, error) {
	hc.c.SetDeadline(time.Now().Add(relayHandshake))
	defer hc.c.SetDeadline(time.Time{})
	kind, b, err := readFrame(hc.c, maxCallFrame)
	if err != nil {
		return nil, err
	}
	var hi hello
	if kind != frameHello || json.Unmarshal(b, &hi) != nil {
		return nil, errFrame
	}
	g := commands.GuestOptions{Agent: hi.Agent, Project: hi.Project, ReadOnly: hi.ReadOnly, Version: hi.Version,
		Started: time.Unix(0, hi.Started), Skipped: hi.Skipped, LockTimeout: time.Duration(max(hi.LockTimeout, 0))}
	for _, sk := range hi.Skills {
		sk.Skill.SHA256 = sk.SHA256
		g.Skills = append(g.Skills, sk.Skill)
	}
	dev, ino := h.lock.File()
	var refuse string
	switch {
	case hi.Proto != relayProto:
		refuse = fmt.Sprintf("relay protocol %d, the hub speaks %d", hi.Proto, relayProto)
	case hi.Build != h.r.build:
		refuse = "another logbook build"
	case hi.Dev != dev || hi.Ino != ino:
		refuse = "another ledger file"
	case g.Check() != nil:
		// What the sender's own flags could not have been: its calls
		// would not be recorded as its own run would record them.
		refuse = g.Check().Error()
	case hi.Seen != nil:
		// The file at the path may be another ledger, or an older copy of
		// the follower's, than the follower's Store has been using (mv or
		// cp over it): its Store refuses such a file (ErrReplaced), so the
		// hub must not commit its calls into it either. Refused, the
		// follower runs its calls itself, and its Store answers.
		if len(hi.Seen.Hash) != len(ledger.Hash{}) {
			return nil, errFrame
		}
		seen := boltstore.Seen{ID: hi.Seen.ID, Head: ledger.Head{Seq: hi.Seen.Seq}}
		copy(seen.Head.Hash[:], hi.Seen.Hash)
		if err := h.r.l.CheckSeen(seen, "the follower"); errors.Is(err, boltstore.ErrReplaced) {
			refuse = fmt.Sprintf("the hub's ledger is not the follower's: %v", err)
		} else if err != nil {
			refuse = fmt.Sprintf("cannot check the hub's ledger against the follower's: %v", err)
		}
	}
	// Registered before it is welcomed, so that close says goodbye to
	// every connection it welcomed, after the welcome.
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		// No welcome: the follower tries again soon, as with no hub.
		return nil, errors.New("the hub is closing")
	}
	if refuse == "" {
		h.conns[hc] = struct{}{}
	}
	hc.mu.Lock()
	h.mu.Unlock()
	w, _ := json.Marshal(welcome{OK: refuse == "", Reason: refuse})
	_, err = writeFrame(hc.c, frameWelcome, w) // within relayHandshake
	hc.mu.Unlock()
	if err == nil && refuse != "" {
		err = errors.New(refuse)
	}
	if err != nil {
		h.mu.Lock()
		delete(h.conns, hc)
		h.mu.Unlock()
		return nil, err
	}
	return h.r.svc.NewGuest(g), nil
}

// run runs one forwarded call as the follower's edge would have.
func (h *hub) run(guest *commands.Service, name string, args []byte, client string, first bool) (reply []byte, stillFirst bool) {
	defer func() {
		if p := recover(); p != nil {
			h.r.log.Error("relay: forwarded call panicked", "tool", domain.Clip(name), "panic", p, "stack", string(debug.Stack()))
			reply, stillFirst = h.r.edge.Reply(nil, commands.ErrInternal), first
		}
	}()
	call := h.r.edge.Call(name, args, client)
	reply, stillFirst, err := guest.DoGuest(context.Background(), call, first)
	return h.r.edge.Reply(reply, err), stillFirst
}

// close stops accepting, says goodbye on every connection, waits (at most
// relayDrain) for each to send nothing more and for every call read to be
// answered, and lets the hub lock go.
func (h *hub) close() {
	h.mu.Lock()
	h.closing = true
	h.ln.Close()
	// The lock is still held: the socket is this hub's.
	os.Remove(h.r.sock)
	// No write lasts past by, on any connection, the ones under way
	// included: followers that stop reading cannot hold the hub up for
	// relayDrain each, one after the other.
	by := time.Now().Add(relayDrain)
	conns := make([]*hubConn, 0, len(h.conns))
	for hc := range h.conns {
		hc.closeBy.Store(by.UnixNano())
		hc.c.SetWriteDeadline(by)
		conns = append(conns, hc)
	}
	h.mu.Unlock()
	for _, hc := range conns {
		hc.write(frameGoodbye)
	}
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(relayDrain):
		h.r.log.Warn("relay: followers did not finish in time; closing their connections")
		h.mu.Lock()
		for hc := range h.conns {
			hc.c.CloseRead() // calls read are still answered
		}
		h.mu.Unlock()
		<-done
	}
	h.lock.Release()
}

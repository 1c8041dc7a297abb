package jetstream

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// cluster is a real NATS JetStream cluster in this process, on loopback:
// each server with its own ports and store directory, kept across restarts.
type cluster struct {
	fatal   func(...any)
	dir     string
	ports   []int // client ports
	routes  []int // cluster (route) ports
	servers []*server.Server
	opts    []*server.Options // as each server was started
	sync    string            // the jetstream sync_interval setting
}

// freePort is a loopback port nothing listens on now, outside the
// kernel's ephemeral range, and never handed out before in this process.
// A port the kernel picked (bind to port 0) and freed again can be picked
// for anyone else's socket before the server binds it: a connect from
// another test package, or a listener on port 0. A NATS server whose port
// is taken never becomes ready (it logs the error and waits), which failed
// a CI run after a minute ("server n1 not ready"). The kernel never picks
// a port outside its ephemeral range, and ports handed out here are kept
// for the life of the process (a stopped server restarts on its own).
func freePort(fatal func(...any)) int {
	portsMu.Lock()
	defer portsMu.Unlock()
	lo, hi := portsOutsideEphemeral()
	if lo == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	start := lo + rand.IntN(hi-lo)
	for k := range hi - lo {
		p := lo + (start-lo+k)%(hi-lo)
		if portsGiven[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		portsGiven[p] = true
		return p
	}
	fatal(fmt.Sprintf("no free loopback port in [%d, %d)", lo, hi))
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// portsOutsideEphemeral is a range [lo, hi) of ports below or above the
// kernel's ephemeral range (ip_local_port_range), or 0, 0 if it cannot
// tell or the range leaves too little room on both sides.
func portsOutsideEphemeral() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil {
		return 0, 0
	}
	switch {
	case first >= 12000:
		return 10000, first
	case last <= 63000:
		return last + 1, 65536
	}
	return 0, 0
}

// startCluster starts n servers (n = 1: a standalone server, no routes)
// for the test.
func startCluster(tb testing.TB, n int, sync string) *cluster {
	c := newCluster(tb.Fatal, tb.TempDir(), n, sync)
	tb.Cleanup(c.shutdown)
	return c
}

func newCluster(fatal func(...any), dir string, n int, sync string) *cluster {
	c := plannedCluster(fatal, dir, n, sync)
	for i := range n {
		c.start(i)
	}
	return c
}

// unstartedCluster is a cluster of n servers none of which is started yet
// (c.start starts one), for the test.
func unstartedCluster(tb testing.TB, n int, sync string) *cluster {
	c := plannedCluster(tb.Fatal, tb.TempDir(), n, sync)
	tb.Cleanup(c.shutdown)
	return c
}

// plannedCluster gives n servers their ports, and starts none.
func plannedCluster(fatal func(...any), dir string, n int, sync string) *cluster {
	c := &cluster{fatal: fatal, dir: dir, servers: make([]*server.Server, n), opts: make([]*server.Options, n), sync: sync}
	for range n {
		c.ports = append(c.ports, freePort(fatal))
		c.routes = append(c.routes, freePort(fatal))
	}
	return c
}

func (c *cluster) shutdown() {
	for i := range c.servers {
		c.stop(i)
	}
}

var shared struct {
	once sync.Once
	c    *cluster
	dir  string
}

// sharedCluster is one 3-node cluster (sync always) for the tests that do
// not stop servers, each on streams of its own, deleted when the test
// ends; TestMain shuts it down. (Kept, a test's streams were there for its
// next run in the process: with go test -count=2 every test on the shared
// cluster failed its second run, its events in the stream twice.)
func sharedCluster(tb testing.TB) *cluster {
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "logbook-jetstream-")
		if err != nil {
			tb.Fatal(err)
		}
		shared.dir = dir
		shared.c = newCluster(func(args ...any) { panic(fmt.Sprint(args...)) }, dir, 3, "always")
	})
	nc := shared.c.connect(tb, 0, "app")
	tb.Cleanup(func() { deleteStreams(tb, nc) }) // before nc's Close: cleanups run last first
	return shared.c
}

// deleteStreams deletes every stream of nc's account.
func deleteStreams(tb testing.TB, nc *nats.Conn) {
	tb.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang bound
	defer cancel()
	names := js.StreamNames(ctx)
	var all []string
	for name := range names.Name() {
		all = append(all, name)
	}
	if err := names.Err(); err != nil {
		tb.Fatalf("list the streams: %v", err)
	}
	for _, name := range all {
		if err := js.DeleteStream(ctx, name); err != nil {
			tb.Fatalf("delete stream %s: %v", name, err)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		shared.c.shutdown()
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// config is server i's configuration file: the one the README shows.
func (c *cluster) config(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: n%d\nlisten: 127.0.0.1:%d\n", i, c.ports[i])
	fmt.Fprintf(&b, "jetstream { store_dir: %q, sync_interval: %s }\n", filepath.Join(c.dir, fmt.Sprintf("n%d", i)), c.sync)
	if len(c.ports) > 1 {
		var routes []string
		for j, p := range c.routes {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		fmt.Fprintf(&b, "cluster { name: logbook, listen: 127.0.0.1:%d, routes: [%s] }\n", c.routes[i], strings.Join(routes, ", "))
	}
	b.WriteString(`accounts {
  SYS: { users: [{ user: sys, password: sys }] }
  APP: { jetstream: enabled, users: [{ user: app, password: app },
    { user: noturn, password: noturn, permissions: { publish: { deny: "logbook.*.turn" }, subscribe: { deny: "logbook.*.turn" } } },
    { user: noappend, password: noappend, permissions: { publish: { deny: "logbook.*.events" } } },
    { user: nodirect, password: nodirect, permissions: { publish: { deny: "$JS.API.DIRECT.GET.>" } } },
    { user: noleaderget, password: noleaderget, permissions: { publish: { deny: "$JS.API.STREAM.MSG.GET.>" } } },
    { user: noinfo, password: noinfo, permissions: { publish: { deny: "$JS.API.STREAM.INFO.>" } } },
    { user: noanswers, password: noanswers, permissions: { subscribe: { deny: "_INBOX.>" } } }] }
}
system_account: SYS
`)
	return b.String()
}

func (c *cluster) start(i int) {
	path := filepath.Join(c.dir, fmt.Sprintf("n%d.conf", i))
	if err := os.WriteFile(path, []byte(c.config(i)), 0o600); err != nil {
		c.fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		c.fatal(err)
	}
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	if err != nil {
		c.fatal(err)
	}
	c.opts[i] = opts
	log := &startLog{}
	s.SetLoggerV2(log, false, false, false)
	s.Start()
	// A bound for a wedged server, not a measure: under the whole suite's
	// -race load on two cores a server took over 10 s to listen. A server
	// that cannot listen logs it (Fatalf) and waits; that ends the wait.
	for end := time.Now().Add(time.Minute); !s.ReadyForConnections(100 * time.Millisecond); {
		if fatal := log.fatal(); fatal != "" || time.Now().After(end) {
			s.Shutdown()
			c.fatal(fmt.Sprintf("server n%d not ready: %s", i, cmp.Or(fatal, "no error logged")))
		}
	}
	c.servers[i] = s
}

// startLog keeps what a server logs at Fatalf, for start to report; the
// rest is dropped, as with no logger.
type startLog struct {
	mu     sync.Mutex
	fatals []string
}

func (l *startLog) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.fatals, "; ")
}

func (l *startLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fatals = append(l.fatals, fmt.Sprintf(format, v...))
}

func (*startLog) Noticef(string, ...any) {}
func (*startLog) Warnf(string, ...any)   {}
func (*startLog) Errorf(string, ...any)  {}
func (*startLog) Debugf(string, ...any)  {}
func (*startLog) Tracef(string, ...any)  {}

func (c *cluster) stop(i int) {
	if s := c.servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.servers[i] = nil
	}
}

// partition cuts server k off from the others (each drops its routes to
// k, k drops its routes to them, through a configuration reload, as an
// operator would) and waits until k has no route left; heal restores them.
func (c *cluster) partition(tb testing.TB, k int) {
	tb.Helper()
	for i, s := range c.servers {
		o := c.opts[i].Clone()
		o.Routes = nil
		if i != k {
			for _, u := range c.opts[i].Routes {
				if u.Port() != fmt.Sprint(c.routes[k]) {
					o.Routes = append(o.Routes, u)
				}
			}
		}
		if err := s.ReloadOptions(o); err != nil {
			tb.Fatal(err)
		}
	}
	eventually(tb, 30*time.Second, func() error {
		if n := c.servers[k].NumRoutes(); n != 0 {
			return fmt.Errorf("n%d still has %d routes", k, n)
		}
		return nil
	})
}

// awaitLeader waits until a server other than except leads stream, and
// then until that leader holds seq upTo, and returns how long after since
// each was (limit at most).
func (c *cluster) awaitLeader(account, stream string, except int, upTo uint64, limit time.Duration, since time.Time) (elected, applied time.Duration) {
	elected, applied = limit, limit
	leader := -1
	for time.Since(since) < limit {
		for i, s := range c.servers {
			if leader < 0 && i != except && s != nil && s.JetStreamIsStreamLeader(account, stream) {
				leader, elected = i, time.Since(since)
			}
		}
		if leader >= 0 && c.lastSeq(leader, account, stream) >= upTo {
			return elected, time.Since(since)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return elected, applied
}

// lastSeq is the last seq server i holds of stream (0 if it cannot tell).
func (c *cluster) lastSeq(i int, account, stream string) uint64 {
	s := c.servers[i]
	if s == nil {
		return 0
	}
	jsz, err := s.Jsz(&server.JSzOptions{Accounts: true, Streams: true})
	if err != nil {
		return 0
	}
	for _, a := range jsz.AccountDetails {
		for _, sd := range a.Streams {
			if a.Name == account && sd.Name == stream {
				return sd.State.LastSeq
			}
		}
	}
	return 0
}

// awaitSettled waits until one server leads stream and every server holds
// the same last seq of it: after a partition heals, the server that was cut
// off may for a while still answer as the leader of its stale copy.
func (c *cluster) awaitSettled(tb testing.TB, account, stream string) {
	tb.Helper()
	eventually(tb, time.Minute, func() error {
		var leaders []string
		last := map[uint64][]string{}
		for i, s := range c.servers {
			if s == nil {
				continue
			}
			if s.JetStreamIsStreamLeader(account, stream) {
				leaders = append(leaders, fmt.Sprintf("n%d", i))
			}
			jsz, err := s.Jsz(&server.JSzOptions{Accounts: true, Streams: true})
			if err != nil {
				return err
			}
			for _, a := range jsz.AccountDetails {
				for _, sd := range a.Streams {
					if sd.Name == stream {
						last[sd.State.LastSeq] = append(last[sd.State.LastSeq], fmt.Sprintf("n%d", i))
					}
				}
			}
		}
		if len(leaders) != 1 || len(last) != 1 {
			return fmt.Errorf("stream %s: leaders %v, last seqs %v", stream, leaders, last)
		}
		return nil
	})
}

func (c *cluster) heal(tb testing.TB) {
	tb.Helper()
	for i, s := range c.servers {
		if err := s.ReloadOptions(c.opts[i].Clone()); err != nil {
			tb.Fatal(err)
		}
	}
}

// index is the index of the server named name, -1 if none.
func (c *cluster) index(name string) int {
	for i := range c.ports {
		if name == fmt.Sprintf("n%d", i) {
			return i
		}
	}
	return -1
}

func (c *cluster) url(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.ports[i]) }

// connect connects as user to server i first, reconnecting for as long as
// the test runs to any server of the cluster: every server is listed, as
// an operator lists them (a server cut off from the others tells its
// clients it is the whole cluster; only the servers given stay known).
func (c *cluster) connect(tb testing.TB, i int, user string) *nats.Conn {
	return c.connectVia(tb, c.url(i), user)
}

// connectVia connects as user through url first, then as connect does.
func (c *cluster) connectVia(tb testing.TB, url, user string) *nats.Conn {
	urls := []string{url}
	for j := range c.ports {
		if u := c.url(j); u != url {
			urls = append(urls, u)
		}
	}
	// A connection attempt is given 2 s (nats.Timeout: a reconnect through
	// a stalled server moves on after it), and the first is made again
	// until one succeeds: on a loaded machine a handshake can take longer.
	var nc *nats.Conn
	eventually(tb, time.Minute, func() (err error) {
		nc, err = nats.Connect(strings.Join(urls, ","), nats.UserInfo(user, user), nats.MaxReconnects(-1),
			nats.DontRandomize(), nats.ReconnectWait(50*time.Millisecond), nats.Timeout(2*time.Second))
		return err
	})
	tb.Cleanup(nc.Close)
	return nc
}

// eventually polls cond until it holds, failing the test past limit.
func eventually(tb testing.TB, limit time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %v", limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openReplica opens stream name through nc, waiting for the cluster to
// elect its JetStream leaders first.
func openReplica(tb testing.TB, nc *nats.Conn, opts Options, h hooks) *Replica {
	tb.Helper()
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	var r *Replica
	eventually(tb, 30*time.Second, func() (err error) {
		r, err = open(context.Background(), nc, opts, h)
		return err
	})
	tb.Cleanup(func() { r.Close() })
	return r
}

// node is a logbook node: a local ledger file kept as a copy of the stream.
type node struct {
	path  string
	nc    *nats.Conn
	rep   *Replica
	store *boltstore.Store
}

// openNode opens the node's copy as logbook server does: unsynced (the
// stream is the durable log) where the system allows it.
func openNode(tb testing.TB, path string, nc *nats.Conn, rep *Replica) *node {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{Create: true, Hold: true, Replica: rep, NoSync: boltstore.NoSyncSupported()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return &node{path: path, nc: nc, rep: rep, store: s}
}

// appendEvents appends one event per subject in one Update.
func (n *node) appendEvents(actor string, subjects ...string) error {
	_, err := n.appendSeq(actor, subjects...)
	return err
}

// appendSeq appends one event per subject in one Update and returns the
// seq the first was given.
func (n *node) appendSeq(actor string, subjects ...string) (uint64, error) {
	var first uint64
	err := n.store.Update(func(tx *boltstore.Tx) error {
		for i, s := range subjects {
			r, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: actor, Subjects: []string{s}, Payload: []byte{0x80}})
			if err != nil {
				return err
			}
			if i == 0 {
				first = r.Seq
			}
		}
		return nil
	})
	return first, err
}

// catchUp brings the node's copy to the stream's head and returns it.
func (n *node) catchUp(tb testing.TB) ledger.Head {
	tb.Helper()
	info, err := n.rep.Info(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	n.rep.noteKnown(info.State.LastSeq)
	if err := n.store.Update(func(*boltstore.Tx) error { return nil }); err != nil {
		tb.Fatal(err)
	}
	var h ledger.Head
	n.store.View(func(tx *boltstore.Tx) error { h = tx.Head(); return nil })
	if h.Seq != info.State.LastSeq {
		tb.Fatalf("%s caught up to seq %d, the stream holds %d", n.path, h.Seq, info.State.LastSeq)
	}
	return h
}

// proxy forwards loopback TCP connections to a server; cut drops every
// connection through it at once, as a network failure between a client and
// its server would (the client then reconnects, through it or elsewhere);
// stall stops forwarding with every connection left open, as a server
// SIGSTOPped does (the kernel still accepts connections to it).
type proxy struct {
	l       net.Listener
	to      string
	mu      sync.Mutex
	conns   []net.Conn
	stalled chan struct{} // closed while it forwards
}

func startProxy(tb testing.TB, to string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{l: l, to: to, stalled: make(chan struct{})}
	close(p.stalled)
	tb.Cleanup(func() { l.Close(); p.resume(); p.cut() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { p.copy(out, in); out.Close() }()
			go func() { p.copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *proxy) url() string { return "nats://" + p.l.Addr().String() }

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// copy forwards what src sends to dst, holding it while the proxy stalls.
func (p *proxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.stalled
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stall stops forwarding (the connections stay open) until resume.
func (p *proxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.stalled:
		p.stalled = make(chan struct{})
	default:
	}
}

// resume forwards again, what was held first.
func (p *proxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.stalled:
	default:
		close(p.stalled)
	}
}

// setPermissions gives user the permissions p (nil: all) on every server,
// through a configuration reload, as an operator would.
func (c *cluster) setPermissions(tb testing.TB, user string, p *server.Permissions) {
	tb.Helper()
	for i, s := range c.servers {
		o := c.opts[i].Clone()
		found := false
		for _, u := range o.Users {
			if u.Username == user {
				u.Permissions, found = p, true
			}
		}
		if !found {
			tb.Fatalf("no user %s in the configuration", user)
		}
		if err := s.ReloadOptions(o); err != nil {
			tb.Fatal(err)
		}
		c.opts[i] = o
	}
}

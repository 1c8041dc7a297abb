//go:build linux

package jetstream

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/cmd/logbook-soak/ports"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

func freePort() int {
	p, err := ports.Free()
	if err != nil {
		panic(err)
	}
	return p
}

// natsProc is one nats-server process of the cluster, configured from its
// file (rewritten and reloaded by partition and heal).
type natsProc struct {
	i     int
	conf  string
	port  int
	cmd   *exec.Cmd
	alive bool
	log   *os.File
}

// cluster is three nats-server processes routed to each other, JetStream
// with sync_interval: always (each write fsynced before it is acknowledged).
type cluster struct {
	dir    string
	procs  []*natsProc
	confs  []string // each server's configuration as written
	routes []int
}

// partition rewrites the configurations so that server k has no route and
// the others none to k, and reloads them all (SIGHUP); heal restores them.
func (c *cluster) partition(k int) {
	for i, p := range c.procs {
		conf := c.confs[i]
		if i == k {
			conf = regexp.MustCompile(`routes: \[[^\]]*\]`).ReplaceAllString(conf, "routes: []")
		} else {
			conf = strings.ReplaceAll(conf, fmt.Sprintf("nats-route://127.0.0.1:%d, ", c.routes[k]), "")
			conf = strings.ReplaceAll(conf, fmt.Sprintf(", nats-route://127.0.0.1:%d", c.routes[k]), "")
		}
		os.WriteFile(p.conf, []byte(conf), 0o600)
		if p.alive {
			p.cmd.Process.Signal(syscall.SIGHUP)
		}
	}
}

func (c *cluster) heal() {
	for i, p := range c.procs {
		os.WriteFile(p.conf, []byte(c.confs[i]), 0o600)
		if p.alive {
			p.cmd.Process.Signal(syscall.SIGHUP)
		}
	}
}

// startCluster starts the three NATS servers in dir — and, with wait,
// waits until each listens — and returns them with the three logbook nodes
// on them, not started.
func startCluster(dir string, wait bool) (*cluster, []*node) {
	c := newCluster(dir)
	for i := range 3 {
		c.start(i)
	}
	if wait {
		for i := range 3 {
			c.waitListening(i)
		}
	}
	var nodes []*node
	for i := range 3 {
		nodes = append(nodes, newNode(dir, i, c.urls()))
	}
	return c, nodes
}

func newCluster(dir string) *cluster {
	c := &cluster{dir: dir}
	var ports, routes []int
	defer func() { c.routes = routes }()
	for range 3 {
		ports = append(ports, freePort())
		routes = append(routes, freePort())
	}
	for i := range 3 {
		var rs []string
		for j, p := range routes {
			if j != i {
				rs = append(rs, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		conf := fmt.Sprintf(`server_name: n%d
listen: 127.0.0.1:%d
jetstream { store_dir: %q, sync_interval: always }
cluster { name: logbook, listen: 127.0.0.1:%d, routes: [%s] }
accounts {
  SYS: { users: [{ user: sys, password: sys }] }
  APP: { jetstream: enabled, users: [{ user: app, password: app }] }
}
system_account: SYS
`, i, ports[i], filepath.Join(dir, fmt.Sprintf("js%d", i)), routes[i], strings.Join(rs, ", "))
		path := filepath.Join(dir, fmt.Sprintf("n%d.conf", i))
		os.WriteFile(path, []byte(conf), 0o600)
		c.confs = append(c.confs, conf)
		c.procs = append(c.procs, &natsProc{i: i, conf: path, port: ports[i]})
	}
	return c
}

func (c *cluster) urls() string {
	var us []string
	for _, p := range c.procs {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", p.port))
	}
	return strings.Join(us, ",")
}

func (c *cluster) start(i int) {
	p := c.procs[i]
	if p.log == nil {
		p.log, _ = os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("n%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	p.cmd = exec.Command(*natsBin, "-c", p.conf)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		panic(err)
	}
	p.alive = true
	go p.cmd.Wait()
}

func (c *cluster) kill(i int) {
	p := c.procs[i]
	if p.alive {
		p.cmd.Process.Kill()
		p.alive = false
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) signal(i int, s syscall.Signal) { c.procs[i].cmd.Process.Signal(s) }

func (c *cluster) waitListening(i int) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", c.procs[i].port))
		if err == nil {
			conn.Close()
			return
		}
	}
}

// node is one `logbook server --store nats://…` process and its file.
type node struct {
	i    int
	db   string
	port int
	args []string
	// mu orders start, kill and stop: a fault restarts a node in a
	// goroutine while the fault loop may kill it again. alive may be read
	// without it.
	mu     sync.Mutex
	cmd    *exec.Cmd
	alive  atomic.Bool
	exited chan struct{}
	log    *os.File
	starts int
}

func newNode(dir string, i int, urls string) *node {
	n := &node{i: i, db: filepath.Join(dir, fmt.Sprintf("node%d.db", i)), port: freePort()}
	n.args = []string{"server", "--db", n.db, "--listen", fmt.Sprintf("127.0.0.1:%d", n.port), "--skills", *skills,
		"--store", urls, "--stream", "ledger", "--nats-user", "app", "--nats-sys-user", "sys"}
	n.log, _ = os.OpenFile(filepath.Join(dir, fmt.Sprintf("node%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	return n
}

func (n *node) url() string { return fmt.Sprintf("http://127.0.0.1:%d/mcp", n.port) }

// start starts the node and waits for "listening" (or exit); returns the
// time it took and an error if it exited.
func (n *node) start() (time.Duration, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t0 := time.Now()
	n.cmd = exec.Command(*logbookBin, n.args...)
	n.cmd.Env = append(os.Environ(), "LOGBOOK_NATS_PASSWORD=app", "LOGBOOK_NATS_SYS_PASSWORD=sys", "LOGBOOK_DB=")
	fmt.Fprintf(n.log, "==== start %d at %s\n", n.starts, time.Now().Format("15:04:05.000"))
	n.starts++
	n.cmd.Stderr = n.log
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, _ := n.cmd.StdoutPipe()
	if err := n.cmd.Start(); err != nil {
		panic(err)
	}
	n.alive.Store(true)
	n.exited = make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		l, _ := r.ReadString('\n')
		lines <- l
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	go func() { n.cmd.Wait(); close(n.exited) }()
	select {
	case l := <-lines:
		if strings.HasPrefix(l, "listening ") {
			return time.Since(t0), nil
		}
		<-n.exited
		n.alive.Store(false)
		return time.Since(t0), fmt.Errorf("node%d exited %d before listening", n.i, n.cmd.ProcessState.ExitCode())
	case <-time.After(90 * time.Second):
		n.killLocked()
		return time.Since(t0), fmt.Errorf("node%d not listening in 90s", n.i)
	}
}

func (n *node) kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.killLocked()
}

func (n *node) killLocked() {
	if n.alive.Load() {
		n.cmd.Process.Kill()
		<-n.exited
		n.alive.Store(false)
	}
}

// pause stops the node's process for d (SIGSTOP, then SIGCONT), unless it
// is down or being started or killed; it reports whether it did.
func (n *node) pause(d time.Duration) bool {
	if !n.mu.TryLock() {
		return false
	}
	defer n.mu.Unlock()
	if !n.alive.Load() {
		return false
	}
	n.cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(d)
	n.cmd.Process.Signal(syscall.SIGCONT)
	return true
}

func (n *node) stop() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.alive.Load() {
		return -1
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(60 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
	}
	n.alive.Store(false)
	return n.cmd.ProcessState.ExitCode()
}

// runCmd runs the logbook binary to its end: its stdout, stderr and exit
// code.
func runCmd(args ...string) (string, string, int) {
	cmd := exec.Command(*logbookBin, args...)
	cmd.Env = append(os.Environ(), "LOGBOOK_DB=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); cmd.ProcessState == nil {
		return "", err.Error(), -1
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// streamLeader is the name of the stream's leader (n0, n1, n2), "" if it
// cannot be read.
func streamLeader(urls string) string {
	nc, err := nats.Connect(urls, nats.UserInfo("app", "app"), nats.Timeout(time.Second))
	if err != nil {
		return ""
	}
	defer nc.Close()
	j, _ := js.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := j.Stream(ctx, "ledger")
	if err != nil {
		return ""
	}
	info := s.CachedInfo()
	if info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}

// streamLast is the stream's last seq, as NATS reports it.
func streamLast(urls string) (uint64, error) {
	nc, err := nats.Connect(urls, nats.UserInfo("app", "app"), nats.Timeout(time.Second))
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	j, _ := js.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := j.Stream(ctx, "ledger")
	if err != nil {
		return 0, err
	}
	return s.CachedInfo().State.LastSeq, nil
}

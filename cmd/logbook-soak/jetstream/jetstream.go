//go:build linux

// Package jetstream is the replicated soak: three nats-server processes
// (sync_interval: always) and three `logbook server` nodes on one stream,
// agents writing through every node over Streamable HTTP (the go-sdk
// client), while the harness SIGKILLs and SIGSTOPs nodes and NATS servers,
// loses quorum, partitions a server by a configuration reload and wipes a
// node's copy. After a calm, every acknowledged call must be in the log
// exactly once, each refused call absent, and every node must verify and
// agree with the others and the stream on head and root.
package jetstream

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	fs         = flag.NewFlagSet("jetstream", flag.ContinueOnError)
	logbookBin = fs.String("bin", "bin/logbook", "the logbook binary")
	natsBin    = fs.String("nats", "bin/nats-server", "the nats-server binary (make bin/nats-server builds it from the module in go.mod)")
	skills     = fs.String("skills", "fixtures/skills", "the nodes' --skills folder")
	dirFlag    = fs.String("dir", "", "directory for the NATS and node files and logs (default: a new one under $TMPDIR, removed if the run passes)")
	mode       = fs.String("mode", "chaos", "chaos: agents write while faults are injected, then the checks; cold: -runs cold starts of a new cluster and its first calls")
	dur        = fs.Duration("dur", 90*time.Second, "chaos: how long faults are injected")
	agentsPer  = fs.Int("agents", 2, "chaos: agents per node")
	layout     = fs.String("layout", "", "chaos: agents per node, comma-separated, e.g. 10,10,1 (instead of -agents each)")
	seed       = fs.Uint64("seed", 0, "seed of the random choices (default: the clock); timing still varies between runs")
	noKill     = fs.Bool("nokill", false, "chaos: inject no fault")
	quorumLoss = fs.Duration("quorumloss", 0, "chaos: instead of random faults, two NATS servers (the stream leader's first) down this long")
	stopped    = fs.Bool("stopped", false, "chaos with -quorumloss: SIGSTOP the two servers rather than kill them")
	runs       = fs.Int("runs", 20, "cold: cold starts")
	waitNats   = fs.Bool("waitnats", false, "cold: start the nodes once every NATS server listens")
)

// runID is in every marker, so that a marker names its run.
var runID string

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
}

// chaos starts the cluster and the nodes, runs the agents while faults are
// injected for -dur, then a calm, and checks; it returns the exit code.
func chaos(dir string) int {
	rng := rand.New(rand.NewPCG(*seed, *seed+1))
	c, nodes := startCluster(dir, true)
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d, err := n.start(); err != nil {
				logf("node%d did not start (once more below): %v", n.i, err)
			} else {
				logf("node%d listening after %v", n.i, d.Round(time.Millisecond))
			}
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		if !n.alive.Load() {
			if _, err := n.start(); err != nil {
				logf("FATAL node%d does not start: %v", n.i, err)
				return 2
			}
		}
	}
	// tokens, issued through node0's admin socket
	var tokens []string
	nAgents := 3 * *agentsPer
	var agentNode []int
	if *layout != "" {
		for i, f := range strings.Split(*layout, ",") {
			var k int
			fmt.Sscan(f, &k)
			for range k {
				agentNode = append(agentNode, i)
			}
		}
		nAgents = len(agentNode)
	} else {
		for k := range nAgents {
			agentNode = append(agentNode, k%3)
		}
	}
	for k := range nAgents {
		out, errs, code := runCmd("token", "add", "--db", nodes[0].db, "--issuer", "op", "--agent", fmt.Sprintf("agent%d", k))
		if code != 0 {
			logf("FATAL token add: %d %s", code, errs)
			return 2
		}
		ls := strings.Split(strings.TrimSpace(out), "\n")
		tokens = append(tokens, ls[len(ls)-1])
	}
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	var agents sync.WaitGroup
	for k := range nAgents {
		agents.Add(1)
		go func() {
			defer agents.Done()
			agent(ctx, rec, nodes[agentNode[k]], tokens[k], fmt.Sprintf("agent%d", k), k)
		}()
	}
	kills := map[string]int{}
	mon := startMonitor(c, nodes, tokens, agentNode)
	end := time.Now().Add(*dur)
	if *quorumLoss > 0 {
		time.Sleep(5 * time.Second)
		l := streamLeader(c.urls())
		i := 0
		if len(l) == 2 {
			i = int(l[1] - '0')
		}
		j := (i + 1) % 3
		logf("CHAOS NATS n%d (leader %s) and n%d down for %v (stopped=%v)", i, l, j, *quorumLoss, *stopped)
		if *stopped {
			c.signal(i, syscall.SIGSTOP)
			c.signal(j, syscall.SIGSTOP)
		} else {
			c.kill(i)
			c.kill(j)
		}
		time.Sleep(*quorumLoss)
		if *stopped {
			c.signal(i, syscall.SIGCONT)
			c.signal(j, syscall.SIGCONT)
		} else {
			c.start(i)
			c.start(j)
		}
		logf("NATS back")
		time.Sleep(15 * time.Second)
		*noKill, *dur = true, 0
	}
	for !*noKill && time.Now().Before(end) {
		time.Sleep(time.Duration(2000+rng.IntN(4000)) * time.Millisecond)
		switch a := rng.IntN(14); {
		case a < 4: // kill -9 a logbook node, restart
			n := nodes[rng.IntN(3)]
			logf("CHAOS kill -9 node%d", n.i)
			n.kill()
			kills["node-kill"]++
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
			if d, err := n.start(); err != nil {
				logf("RESTART node%d failed: %v", n.i, err)
				kills["node-restart-fail"]++
				for ; err != nil && time.Now().Before(end.Add(30*time.Second)); _, err = n.start() {
					time.Sleep(time.Second)
				}
			} else {
				logf("node%d back after %v", n.i, d.Round(time.Millisecond))
			}
		case a < 7: // kill -9 a NATS server (the stream leader half of the time)
			i := rng.IntN(3)
			what := "nats-kill"
			if rng.IntN(2) == 0 {
				if l := streamLeader(c.urls()); len(l) == 2 {
					i = int(l[1] - '0')
					what = "nats-kill-leader"
				}
			}
			logf("CHAOS kill -9 NATS n%d (%s)", i, what)
			c.kill(i)
			kills[what]++
			if rng.IntN(2) == 0 {
				n := nodes[rng.IntN(3)]
				logf("CHAOS and kill -9 node%d while n%d is down", n.i, i)
				n.kill()
				kills["node-kill-during-nats-outage"]++
				if d, err := n.start(); err != nil {
					logf("RESTART node%d failed: %v", n.i, err)
					kills["node-restart-fail"]++
				} else {
					logf("node%d back after %v", n.i, d.Round(time.Millisecond))
				}
			}
			time.Sleep(time.Duration(1000+rng.IntN(5000)) * time.Millisecond)
			c.start(i)
			logf("NATS n%d restarted", i)
		case a < 9: // partition: SIGSTOP a NATS server for 5-20s
			i := rng.IntN(3)
			if rng.IntN(2) == 0 {
				if l := streamLeader(c.urls()); len(l) == 2 {
					i = int(l[1] - '0')
				}
			}
			d := time.Duration(5000+rng.IntN(15000)) * time.Millisecond
			logf("CHAOS SIGSTOP NATS n%d for %v", i, d)
			kills["nats-stop"]++
			c.signal(i, syscall.SIGSTOP)
			time.Sleep(d)
			c.signal(i, syscall.SIGCONT)
		case a >= 9 && a < 13: // partition (routes cut by a reload), or a bigger NATS fault
			switch b := rng.IntN(4); b {
			case 0, 1:
				i := rng.IntN(3)
				if l := streamLeader(c.urls()); len(l) == 2 && b == 0 {
					i = int(l[1] - '0')
				}
				d := time.Duration(8000+rng.IntN(15000)) * time.Millisecond
				logf("CHAOS partition NATS n%d for %v", i, d)
				kills["nats-partition"]++
				c.partition(i)
				time.Sleep(d)
				c.heal()
				logf("healed")
			case 2:
				i, j := rng.IntN(3), 0
				for j = rng.IntN(3); j == i; j = rng.IntN(3) {
				}
				logf("CHAOS kill -9 NATS n%d and n%d (quorum lost)", i, j)
				kills["nats-kill-two"]++
				c.kill(i)
				c.kill(j)
				time.Sleep(time.Duration(1000+rng.IntN(6000)) * time.Millisecond)
				c.start(i)
				c.start(j)
			case 3:
				logf("CHAOS kill -9 every NATS server")
				kills["nats-kill-all"]++
				for i := range 3 {
					c.kill(i)
				}
				if rng.IntN(2) == 0 {
					n := nodes[rng.IntN(3)]
					logf("CHAOS and kill -9 node%d", n.i)
					kills["node-kill"]++
					n.kill()
					time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
					for i := range 3 {
						c.start(i)
					}
					go func() {
						if _, err := n.start(); err != nil {
							logf("RESTART node%d failed: %v", n.i, err)
						}
					}()
					time.Sleep(3 * time.Second)
					continue
				}
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
				for i := range 3 {
					c.start(i)
				}
			}
		case a == 13 && rng.IntN(2) == 0: // a node's copy wiped (a new node), or killed while it catches up
			n := nodes[rng.IntN(3)]
			n.kill()
			kills["node-kill"]++
			if rng.IntN(2) == 0 {
				logf("CHAOS kill -9 node%d and wipe its copy", n.i)
				kills["node-wipe"]++
				matches, _ := filepath.Glob(n.db + "*")
				for _, m := range matches {
					os.Remove(m)
				}
			} else {
				logf("CHAOS kill -9 node%d, restart, kill -9 again soon", n.i)
			}
			n.start()
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			n.kill()
			kills["node-kill"]++
			if d, err := n.start(); err != nil {
				logf("RESTART node%d failed: %v", n.i, err)
				kills["node-restart-fail"]++
			} else {
				logf("node%d back after %v", n.i, d.Round(time.Millisecond))
			}
		default: // SIGSTOP a logbook node for a while
			n := nodes[rng.IntN(3)]
			d := time.Duration(2000+rng.IntN(8000)) * time.Millisecond
			if !n.pause(d) {
				logf("CHAOS no SIGSTOP of node%d: it is down or starting", n.i)
				continue
			}
			logf("CHAOS SIGSTOPped node%d for %v", n.i, d)
			kills["node-stop"]++
		}
	}
	if *noKill {
		time.Sleep(*dur)
	}
	calmStart := time.Now()
	logf("last fault over: calm starts")
	// calm: everything up, agents keep writing a little
	bad := 0
	for i, p := range c.procs {
		if !p.alive {
			c.start(i)
		}
	}
	for _, n := range nodes {
		if !n.alive.Load() {
			if _, err := n.start(); err != nil {
				logf("FAIL node%d does not start once the faults are over: %v", n.i, err)
				bad++
			}
		}
	}
	time.Sleep(5 * time.Second)
	cancel()
	agents.Wait()
	logf("agents stopped")
	agentsStopped := time.Now()
	mon.report(calmStart, agentsStopped, 40*time.Second)
	last, err := streamLast(c.urls())
	if err != nil {
		logf("FAIL the stream's last seq cannot be read: %v", err)
		bad++
	}
	for _, n := range nodes {
		if !n.alive.Load() {
			continue
		}
		// SIGTERM: a node drains and exits 0 (-1: killed after 60 s).
		if code := n.stop(); code != 0 {
			logf("FAIL node%d exited %d on SIGTERM (its log: %s)", n.i, code, n.log.Name())
			bad++
		}
	}
	for i := range c.procs {
		c.kill(i)
	}
	bad += check(nodes, rec, kills, last)
	if bad > 0 {
		logf("FAIL: %d failures (the lines marked FAIL above); the nodes' files and logs are in %s", bad, dir)
		return 1
	}
	logf("PASS: every check passed")
	return 0
}

// Run runs the JetStream soak with the command line's args (after
// "jetstream") and returns the exit code: 0 if every check passed, 1 if one
// failed, 2 if the run could not start.
func Run(args []string) (code int) {
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "jetstream: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	for _, f := range []struct{ path, hint string }{
		{*logbookBin, "make build writes bin/logbook; -bin names another"},
		{*natsBin, "make bin/nats-server builds it; -nats names another"},
		{*skills, "-skills names the skills folder; run from the repository's root"},
	} {
		if _, err := os.Stat(f.path); err != nil {
			fmt.Fprintf(os.Stderr, "jetstream: %v (%s)\n", err, f.hint)
			return 2
		}
	}
	if *mode != "chaos" && *mode != "cold" {
		fmt.Fprintf(os.Stderr, "jetstream: -mode %q: chaos or cold\n", *mode)
		return 2
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	runID = fmt.Sprintf("%x", *seed%0xfffff)
	dir := *dirFlag
	if dir == "" {
		d, err := os.MkdirTemp("", "logbook-soak-jetstream-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "jetstream:", err)
			return 2
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "jetstream:", err)
		return 2
	}
	logf("jetstream soak (%s): seed %d, dir %s", *mode, *seed, dir)
	if *mode == "cold" {
		code = min(cold(dir), 1)
	} else {
		code = chaos(dir)
	}
	// Not deferred: a harness that panics keeps the directory too.
	if code == 0 && *dirFlag == "" {
		os.RemoveAll(dir)
	}
	return code
}

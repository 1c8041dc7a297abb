//go:build linux

// Package stdio is the stdio soak: agents drive `logbook serve` processes
// over stdio while the harness kills them at random (SIGKILL, or stdin
// closed, SIGTERM, SIGSTOP with -kill-mode mix), optionally kills a `logbook
// server` holding the file (-server), and runs rebuild, snapshot and token add
// beside them, killing half of those mid-run (-aux). Then it checks the
// ledger against what every agent was told: each acknowledged call is in the
// log exactly once with its tool.called and that reply's result_sha256, each
// refused call left nothing, verify passes, and tasks --json equals a rebuilt
// snapshot's.
package stdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/cmd/logbook-soak/ports"
)

var (
	fs       = flag.NewFlagSet("stdio", flag.ContinueOnError)
	bin      = fs.String("bin", "bin/logbook", "the logbook binary")
	outDir   = fs.String("dir", "", "directory for the ledger, the processes' stderr and calls.json (default: a new one under $TMPDIR, removed if the run passes)")
	db       = fs.String("db", "", "the ledger the agents use (default: DIR/ledger.db)")
	db2      = fs.String("db2", "", "another path of the same ledger (a symbolic link, say) that odd-numbered agents use")
	nAgents  = fs.Int("agents", 4, "agents, each one `logbook serve` process at a time")
	inflight = fs.Int("inflight", 2, "calls in flight per serve process")
	dur      = fs.Duration("dur", 60*time.Second, "how long the agents write while processes are killed")
	killMs   = fs.Int("kill-ms", 300, "mean milliseconds between kills (0: none)")
	killMode = fs.String("kill-mode", "kill", "how an agent's process is ended: kill (SIGKILL), close (stdin), term (SIGTERM), or mix (those and SIGSTOP)")
	killEnd  = fs.Bool("kill-end", false, "SIGKILL the agents at the end instead of closing their stdin")
	withSrv  = fs.Bool("server", false, "run a `logbook server` holding the file (the serve processes commit through it) and SIGKILL it at random")
	aux      = fs.Bool("aux", true, "run rebuild (not with -server), snapshot and token add beside the agents, SIGKILLing half of them")
	extraArg = fs.String("serve-args", "", "more arguments for each `logbook serve`, space-separated")
	reboots  = fs.Int("reboots", 0, "reboots during the run, evenly spaced: every logbook process SIGKILLed at once, the next ones started in another boot (a boot id of their own; needs root); the first writer recovers the journal")
	perm     = fs.String("perm", "", "file: the ledger file made read-only (0444) and writable again every 0.5–2 s; dir: its directory (0555), read-only from the start, the ledger made with no journal; the logbook processes run as the user nobody, for whom modes count (needs root)")
	seed     = fs.Uint64("seed", 0, "seed of the random choices (default: the clock); timing still varies between runs")
	noRun    = fs.Bool("check-only", false, "run nothing: check the ledger against DIR/calls.json of an earlier run")
)

// state is what a run saves in DIR/calls.json for -check-only.
type state struct {
	Calls  []*call  `json:"calls"`
	Tokens []string `json:"tokens"` // the tokens `token add` printed
}

// call is one tools/call an agent sent and what it was told.
type call struct {
	Agent   string          `json:"agent"`
	Tool    string          `json:"tool"`
	Args    map[string]any  `json:"args"`
	Nonce   string          `json:"nonce"` // in the call's arguments, so in its events' payloads; "" for reads
	State   string          `json:"state"` // ok, err (refused by a rule), storage (ERR_STORAGE), unknown (no answer), rpcerr
	Code    string          `json:"code"`
	Text    string          `json:"text"` // the reply's text, whose SHA-256 its tool.called records
	Data    json.RawMessage `json:"data"`
	Unknown bool            `json:"outcome_unknown"` // ERR_STORAGE saying the outcome is unknown
}

// stats counts what the run did to the processes.
type stats struct {
	soft, kills, srvKills, auxKills, auxRuns, starts, reboots, unrecovered, chmods atomic.Int64
}

var st stats

var (
	mu     sync.Mutex
	calls  []*call
	tokens []string // printed by a token add that exited 0
	rng    *rand.Rand
	rngMu  sync.Mutex
)

// anomalies counts what the logbook processes did wrong during the run (an
// ERR_INTERNAL, a call read and never answered, a snapshot that does not
// verify); each is a failure of the run.
var anomalies atomic.Int64

func rnd(n int) int { rngMu.Lock(); defer rngMu.Unlock(); return rng.IntN(n) }

func logf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+f+"\n", a...)
}

func anomaly(f string, a ...any) { anomalies.Add(1); logf("FAIL "+f, a...) }

// command is the binary run with args, ended with the harness (a harness
// killed by a timeout leaves no process behind), as the user nobody with
// -perm. start (or runBin) starts it in the boot current then.
func command(args ...string) *exec.Cmd {
	c := exec.Command(*bin, args...)
	c.Env = append(os.Environ(), "LOGBOOK_DB=")
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: nobody}
	return c
}

// The logbook processes running, so that a reboot can SIGKILL them all at
// once: start registers a process (under bootMu, read), done removes it;
// a reboot holds bootMu, so that none starts meanwhile.
var (
	bootMu sync.RWMutex
	liveMu sync.Mutex
	live   = map[*exec.Cmd]func(){} // each process's kill (a serve process's marks it hard)
	liveWG sync.WaitGroup
)

// start starts c in the current boot and registers it with kill, how a
// reboot kills it (nil: SIGKILL); the caller calls done(c) once c.Wait
// returned. The boot is chosen here, under bootMu, not when c was made: a
// process made before a reboot and started after it is of the new boot.
func start(c *exec.Cmd, kill func()) error {
	bootMu.RLock()
	defer bootMu.RUnlock()
	inBoot(c)
	if err := c.Start(); err != nil {
		return err
	}
	if kill == nil {
		kill = func() { c.Process.Kill() }
	}
	liveMu.Lock()
	live[c] = kill
	liveMu.Unlock()
	liveWG.Add(1)
	return nil
}

func done(c *exec.Cmd) {
	liveMu.Lock()
	delete(live, c)
	liveMu.Unlock()
	liveWG.Done()
}

// reboot k: every logbook process SIGKILLed and reaped, none started
// meanwhile, then the next ones in boot k. A reader of the new boot must
// be refused while the journal holds commits of the old one (or pass, if
// it holds none).
func reboot(k int) {
	bootMu.Lock()
	defer bootMu.Unlock()
	liveMu.Lock()
	for _, kill := range live {
		kill()
	}
	liveMu.Unlock()
	liveWG.Wait()
	if err := newBoot(k); err != nil {
		anomaly("reboot %d: %v", k, err)
		return
	}
	st.reboots.Add(1)
	o, e, ec := runBin("verify", "--db", *db)
	switch {
	case ec == 0:
		logf("reboot %d: nothing to recover (verify passed before any writer of the new boot)", k)
	case strings.Contains(e, "journal holds commits to recover"):
		st.unrecovered.Add(1)
		logf("reboot %d: verify refused until a writer recovers, as it should: %.200s", k, strings.TrimSpace(e))
	default:
		anomaly("reboot %d: verify of the new boot, before any writer: exit %d: %s %s", k, ec, o, e)
	}
}

// proc is one logbook serve process.
type proc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	wmu  sync.Mutex
	pmu  sync.Mutex
	next int
	wait map[int]chan json.RawMessage
	dead chan struct{}
	// soft: its stdin was closed, so every call written before must be
	// answered; hard: it was also signalled (SIGKILL, SIGSTOP or SIGTERM,
	// which answers only the calls it had read), so none need be.
	soft, hard atomic.Bool
}

func startServe(agent string) (*proc, error) {
	path := *db
	if *db2 != "" && (agent[len(agent)-1]-'0')%2 == 1 {
		path = *db2
	}
	args := []string{"serve", "--db", path, "--agent", agent}
	if *extraArg != "" {
		args = append(args, strings.Fields(*extraArg)...)
	}
	c := command(args...)
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ef, err := os.OpenFile(filepath.Join(*outDir, agent+".stderr"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	c.Stderr = ef
	p := &proc{cmd: c, in: in, wait: map[int]chan json.RawMessage{}, dead: make(chan struct{})}
	if err := start(c, func() { p.hard.Store(true); c.Process.Kill() }); err != nil {
		ef.Close()
		return nil, err
	}
	st.starts.Add(1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID *int `json:"id"`
			}
			line := append([]byte(nil), sc.Bytes()...)
			if json.Unmarshal(line, &m) != nil || m.ID == nil {
				continue
			}
			p.pmu.Lock()
			ch := p.wait[*m.ID]
			delete(p.wait, *m.ID)
			p.pmu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
		c.Wait()
		done(c)
		ef.Close()
		close(p.dead)
	}()
	return p, nil
}

// errUnsent: the request could not be written (the process is gone).
var errUnsent = errors.New("unsent")

// send writes one request and waits for its answer; nil and no error when
// the process ended without answering.
func (p *proc) send(method string, params any) (json.RawMessage, error) {
	p.pmu.Lock()
	p.next++
	id := p.next
	ch := make(chan json.RawMessage, 1)
	p.wait[id] = ch
	p.pmu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	p.wmu.Lock()
	_, err = p.in.Write(append(b, '\n'))
	p.wmu.Unlock()
	if err != nil {
		return nil, errUnsent
	}
	select {
	case l := <-ch:
		return l, nil
	case <-p.dead:
		select {
		case l := <-ch:
			return l, nil
		default:
		}
		if p.soft.Load() && !p.hard.Load() && method == "tools/call" {
			anomaly("a serve process whose stdin was closed exited without answering a call written before: %.120s", b)
		}
		return nil, nil
	case <-time.After(120 * time.Second):
		anomaly("no answer in 120 s to %.120s", b)
		return nil, nil
	}
}

// agentState is what an agent believes: its tasks and their status, its
// open audit sessions, its learnings, and its current serve process.
type agentState struct {
	name     string
	mu       sync.Mutex
	tasks    []string
	status   map[string]string
	sessions []string
	learns   []string
	n        int
	p        *proc
}

var words = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basalt cobalt dune ember fjord granite harbor island jungle kelp lagoon meadow nectar orchid")

func phrase(n int) string {
	var b []string
	for range n {
		b = append(b, words[rnd(len(words))]+fmt.Sprint(rnd(1000)))
	}
	return strings.Join(b, " ")
}

var nextStatus = map[string]string{"backlog": "todo", "todo": "in_progress", "in_progress": "review", "review": "done"}

func (a *agentState) pick() (string, map[string]any, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	nonce := fmt.Sprintf("N%s-%d-%d", a.name, time.Now().UnixNano()%1e9, a.n)
	task := ""
	if len(a.tasks) > 0 {
		task = a.tasks[rnd(len(a.tasks))]
	}
	r := rnd(100)
	switch {
	case task == "" || r < 12:
		return "task_create", map[string]any{"title": "task " + nonce, "project": "crash", "labels": []string{"x"}}, nonce
	case r < 40:
		args := map[string]any{"task_id": task, "type": "analysis", "content": "thought " + nonce + " " + phrase(5)}
		if len(a.sessions) > 0 && rnd(4) == 0 {
			args["session_id"] = a.sessions[rnd(len(a.sessions))]
		}
		return "thought_record", args, nonce
	case r < 55:
		s := a.status[task]
		ns := nextStatus[s]
		if ns == "" {
			return "task_update", map[string]any{"task_id": task, "description": "desc " + nonce}, nonce
		}
		return "task_update", map[string]any{"task_id": task, "status": ns, "description": "desc " + nonce, "progress": rnd(100)}, nonce
	case r < 62:
		return "finding_record", map[string]any{"task_id": task, "category": "bug", "summary": "finding " + nonce, "files": []string{"a/b.go"}}, nonce
	case r < 67:
		args := map[string]any{"pattern": "learn " + nonce + " " + phrase(8), "context": "context " + nonce + " " + phrase(16), "project": "crash", "source_task_id": task}
		return "learning_record", args, nonce
	case r < 69 && len(a.learns) >= 2:
		i := rnd(len(a.learns))
		j := rnd(len(a.learns))
		return "learning_supersede", map[string]any{"learning_id": a.learns[i], "by": a.learns[j]}, ""
	case r < 76:
		return "memory_write", map[string]any{"key": fmt.Sprintf("k-%s-%d", strings.ToLower(a.name), rnd(4)), "scope": "project", "project": "crash", "content": "mem " + nonce}, nonce
	case r < 80:
		return "audit_session_start", map[string]any{"task_id": task, "auditor_id": "aud", "reason": "reason " + nonce, "scope": "deep"}, nonce
	case r < 83 && len(a.sessions) > 0:
		s := a.sessions[0]
		a.sessions = a.sessions[1:]
		return "merkle_finalize", map[string]any{"session_id": s}, ""
	case r < 87:
		return "task_get", map[string]any{"task_id": task, "include_thought_trail": true}, ""
	case r < 90:
		return "knowledge_search", map[string]any{"query": words[rnd(len(words))]}, ""
	case r < 93:
		return "task_list", map[string]any{"project": "crash", "limit": 5}, ""
	case r < 96:
		return "memory_read", map[string]any{"key": fmt.Sprintf("k-%s-%d", strings.ToLower(a.name), rnd(4)), "scope": "project", "project": "crash"}, ""
	default:
		return "thought_record_list", map[string]any{"task_id": task, "limit": 3, "verify_chain": true}, ""
	}
}

// learn updates what the agent believes from the call's acknowledgement.
func (a *agentState) learn(c *call) {
	if c.State != "ok" {
		return
	}
	var d struct {
		TaskID     string `json:"task_id"`
		Status     string `json:"status"`
		SessionID  string `json:"session_id"`
		LearningID string `json:"learning_id"`
	}
	json.Unmarshal(c.Data, &d)
	id := map[string]string{"task_create": d.TaskID, "task_update": d.TaskID, "audit_session_start": d.SessionID, "learning_record": d.LearningID}
	if v, ok := id[c.Tool]; ok && v == "" {
		anomaly("%s %s: an acknowledgement without its id: %.300s", c.Agent, c.Tool, c.Data)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch c.Tool {
	case "task_create":
		a.tasks = append(a.tasks, d.TaskID)
		a.status[d.TaskID] = "backlog"
	case "task_update":
		a.status[d.TaskID] = d.Status
	case "audit_session_start":
		a.sessions = append(a.sessions, d.SessionID)
	case "learning_record":
		a.learns = append(a.learns, d.LearningID)
	}
}

func (a *agentState) current() *proc { a.mu.Lock(); defer a.mu.Unlock(); return a.p }

// run keeps one serve process of the agent's going until stop, starting
// another each time one is killed.
func (a *agentState) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		p, err := startServe(a.name)
		if err != nil {
			anomaly("start serve: %v", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		a.mu.Lock()
		a.p = p
		a.mu.Unlock()
		if line, _ := p.send("initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"logbook-soak","version":"1"}}`)); line == nil {
			p.cmd.Process.Kill()
			<-p.dead
			continue
		}
		p.wmu.Lock()
		p.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
		p.wmu.Unlock()
		var wg sync.WaitGroup
		for range *inflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-p.dead:
						return
					default:
					}
					if !a.call(p) {
						return
					}
				}
			}()
		}
		wg.Wait()
		select {
		case <-stop:
			if *killEnd {
				p.hard.Store(true)
				p.cmd.Process.Kill()
			}
			p.wmu.Lock()
			p.in.Close()
			p.wmu.Unlock()
			select {
			case <-p.dead:
			case <-time.After(30 * time.Second):
				anomaly("%s's serve process did not exit within 30 s of its stdin closed", a.name)
				p.cmd.Process.Kill()
				<-p.dead
			}
			return
		default:
		}
		<-p.dead
	}
}

// call makes one call through p and records it; false if it could not be
// sent.
func (a *agentState) call(p *proc) bool {
	tool, args, nonce := a.pick()
	c := &call{Agent: a.name, Tool: tool, Args: args, Nonce: nonce}
	line, err := p.send("tools/call", map[string]any{"name": tool, "arguments": args})
	switch {
	case err != nil:
		return false
	case line == nil:
		c.State = "unknown"
	default:
		var m struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		json.Unmarshal(line, &m)
		if len(m.Result.Content) == 0 {
			anomaly("%s %s: a reply with no content: %.300s", a.name, tool, line)
			c.State = "rpcerr"
			break
		}
		c.Text = m.Result.Content[0].Text
		var env struct {
			OK    bool            `json:"ok"`
			Data  json.RawMessage `json:"data"`
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(c.Text), &env); err != nil {
			anomaly("%s %s: a reply that is not an envelope: %v: %.300s", a.name, tool, err, c.Text)
		}
		if env.OK {
			c.State, c.Code, c.Data = "ok", "OK", env.Data
			break
		}
		c.Code, c.State = env.Error.Code, "err"
		switch c.Code {
		case "ERR_STORAGE":
			c.State = "storage"
			c.Unknown = strings.Contains(c.Text, "unknown")
		case "ERR_INTERNAL":
			anomaly("%s %s: %.300s", a.name, tool, c.Text)
		}
	}
	a.learn(c)
	mu.Lock()
	calls = append(calls, c)
	mu.Unlock()
	return true
}

// the logbook server of -server
var (
	srvMu   sync.Mutex
	srvCmd  *exec.Cmd
	srvDead chan struct{}
)

func startServer() error {
	port, err := ports.Free()
	if err != nil {
		return err
	}
	c := command("server", "--db", *db, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	ef, err := os.OpenFile(filepath.Join(*outDir, "server.stderr"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	c.Stderr, c.Stdout = ef, ef
	if err := start(c, nil); err != nil {
		ef.Close()
		return fmt.Errorf("start logbook server: %w", err)
	}
	d := make(chan struct{})
	go func() { c.Wait(); done(c); ef.Close(); close(d) }()
	srvMu.Lock()
	srvCmd, srvDead = c, d
	srvMu.Unlock()
	return nil
}

// runAux runs rebuild, snapshot or token add every 0.2–1 s until stop,
// SIGKILLing half of those still running after a random 0–0.4 s. A snapshot
// that completed must verify; a token add that completed must be in the log.
// Their stderr goes to DIR/aux.stderr.
func runAux(stop <-chan struct{}) {
	auxLog, err := os.OpenFile(filepath.Join(*outDir, "aux.stderr"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		anomaly("aux.stderr: %v", err)
		return
	}
	defer auxLog.Close()
	for i := 1; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(200+rnd(800)) * time.Millisecond):
		}
		var args []string
		kind := rnd(3)
		if *withSrv && kind == 0 {
			kind = 1 // rebuild is refused while the server holds the file
		}
		snap := filepath.Join(*outDir, fmt.Sprintf("snap-%d.db", i))
		switch kind {
		case 0:
			args = []string{"rebuild", "--db", *db}
		case 1:
			args = []string{"snapshot", "--db", *db, "--out", snap}
		case 2:
			args = []string{"token", "add", "--db", *db, "--agent", fmt.Sprintf("tok-%d", i)}
		}
		c := command(args...)
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, io.MultiWriter(&errb, auxLog)
		if err := start(c, nil); err != nil {
			anomaly("start %s: %v", args[0], err)
			continue
		}
		st.auxRuns.Add(1)
		exited := make(chan error, 1)
		go func() { exited <- c.Wait(); done(c) }()
		killed := false
		select {
		case <-exited:
		case <-time.After(time.Duration(rnd(400)) * time.Millisecond):
			if rnd(2) == 0 {
				c.Process.Signal(syscall.SIGKILL)
				killed = true
				st.auxKills.Add(1)
			}
			<-exited
		}
		if killed || c.ProcessState.ExitCode() == -1 { // -1: killed by a reboot
			os.Remove(snap)
			continue
		}
		if ec := c.ProcessState.ExitCode(); ec != 0 {
			// Refusals while another process holds the file are expected.
			// So are those of a file or directory made read-only (-perm).
			if s := errb.String(); !strings.Contains(s, "lock") && !strings.Contains(s, "held") && (*perm == "" || !strings.Contains(s, "permission denied")) {
				logf("NOTE %s exit %d: %s", args[0], ec, strings.TrimSpace(s))
			}
			continue
		}
		switch kind {
		case 1:
			if o, e, ec := runBin("verify", "--db", snap); ec != 0 {
				anomaly("snapshot %s does not verify: exit %d: %s %s", snap, ec, o, e)
			} else {
				os.Remove(snap)
			}
		case 2:
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			mu.Lock()
			tokens = append(tokens, lines[len(lines)-1])
			mu.Unlock()
		}
	}
}

// Run runs the stdio soak with the command line's args (after "stdio") and
// returns the exit code: 0 if every check passed, 1 if one failed, 2 if the
// run could not start.
func Run(args []string) (code int) {
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "stdio: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	rng = rand.New(rand.NewPCG(*seed, 7))
	if _, err := os.Stat(*bin); err != nil {
		fmt.Fprintf(os.Stderr, "stdio: %v (make build writes bin/logbook; -bin names another)\n", err)
		return 2
	}
	made := *outDir == ""
	if made {
		d, err := os.MkdirTemp("", "logbook-soak-stdio-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "stdio:", err)
			return 2
		}
		*outDir = d
	} else if err := os.MkdirAll(*outDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "stdio:", err)
		return 2
	}
	code = soak()
	// Not deferred: a harness that panics keeps the directory too.
	if code == 0 && made {
		os.RemoveAll(*outDir)
	}
	return code
}

// soak runs the soak (or only its checks, -check-only) in the directory
// set up and returns the exit code.
func soak() int {
	if *db == "" {
		*db = filepath.Join(*outDir, "ledger.db")
	}
	if *perm != "" {
		if err := setupPerm(); err != nil {
			fmt.Fprintln(os.Stderr, "stdio:", err)
			return 2
		}
	}
	if *reboots > 0 {
		if err := checkBoot(); err != nil {
			fmt.Fprintln(os.Stderr, "stdio:", err)
			return 2
		}
	}
	statePath := filepath.Join(*outDir, "calls.json")
	if *noRun {
		b, err := os.ReadFile(statePath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "stdio:", err)
			return 2
		}
		var s state
		if err := json.Unmarshal(b, &s); err != nil {
			fmt.Fprintf(os.Stderr, "stdio: %s: %v\n", statePath, err)
			return 2
		}
		calls, tokens = s.Calls, s.Tokens
		// The check of a run with reboots is of the same machine, in its
		// last boot: in the machine's, a reader is rightly refused the
		// commits a process of that boot left in the journal.
		if k := lastBoot(); k > 0 {
			if err := checkBoot(); err != nil {
				fmt.Fprintf(os.Stderr, "stdio: the run had reboots: %v\n", err)
				return 2
			}
			bootFile.Store(filepath.Join(*outDir, fmt.Sprintf("boot-%d", k)))
		}
		return check()
	}
	logf("stdio soak: seed %d, dir %s, %d agents for %v, kills every ~%d ms (%s), server %v, aux %v, reboots %d, perm %q",
		*seed, *outDir, *nAgents, *dur, *killMs, *killMode, *withSrv, *aux, *reboots, *perm)
	if *perm == "dir" {
		if err := dirFirst(); err != nil {
			fmt.Fprintln(os.Stderr, "stdio:", err)
			return 2
		}
	}
	if *withSrv {
		if err := startServer(); err != nil {
			fmt.Fprintln(os.Stderr, "stdio:", err)
			return 2
		}
	}
	stop := make(chan struct{})
	var agents []*agentState
	var wg sync.WaitGroup
	for i := range *nAgents {
		a := &agentState{name: fmt.Sprintf("agent%d", i), status: map[string]string{}}
		agents = append(agents, a)
		wg.Add(1)
		go func() { defer wg.Done(); a.run(stop) }()
	}
	var auxWG sync.WaitGroup
	if *aux {
		auxWG.Add(1)
		go func() { defer auxWG.Done(); runAux(stop) }()
	}
	if *perm != "" {
		auxWG.Add(1)
		go func() { defer auxWG.Done(); togglePerm(stop) }()
	}
	t0, booted := time.Now(), 0
	for end := t0.Add(*dur); time.Now().Before(end); {
		if booted < *reboots && time.Since(t0) >= time.Duration(booted+1)**dur/time.Duration(*reboots+1) {
			booted++
			reboot(booted)
			if *withSrv {
				srvMu.Lock()
				d := srvDead
				srvMu.Unlock()
				<-d
				if err := startServer(); err != nil {
					anomaly("%v", err)
				}
			}
			continue
		}
		if *killMs == 0 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		time.Sleep(time.Duration(rnd(2**killMs)) * time.Millisecond)
		if *withSrv && rnd(5) == 0 {
			killServer()
			continue
		}
		if p := agents[rnd(len(agents))].current(); p != nil {
			endProc(p)
		}
	}
	close(stop)
	wg.Wait()
	auxWG.Wait()
	if *withSrv {
		srvMu.Lock()
		if *killEnd {
			srvCmd.Process.Signal(syscall.SIGKILL)
		} else {
			srvCmd.Process.Signal(syscall.SIGTERM)
		}
		<-srvDead
		srvMu.Unlock()
	}
	b, err := json.Marshal(state{Calls: calls, Tokens: tokens})
	if err == nil {
		err = os.WriteFile(statePath, b, 0o644)
	}
	if err != nil {
		logf("FAIL saving the calls: %v", err)
		return 1
	}
	return check()
}

// killServer SIGKILLs the logbook server and starts another after up to
// 0.3 s.
func killServer() {
	srvMu.Lock()
	c, d := srvCmd, srvDead
	srvMu.Unlock()
	c.Process.Signal(syscall.SIGKILL)
	<-d
	st.srvKills.Add(1)
	time.Sleep(time.Duration(rnd(300)) * time.Millisecond)
	for {
		err := startServer()
		if err == nil {
			return
		}
		anomaly("%v", err)
		time.Sleep(time.Second)
	}
}

// endProc ends an agent's serve process as -kill-mode says.
func endProc(p *proc) {
	m := *killMode
	if m == "mix" {
		m = []string{"kill", "kill", "close", "term", "stop"}[rnd(5)]
	}
	switch m {
	case "kill":
		p.hard.Store(true)
		p.cmd.Process.Signal(syscall.SIGKILL)
		st.kills.Add(1)
	case "close":
		p.soft.Store(true)
		p.wmu.Lock()
		p.in.Close()
		p.wmu.Unlock()
		st.soft.Add(1)
	case "stop":
		p.hard.Store(true)
		p.cmd.Process.Signal(syscall.SIGSTOP)
		st.kills.Add(1)
		go func() {
			time.Sleep(time.Duration(rnd(3000)) * time.Millisecond)
			if rnd(2) == 0 {
				p.cmd.Process.Signal(syscall.SIGKILL)
			} else {
				p.cmd.Process.Signal(syscall.SIGCONT)
			}
		}()
	case "term":
		p.hard.Store(true)
		p.cmd.Process.Signal(syscall.SIGTERM)
		st.soft.Add(1)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServerManyAgents: 16 agents over HTTP (the three protocol revisions
// mixed) and 4 through stdio bridges work at once on one server, with
// audit_verify_chain, and logbook snapshot then verify of the copy, running
// alongside. Every call is answered, ids are
// unique, every event's actor is its caller's token agent, and the chain
// verifies afterwards.
func TestServerManyAgents(t *testing.T) {
	t.Parallel()
	const httpAgents, bridges, rounds = 16, 4, 8
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)
	protos := []string{"2025-06-18", "2025-11-25", ""}

	type work struct {
		agent string
		tasks []string
		calls int
	}
	results := make([]work, httpAgents+bridges)
	var wg sync.WaitGroup
	for i := range httpAgents {
		name := fmt.Sprintf("http-%02d", i)
		token, _ := addToken(t, db, "--agent", name)
		cs, err := connectHTTP(t, s.url, token, "claims-to-be-root", protos[i%3])
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			w := &results[i]
			w.agent = name
			for r := range rounds {
				id, n, err := agentRound(func(tool string, args any) (json.RawMessage, error) {
					env, err := callHTTP(cs, tool, args)
					if err == nil && !env.OK {
						err = fmt.Errorf("%s: %s", tool, env.Error.Code)
					}
					return env.Data, err
				}, name, r)
				w.calls += n
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				w.tasks = append(w.tasks, id)
			}
		})
	}
	for i := range bridges {
		name := fmt.Sprintf("bridge-%d", i)
		token, _ := addToken(t, db, "--agent", name)
		a := startAgentEnv(t, "bridged-client", []string{"LOGBOOK_BRIDGE_TOKEN=" + token},
			"--connect", s.url, "--token-env", "LOGBOOK_BRIDGE_TOKEN")
		wg.Go(func() {
			w := &results[httpAgents+i]
			w.agent = name
			for r := range rounds {
				id, n, err := agentRound(func(tool string, args any) (json.RawMessage, error) {
					env, err := a.callTool(tool, args)
					if err != nil {
						return nil, err
					}
					if ok, _ := env["ok"].(bool); !ok {
						return nil, fmt.Errorf("%s: %v", tool, env["error"])
					}
					return json.Marshal(env["data"])
				}, name, r)
				w.calls += n
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				w.tasks = append(w.tasks, id)
			}
		})
	}
	// An auditor verifying the chain while the agents write.
	auditToken, _ := addToken(t, db, "--agent", "auditor", "--read-only")
	auditor, err := connectHTTP(t, s.url, auditToken, "auditor", "")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var audits atomic.Int64
	var auditWG sync.WaitGroup
	auditWG.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			var v struct {
				ChainValid bool `json:"chain_valid"`
			}
			mustOK(t, auditor, "audit_verify_chain", map[string]any{}, &v)
			if !v.ChainValid {
				t.Errorf("audit_verify_chain under load: chain not valid")
			}
			audits.Add(1)
		}
	})
	// An operator copying the held ledger (through the server's admin
	// socket) and verifying the copy offline, while the agents write.
	snap := filepath.Join(t.TempDir(), "snap.db")
	if r := run(t, "snapshot", "--db", db, "--out", snap, "--json"); r.code != 0 {
		t.Errorf("snapshot beside the server: %v", r)
	} else {
		e2eVerify(t, snap)
	}
	wg.Wait()
	close(stop)
	auditWG.Wait()
	if code := s.stop(); code != 0 {
		t.Fatalf("server exited %d:\n%s", code, s.stderr.String())
	}

	e2eVerify(t, db)
	_, events := e2eReadLedger(t, db, 0)
	calls, seen := int(audits.Load()), map[string]string{}
	for _, w := range results {
		calls += w.calls
		if len(w.tasks) != rounds {
			t.Errorf("%s finished %d rounds of %d", w.agent, len(w.tasks), rounds)
		}
		for _, id := range w.tasks {
			if other, dup := seen[id]; dup {
				t.Errorf("task id %s given to %s and %s", id, other, w.agent)
			}
			seen[id] = w.agent
		}
	}
	recorded := 0
	for _, e := range events {
		if e.Call != nil {
			recorded++
		}
		if e.Type == "task.created" && seen[e.Subject[0]] != e.Actor {
			t.Errorf("%s created by %q, answered to %q", e.Subject[0], e.Actor, seen[e.Subject[0]])
		}
	}
	if recorded != calls {
		t.Errorf("%d tool.called events, %d calls answered", recorded, calls)
	}
}

// agentRound is one unit of an agent's work: a task taken to review with a
// thought on it; it returns the task id and the number of calls made.
func agentRound(call func(tool string, args any) (json.RawMessage, error), name string, round int) (string, int, error) {
	data, err := call("task_create", map[string]any{"title": fmt.Sprintf("%s round %d", name, round), "project": "load"})
	if err != nil {
		return "", 1, err
	}
	var task struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(data, &task); err != nil || task.TaskID == "" {
		return "", 1, fmt.Errorf("task_create data %s: %v", data, err)
	}
	steps := []struct {
		tool string
		args map[string]any
	}{
		{"thought_record", map[string]any{"task_id": task.TaskID, "type": "plan", "content": "the plan of " + name}},
		{"task_update", map[string]any{"task_id": task.TaskID, "status": "todo"}},
		{"task_update", map[string]any{"task_id": task.TaskID, "status": "in_progress", "progress": 50}},
		{"task_get", map[string]any{"task_id": task.TaskID, "include_thought_trail": true}},
	}
	for i, st := range steps {
		if _, err := call(st.tool, st.args); err != nil {
			return "", 2 + i, err
		}
	}
	return task.TaskID, 1 + len(steps), nil
}

// killRounds is how many times TestServerKill9 kills the server:
// LOGBOOK_SOAK_ROUNDS if set, else 25 with LOGBOOK_SOAK=1 (make soak), else 3.
func killRounds(t *testing.T) int {
	if v := os.Getenv("LOGBOOK_SOAK_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LOGBOOK_SOAK_ROUNDS=%q", v)
		}
		return n
	}
	if os.Getenv("LOGBOOK_SOAK") == "1" {
		return 25
	}
	return 3
}

// TestServerKill9 kills the server with SIGKILL at a random point under
// load from 8 clients, round after round on one ledger: clients get an
// error rather than hang, every call acknowledged before the kill is in the
// ledger after a restart, and the chain verifies.
func TestServerKill9(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	rounds := killRounds(t)
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 9))
	acked := map[string]string{} // task id → title
	var mu sync.Mutex
	var token string
	for round := range rounds {
		s := startHTTPServer(t, db)
		if token == "" {
			token, _ = addToken(t, db, "--agent", "crash-test")
		}
		killAt := int64(5 + rng.IntN(60))
		var acks atomic.Int64
		var killOnce sync.Once
		var wg sync.WaitGroup
		clients := make([]*sdk.ClientSession, 8)
		for c := range clients {
			cs, err := connectHTTP(t, s.url, token, "crasher", []string{"2025-11-25", ""}[c%2])
			if err != nil {
				t.Fatalf("round %d: connect: %v\n%s", round, err, s.stderr.String())
			}
			clients[c] = cs
		}
		for c, cs := range clients {
			wg.Go(func() {
				for i := 0; ; i++ {
					title := fmt.Sprintf("r%d c%d n%d", round, c, i)
					env, err := callHTTP(cs, "task_create", map[string]any{"title": title, "project": "crash"})
					if err != nil {
						return // the server is gone: a clean error, not a hang
					}
					if !env.OK {
						t.Errorf("round %d: task_create: %s", round, env.Error.Code)
						return
					}
					var task struct {
						TaskID string `json:"task_id"`
					}
					json.Unmarshal(env.Data, &task)
					mu.Lock()
					if _, dup := acked[task.TaskID]; dup {
						t.Errorf("task id %s acknowledged twice", task.TaskID)
					}
					acked[task.TaskID] = title
					mu.Unlock()
					if acks.Add(1) == killAt {
						killOnce.Do(s.kill)
					}
				}
			})
		}
		wg.Wait()
		s.kill()
	}
	// The restarted server answers, and the ledger holds every acked call.
	s := startHTTPServer(t, db)
	cs, err := connectHTTP(t, s.url, token, "after", "")
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, cs, "server_ping", map[string]any{}, nil)
	s.stop()
	e2eVerify(t, db)
	_, events := e2eReadLedger(t, db, 0)
	created := map[string]bool{}
	for _, e := range events {
		if e.Type == "task.created" {
			created[e.Subject[0]] = true
		}
	}
	lost := 0
	for id, title := range acked {
		if !created[id] {
			lost++
			t.Errorf("acknowledged %s (%q) is not in the ledger", id, title)
		}
	}
	t.Logf("%d rounds, %d acknowledged calls, %d lost, %d tasks in the ledger", rounds, len(acked), lost, len(created))
	if len(acked) < rounds {
		t.Errorf("only %d calls acknowledged in %d rounds: the load did not run", len(acked), rounds)
	}
}

// TestServerDrain: SIGTERM under load from 16 clients answers every call
// the server took and exits 0: the calls recorded are exactly the calls
// acknowledged.
func TestServerDrain(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)
	token, _ := addToken(t, db, "--agent", "drainer")
	var acks atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	codes := make(chan int, 1)
	// Every client connects before any calls: the stop comes after the
	// 100th answer, which on a fast machine came before the last clients
	// had connected (their initialize then met the drain: EOF).
	var clients []*sdk.ClientSession
	for c := range 16 {
		cs, err := connectHTTP(t, s.url, token, "drain", []string{"2025-06-18", ""}[c%2])
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cs)
	}
	for _, cs := range clients {
		wg.Go(func() {
			for {
				env, err := callHTTP(cs, "server_ping", map[string]any{})
				if err != nil {
					return
				}
				if !env.OK {
					t.Errorf("server_ping: %s", env.Error.Code)
					return
				}
				if acks.Add(1) == 100 {
					once.Do(func() { go func() { codes <- s.stop() }() })
				}
			}
		})
	}
	wg.Wait()
	if code := <-codes; code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, s.stderr.String())
	}
	if !strings.Contains(s.stderr.String(), "draining") {
		t.Errorf("no drain logged:\n%s", s.stderr.String())
	}
	_, events := e2eReadLedger(t, db, 0)
	recorded := 0
	for _, e := range events {
		if e.Call != nil {
			recorded++
		}
	}
	if recorded != int(acks.Load()) {
		t.Errorf("%d calls recorded, %d acknowledged: a call was taken and not answered", recorded, acks.Load())
	}
}

// TestBridgeServerGone: a bridge whose server dies answers the next call
// with a JSON-RPC error (not a hang, not a made-up result), and a bridge
// that cannot reach or is refused by its server exits 2 with the reason.
func TestBridgeServerGone(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)
	token, _ := addToken(t, db, "--agent", "bridged")
	a := startAgentEnv(t, "host", []string{"LB_T=" + token}, "--connect", s.url, "--token-env", "LB_T")
	if env, err := a.callTool("server_ping", map[string]any{}); err != nil || env["ok"] != true {
		t.Fatalf("through the bridge: %v %v", env, err)
	}
	s.kill()
	if env, err := a.callTool("server_ping", map[string]any{}); err == nil || !strings.Contains(err.Error(), "JSON-RPC error") {
		t.Errorf("server gone: %v %v, want a JSON-RPC error", env, err)
	}
	a.close()

	r := runEnv(t, []string{"LB_T=" + token}, "serve", "--connect", s.url, "--token-env", "LB_T")
	if r.code != 2 || !strings.Contains(r.stderr, "connect to "+s.url) {
		t.Errorf("no server: %v", r)
	}
	s2 := startHTTPServer(t, db)
	r = runEnv(t, []string{"LB_T=lbk_wrong"}, "serve", "--connect", s2.url, "--token-env", "LB_T")
	if r.code != 2 || !strings.Contains(r.stderr, "refused the bridge's token (401") {
		t.Errorf("bad token: %v", r)
	}
	if r := run(t, "serve", "--connect", s2.url, "--token-env", "LB_UNSET_VAR"); r.code != 2 || !strings.Contains(r.stderr, "LB_UNSET_VAR") {
		t.Errorf("no token: %v", r)
	}
	if r := runEnv(t, []string{"LB_T=" + token}, "serve", "--connect", s2.url, "--token-env", "LB_T", "--agent", "x"); r.code != 2 {
		t.Errorf("--agent with --connect: %v", r)
	}
}

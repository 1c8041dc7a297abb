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
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// The crash-and-fault suite: agents write while the test kills them, fills
// the disk or holds the ledger's lock. Each test checks that every reply an
// agent acknowledged is in the ledger with the same seq and hash, and that
// the ledger verifies. `make test` runs it short; `make soak` sets
// LOGBOOK_SOAK=1 and runs it long.

func soak() bool { return os.Getenv("LOGBOOK_SOAK") != "" }

// ack is an acknowledged thought_record: what the agent was told.
type ack struct {
	ThoughtID string `json:"thought_id"`
	Hash      string `json:"hash"`
	Seq       uint64 `json:"seq"`
}

// checkAcks verifies the ledger at db and checks every ack is in it as told.
func checkAcks(t *testing.T, db string, acks []ack) {
	t.Helper()
	wantExit(t, run(t, "verify", "--db", db), 0, "verify after the faults")
	l, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seen := map[uint64]bool{}
	err = l.View(func(tx *boltstore.Tx) error {
		for _, a := range acks {
			if seen[a.Seq] {
				t.Errorf("seq %d acknowledged twice", a.Seq)
			}
			seen[a.Seq] = true
			r, err := tx.Event(a.Seq)
			if err != nil {
				t.Errorf("acknowledged %s at seq %d: %v", a.ThoughtID, a.Seq, err)
				continue
			}
			if r.Hash.String() != a.Hash || r.Type != "thought.recorded" || len(r.Subjects) == 0 || r.Subjects[0] != a.ThoughtID {
				t.Errorf("acknowledged %s at seq %d with hash %s; the ledger has %s %v %s", a.ThoughtID, a.Seq, a.Hash, r.Type, r.Subjects, r.Hash)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writer is one agent recording thoughts on its own task through one serve
// process after another: when its process dies, it starts a new one.
type writer struct {
	t    *testing.T
	db   string
	name string
	args []string

	mu   sync.Mutex
	srv  *e2eServer
	acks []ack
}

func (w *writer) current() *e2eServer {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.srv
}

// run writes until stop is closed. Calls the process did not answer
// (killed) are not acknowledged; answers other than OK and ERR_STORAGE fail
// the test.
func (w *writer) run(stop <-chan struct{}) {
	var task string
	for {
		select {
		case <-stop:
			return
		default:
		}
		srv := startE2E(w.t, e2eConfig{DB: w.db, Agent: w.name, Args: w.args})
		w.mu.Lock()
		w.srv = srv
		w.mu.Unlock()
		if _, ok := w.try(srv, "initialize", nil); !ok {
			continue
		}
		for alive := true; alive; {
			select {
			case <-stop:
				return
			default:
			}
			if task == "" {
				var created struct {
					TaskID string `json:"task_id"`
				}
				env, ok := w.try(srv, "task_create", map[string]any{"title": w.name + " works", "project": "faults"})
				if alive = ok; ok && env.OK {
					json.Unmarshal(env.Data, &created)
					task = created.TaskID
				}
				continue
			}
			env, ok := w.try(srv, "thought_record", map[string]any{"task_id": task, "type": "analysis", "content": "step " + strconv.Itoa(len(w.acks))})
			if alive = ok; ok && env.OK {
				var a ack
				if err := json.Unmarshal(env.Data, &a); err != nil || a.Seq == 0 {
					w.t.Errorf("thought_record answer %s: %v", env.Data, err)
				}
				w.mu.Lock()
				w.acks = append(w.acks, a)
				w.mu.Unlock()
			}
		}
	}
}

// try makes one call; ok is false when the process died before answering.
func (w *writer) try(srv *e2eServer, tool string, args any) (e2eEnvelope, bool) {
	var ch <-chan e2eMessage
	if tool == "initialize" {
		ch, _ = srv.send("initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fault","version":"1"}}`))
	} else {
		ch = srv.callToolAsync(tool, e2eJSON(w.t, args))
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return e2eEnvelope{}, false
		}
		if tool == "initialize" {
			srv.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			return e2eEnvelope{OK: true}, true
		}
		r := parseE2EReply(w.t, tool, m)
		if code := r.code(); code != "OK" && code != "ERR_STORAGE" {
			w.t.Errorf("%s %s: %s", w.name, tool, r.Result)
		}
		return r.Env, true
	case <-time.After(e2eTimeout):
		w.t.Errorf("%s %s: no answer within %v", w.name, tool, e2eTimeout)
		return e2eEnvelope{}, false
	}
}

// TestFaultKillAgentsAtRandom: four agents write; the test SIGKILLs one
// of their processes at random instants and each agent carries on with a
// new one. Every acknowledged thought is in the ledger as told, and the
// ledger verifies.
func TestFaultKillAgentsAtRandom(t *testing.T) {
	t.Parallel()
	kills := 8
	if soak() {
		kills = 200
	}
	db := filepath.Join(t.TempDir(), "kill.db")
	var writers []*writer
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		w := &writer{t: t, db: db, name: fmt.Sprintf("agent-%d", i)}
		writers = append(writers, w)
		wg.Add(1)
		go func() { defer wg.Done(); w.run(stop) }()
	}
	total := func() (n int) {
		for _, w := range writers {
			w.mu.Lock()
			n += len(w.acks)
			w.mu.Unlock()
		}
		return n
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for k := 0; k < kills; k++ {
		// Let the agents make progress between kills, then kill at a
		// random instant (the sleeps make instants, not synchronisation).
		for before, deadline := total(), time.Now().Add(e2eTimeout); total() < before+4 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		if srv := writers[rng.IntN(len(writers))].current(); srv != nil {
			srv.cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	close(stop)
	wg.Wait()
	var acks []ack
	for _, w := range writers {
		for _, s := range []*e2eServer{w.current()} {
			s.closeStdin()
			<-s.exited
		}
		acks = append(acks, w.acks...)
	}
	if len(acks) == 0 {
		t.Fatal("no call was acknowledged")
	}
	t.Logf("%d kills, %d acknowledged thoughts", kills, len(acks))
	checkAcks(t, db, acks)
}

// TestFaultForeignLock: another process holds the ledger's lock longer
// than the server's lock timeout: calls get ERR_STORAGE saying so, and
// succeed again once the lock is released.
func TestFaultForeignLock(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "locked.db")
	srv := startE2E(t, e2eConfig{DB: db, Agent: "waiter", Args: []string{"--lock-timeout", "300ms"}})
	srv.initialize("2025-11-25")
	var created struct {
		TaskID string `json:"task_id"`
	}
	srv.ok("task_create", map[string]any{"title": "wait for the lock", "project": "faults"}, &created)
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := srv.call("thought_record", map[string]any{"task_id": created.TaskID, "type": "analysis", "content": "locked out"})
		if r.code() != "ERR_STORAGE" || !strings.Contains(string(r.Env.Error.Details), "locked") {
			t.Fatalf("a call while another process holds the lock: %s", r.Result)
		}
	}
	f.Close() // releases the lock
	var a ack
	srv.ok("thought_record", map[string]any{"task_id": created.TaskID, "type": "analysis", "content": "in again"}, &a)
	srv.closeStdin()
	<-srv.exited
	checkAcks(t, db, []ack{a})
}

package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestE2EManyAgents runs four `logbook serve` processes, one per agent, on
// one ledger file, each over its own stdio with several calls in flight:
// every agent creates 250 tasks and records a thought on each. The ids must
// come out unique and dense across processes, every call must be answered
// ok, the file must verify as one unbroken chain, and every call must be
// exactly one tool.called event written under its agent's name.
func TestE2EManyAgents(t *testing.T) {
	t.Parallel()
	const (
		agents   = 4
		perAgent = 250
		inFlight = 4 // calls in flight per process
	)
	db := filepath.Join(t.TempDir(), "shared.db")
	servers := make([]*e2eServer, agents)
	for i := range servers {
		servers[i] = startE2E(t, e2eConfig{DB: db, Agent: fmt.Sprintf("agent-%d", i+1)})
	}
	for _, s := range servers {
		s.initialize("2025-06-18")
	}

	type created struct{ task, thought string }
	results := make([][]created, agents)
	calls := make([]int, agents)
	var wg sync.WaitGroup
	for a, s := range servers {
		wg.Go(func() {
			work := make(chan int)
			var mu sync.Mutex
			var inner sync.WaitGroup
			for range inFlight {
				inner.Go(func() {
					for n := range work {
						var task struct {
							TaskID    string `json:"task_id"`
							CreatedBy string `json:"created_by"`
						}
						r := s.call("task_create", map[string]any{"title": fmt.Sprintf("agent %d task %d", a+1, n), "project": fmt.Sprintf("agent-%d", a+1)})
						if !r.Env.OK {
							t.Errorf("agent %d task_create %d: %s", a+1, n, r.Result)
							continue
						}
						r.data(t, &task)
						var th struct {
							ThoughtID     string  `json:"thought_id"`
							PreviousHash  *string `json:"previous_hash"`
							ChainPosition int     `json:"chain_position"`
						}
						r = s.call("thought_record", map[string]any{"task_id": task.TaskID, "type": "plan", "content": fmt.Sprintf("plan for %s", task.TaskID)})
						if !r.Env.OK {
							t.Errorf("agent %d thought_record on %s: %s", a+1, task.TaskID, r.Result)
							continue
						}
						r.data(t, &th)
						if th.ChainPosition != 1 || th.PreviousHash != nil || task.CreatedBy != fmt.Sprintf("agent-%d", a+1) {
							t.Errorf("agent %d: task %+v thought %+v", a+1, task, th)
						}
						mu.Lock()
						results[a] = append(results[a], created{task.TaskID, th.ThoughtID})
						calls[a] += 2
						mu.Unlock()
					}
				})
			}
			for n := range perAgent {
				work <- n
			}
			close(work)
			inner.Wait()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	var tasks, thoughts []string
	for _, rs := range results {
		for _, c := range rs {
			tasks = append(tasks, c.task)
			thoughts = append(thoughts, c.thought)
		}
	}
	slices.Sort(tasks)
	slices.Sort(thoughts)
	for i := range agents * perAgent {
		if want := fmt.Sprintf("T-%04d", i+1); i >= len(tasks) || tasks[i] != want {
			t.Fatalf("task ids are not exactly T-0001..T-%04d: at %d got %v", agents*perAgent, i, tasks[max(0, i-2):min(len(tasks), i+3)])
		}
		if want := fmt.Sprintf("Θ-%04d", i+1); i >= len(thoughts) || thoughts[i] != want {
			t.Fatalf("thought ids are not exactly Θ-0001..Θ-%04d: at %d got %v", agents*perAgent, i, thoughts[max(0, i-2):min(len(thoughts), i+3)])
		}
	}

	// One more call per server: everyone sees the same 1,000 tasks.
	for _, s := range servers {
		var list struct {
			TotalCount int `json:"total_count"`
		}
		s.ok("task_list", map[string]any{"limit": 1}, &list)
		if list.TotalCount != agents*perAgent {
			t.Errorf("%s sees %d tasks, want %d", s.cfg.Agent, list.TotalCount, agents*perAgent)
		}
	}
	for _, s := range servers {
		s.closeStdin()
		if code := s.waitExit(e2eTimeout); code != 0 {
			t.Errorf("%s exited %d", s.cfg.Agent, code)
		}
	}

	rep := e2eVerify(t, db)
	head, events := e2eReadLedger(t, db, 0)
	if rep.Size != head || uint64(len(events)) != head {
		t.Fatalf("verified %d events, head %d, read %d", rep.Size, head, len(events))
	}
	perActor := map[string]int{}
	domain := map[string]int{}
	for _, e := range events {
		switch {
		case e.Call != nil:
			perActor[e.Actor]++
			if e.Call.Outcome != "OK" {
				t.Errorf("seq %d: %s answered %s", e.Seq, e.Call.Tool, e.Call.Outcome)
			}
		default:
			domain[e.Type]++
		}
	}
	for a := range agents {
		name := fmt.Sprintf("agent-%d", a+1)
		if want := calls[a] + 1; perActor[name] != want { // + the task_list
			t.Errorf("%s: %d tool.called events, want %d (one per call)", name, perActor[name], want)
		}
	}
	if domain["task.created"] != agents*perAgent || domain["thought.recorded"] != agents*perAgent || domain["skills.loaded"] != agents {
		t.Errorf("domain events: %v", domain)
	}
	t.Logf("%d agents × %d tasks: %d events, one chain, root %s", agents, perAgent, head, rep.Root)
}

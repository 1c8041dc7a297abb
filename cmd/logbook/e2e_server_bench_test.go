package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkServer measures `logbook server` through the go-sdk client over
// Streamable HTTP on loopback, beside the embedded stdio mode in the same
// run (make bench-server runs it):
//
//   - http/<revision>/<tool>: one call at a time; p50-µs and p99-µs are the
//     round trip's percentiles (goal: p50 ≤ 1 ms);
//   - http/16x8/<revision>/<tool>: 16 clients, each with 8 calls in flight, in calls/s
//     (goal: ≥ 10,000 calls/s);
//   - stdio/<tool> and stdio/16x8/<tool>: the same through `logbook serve`
//     processes on one file (16 processes × 8 in flight for the latter).
//
// Every write is a durable (fsync'd) commit, so writes depend on the disk.
func BenchmarkServer(b *testing.B) {
	tools := []string{"server_ping", "task_get", "task_create", "thought_record"}
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		for _, tool := range tools {
			b.Run("http/"+proto+"/"+tool, func(b *testing.B) {
				s, token := benchHTTPServer(b)
				cs := benchConnect(b, s, token, proto)
				id := benchTaskHTTP(b, cs)
				e2eLatency(b, func(i int) { mustOK(b, cs, tool, benchArgs(tool, id, i), nil) })
			})
		}
	}
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		for _, tool := range []string{"server_ping", "task_get", "task_create"} {
			b.Run("http/16x8/"+proto+"/"+tool, func(b *testing.B) { benchHTTP16x8(b, proto, tool) })
		}
	}
	for _, tool := range tools {
		b.Run("stdio/"+tool, func(b *testing.B) {
			s := e2eBenchServer(b)
			id := e2eBenchTask(s)
			e2eLatency(b, func(i int) { s.ok(tool, benchArgs(tool, id, i), nil) })
		})
	}
	for _, tool := range []string{"server_ping", "task_get", "task_create"} {
		b.Run("stdio/16x8/"+tool, func(b *testing.B) {
			db := filepath.Join(b.TempDir(), "bench.db")
			procs := make([]*e2eServer, 16)
			for i := range procs {
				procs[i] = startE2E(b, e2eConfig{DB: db, Agent: fmt.Sprintf("bench-%d", i)})
				procs[i].initialize("2025-11-25")
			}
			id := e2eBenchTask(procs[0])
			pids := make([]int, len(procs))
			for i, p := range procs {
				pids[i] = p.cmd.Process.Pid
			}
			defer benchServerCPU(b, pids...)()
			benchInflight(b, len(procs)*8, func(w, i int) error {
				s := procs[w%len(procs)]
				if r := parseE2EReply(b, tool, s.wait(s.callToolAsync(tool, e2eJSON(b, benchArgs(tool, id, i))), tool)); !r.Env.OK {
					return fmt.Errorf("%s: %s", tool, r.Result)
				}
				return nil
			})
		})
	}
}

// benchHTTP16x8 runs tool from 16 clients with 8 calls in flight each.
func benchHTTP16x8(b *testing.B, proto, tool string) {
	s, token := benchHTTPServer(b)
	clients := make([]*sdk.ClientSession, 16)
	for i := range clients {
		clients[i] = benchConnect(b, s, token, proto)
	}
	id := benchTaskHTTP(b, clients[0])
	defer benchServerCPU(b, s.cmd.Process.Pid)()
	benchInflight(b, len(clients)*8, func(w, i int) error {
		env, err := callHTTP(clients[w%len(clients)], tool, benchArgs(tool, id, i))
		if err == nil && !env.OK {
			err = fmt.Errorf("%s: %s", tool, env.Error.Code)
		}
		return err
	})
}

// benchServerCPU reports, when the returned func runs, the CPU time the
// server processes used per call since benchServerCPU was called: a figure
// that depends much less than calls/s on what else the machine runs.
func benchServerCPU(b *testing.B, pids ...int) func() {
	total := func() (ticks int64) {
		for _, pid := range pids {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return -1 // not Linux, or gone: no figure
			}
			// utime and stime are fields 14 and 15, counted after the
			// parenthesised command name (which may hold spaces).
			f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
			u, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + st
		}
		return ticks
	}
	before := total()
	return func() {
		after := total()
		if before >= 0 && after >= 0 && b.N > 0 {
			// Clock ticks are 10 ms (USER_HZ 100).
			b.ReportMetric(float64(after-before)*10000/float64(b.N), "server-cpu-µs/call")
		}
	}
}

// benchInflight runs b.N calls from workers goroutines and reports calls/s.
func benchInflight(b *testing.B, workers int, call func(worker, i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := call(w, int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

func benchArgs(tool, taskID string, i int) map[string]any {
	switch tool {
	case "task_create":
		return map[string]any{"title": fmt.Sprintf("bench %d", i), "project": "bench"}
	case "task_get":
		return map[string]any{"task_id": taskID, "include_thought_trail": true}
	case "thought_record":
		return map[string]any{"task_id": taskID, "type": "analysis", "content": fmt.Sprintf("thought %d", i)}
	}
	return map[string]any{}
}

func benchHTTPServer(b *testing.B) (*httpServer, string) {
	b.Helper()
	db := filepath.Join(b.TempDir(), "bench.db")
	s := startHTTPServer(b, db)
	token, _ := addToken(b, db, "--agent", "bench")
	return s, token
}

func benchConnect(b *testing.B, s *httpServer, token, proto string) *sdk.ClientSession {
	b.Helper()
	cs, err := connectHTTP(b, s.url, token, "bench", proto)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// benchTaskHTTP creates a task with a few thoughts and returns its id.
func benchTaskHTTP(b *testing.B, cs *sdk.ClientSession) string {
	var c struct {
		TaskID string `json:"task_id"`
	}
	mustOK(b, cs, "task_create", map[string]any{"title": "benchmarked", "project": "bench", "labels": []string{"a", "b"}}, &c)
	for i := range 3 {
		mustOK(b, cs, "thought_record", map[string]any{"task_id": c.TaskID, "type": "plan", "content": fmt.Sprintf("step %d", i)}, nil)
	}
	return c.TaskID
}

package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// BenchmarkStdio measures the real binary through its real stdio, the way an
// agent sees it (`make bench` runs it):
//
//   - task_create, task_get, thought_record: one call at a time; ns/op is the
//     mean round trip, p50-µs and p99-µs its percentiles (targets: p50 ≤ 2 ms,
//     p99 ≤ 10 ms);
//   - inflight8/*: 8 calls in flight on one connection, in calls/s (target
//     ≥ 2,000 calls/s);
//   - startup-1M: launch, initialize and first answered server_ping on a
//     ledger of 1,000,000 events, in ms (target ≤ 200 ms). The ledger is built
//     once and kept in the system's temp directory, keyed by its size (each
//     start-up appends its own two events to it, which does not matter).
//
// Every write is a durable (fsync'd) commit, so the numbers depend on the disk.
func BenchmarkStdio(b *testing.B) {
	b.Run("task_create", func(b *testing.B) {
		s := e2eBenchServer(b)
		e2eLatency(b, func(i int) {
			s.ok("task_create", map[string]any{"title": fmt.Sprintf("bench %d", i), "project": "bench"}, nil)
		})
	})
	b.Run("task_get", func(b *testing.B) {
		s := e2eBenchServer(b)
		id := e2eBenchTask(s)
		e2eLatency(b, func(int) { s.ok("task_get", map[string]any{"task_id": id, "include_thought_trail": true}, nil) })
	})
	b.Run("thought_record", func(b *testing.B) {
		s := e2eBenchServer(b)
		id := e2eBenchTask(s)
		e2eLatency(b, func(i int) {
			s.ok("thought_record", map[string]any{"task_id": id, "type": "analysis", "content": fmt.Sprintf("thought %d", i)}, nil)
		})
	})
	for _, tool := range []string{"task_create", "task_get"} {
		b.Run("inflight8/"+tool, func(b *testing.B) {
			s := e2eBenchServer(b)
			id := e2eBenchTask(s)
			args := map[string]any{"task_id": id}
			if tool == "task_create" {
				args = map[string]any{"title": "parallel", "project": "bench"}
			}
			raw := e2eJSON(b, args)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 8 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if r := parseE2EReply(b, tool, s.wait(s.callToolAsync(tool, raw), tool)); !r.Env.OK {
							b.Errorf("%s: %s", tool, r.Result)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
	b.Run("startup-1M", func(b *testing.B) {
		db := e2eBigLedger(b, 1_000_000)
		e2eBinary(b) // built before the clock runs
		var total time.Duration
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			s := startE2E(b, e2eConfig{DB: db, Agent: "bench-startup"})
			s.initialize("2025-11-25")
			s.ping()
			total += time.Since(start)
			b.StopTimer()
			s.closeStdin()
			s.waitExit(e2eTimeout)
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/startup")
	})
}

// e2eBenchServer is an initialized server on a fresh ledger.
func e2eBenchServer(b *testing.B) *e2eServer {
	b.Helper()
	s := startE2E(b, e2eConfig{DB: filepath.Join(b.TempDir(), "bench.db"), Agent: "bench"})
	s.initialize("2025-11-25")
	s.ping()
	return s
}

// e2eBenchTask creates a task with a few thoughts and returns its id.
func e2eBenchTask(s *e2eServer) string {
	var c struct {
		TaskID string `json:"task_id"`
	}
	s.ok("task_create", map[string]any{"title": "benchmarked", "project": "bench", "labels": []string{"a", "b"}}, &c)
	for i := range 3 {
		s.ok("thought_record", map[string]any{"task_id": c.TaskID, "type": "plan", "content": fmt.Sprintf("step %d", i)}, nil)
	}
	return c.TaskID
}

// e2eLatency runs call b.N times, one at a time, and reports the 50th and
// 99th percentile round trips.
func e2eLatency(b *testing.B, call func(i int)) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		call(i)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p int) float64 { return float64(lat[min(len(lat)-1, len(lat)*p/100)].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(50), "p50-µs")
	b.ReportMetric(pct(99), "p99-µs")
}

// e2eBigLedger returns a ledger file of at least size events, kept in the
// system's temp directory across runs: ~300-byte tool.called events appended
// in large batches straight through the ledger package, then the projections
// folded, as a server would find a long-lived ledger.
func e2eBigLedger(b *testing.B, size uint64) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("logbook-e2e-bench-%d-v%d.db", size, boltstore.FormatVersion))
	if _, err := os.Stat(path); err == nil {
		l, err := boltstore.Open(path, boltstore.Options{})
		if err == nil {
			var head uint64
			err = l.View(func(tx *boltstore.Tx) error { head = tx.Head().Seq; return nil })
			if err == nil && head >= size {
				_, err = commands.Rebuild(l, projections.RebuildOptions{}) // a newer binary may fold differently
			}
			l.Close()
			if err == nil && head >= size {
				return path
			}
		}
		b.Logf("rebuilding %s: %v", path, err)
	}
	b.StopTimer()
	defer b.StartTimer()
	start := time.Now()
	tmp := path + ".building"
	os.Remove(tmp)
	l, err := boltstore.Open(tmp, boltstore.Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const batch = 20000
	sum := sha256.Sum256([]byte("bench"))
	digest := ledger.DigestOf(sum)
	payload, err := ledger.EncodePayload(projections.ToolCalled{Tool: "task_get", ArgsSHA256: digest, Outcome: "OK",
		ResultSHA256: digest, DurationUS: 1234, Client: "bench-client"})
	if err != nil {
		b.Fatal(err)
	}
	for done := uint64(0); done < size; {
		n := min(batch, size-done)
		err := l.Update(func(tx *boltstore.Tx) error {
			for i := range n {
				task := fmt.Sprintf("T-%04d", (done+i)%5000+1)
				if _, err := tx.Append(ledger.Event{Type: projections.TypeToolCalled, Version: events.CurrentVersion(projections.TypeToolCalled),
					Actor: "bench-agent", Subjects: []string{task}, Payload: payload}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		done += n
	}
	if _, err := commands.Rebuild(l, projections.RebuildOptions{}); err != nil {
		b.Fatal(err)
	}
	l.Close()
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.Logf("built %s: %d events, %d MiB, in %v", path, size, fi.Size()>>20, time.Since(start).Round(time.Second))
	return path
}

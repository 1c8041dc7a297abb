package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkNoisyNeighbour measures what the heaviest reads an agent can
// make cost another agent on the same ledger: a light agent creates tasks
// one at a time (its p50/p99 reported) while a heavy agent, in another
// process, keeps 8 audit_verify_chain calls over the whole ledger and task
// searches over 2,000 tasks with 8 KB descriptions in flight. "quiet" is the
// light agent alone, in the same run, for comparison.
func BenchmarkNoisyNeighbour(b *testing.B) {
	db := filepath.Join(b.TempDir(), "noisy.db")
	seed := startE2E(b, e2eConfig{DB: db, Agent: "seed"})
	seed.initialize("2025-11-25")
	desc := strings.Repeat("a long description of what the task is about ", 180) // ~8 KB
	var wg sync.WaitGroup
	for i := range 2000 {
		ch := seed.callToolAsync("task_create", e2eJSON(b, map[string]any{"title": fmt.Sprintf("heavy %d", i), "project": "noisy", "description": desc}))
		wg.Go(func() { seed.wait(ch, "task_create") })
		if i%64 == 63 {
			wg.Wait()
		}
	}
	wg.Wait()
	seed.closeStdin()
	<-seed.exited

	light := startE2E(b, e2eConfig{DB: db, Agent: "light"})
	light.initialize("2025-11-25")
	measure := func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for i := range b.N {
			start := time.Now()
			light.ok("task_create", map[string]any{"title": fmt.Sprintf("light %d", i), "project": "light"}, nil)
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		pct := func(p int) float64 { return float64(lat[min(len(lat)-1, len(lat)*p/100)].Microseconds()) }
		b.ReportMetric(pct(50), "p50-µs")
		b.ReportMetric(pct(99), "p99-µs")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
	}
	b.Run("quiet", measure)
	b.Run("beside-heavy-reads", func(b *testing.B) {
		heavy := startE2E(b, e2eConfig{DB: db, Agent: "heavy"})
		heavy.initialize("2025-11-25")
		stop := make(chan struct{})
		var hw sync.WaitGroup
		var heavyCalls int
		var mu sync.Mutex
		for i := range 8 {
			hw.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					tool, args := "audit_verify_chain", map[string]any{}
					if i%2 == 1 {
						tool, args = "task_list", map[string]any{"search": "description about", "limit": 500}
					}
					m, ok := <-heavy.callToolAsync(tool, e2eJSON(b, args))
					if !ok {
						return
					}
					parseE2EReply(b, tool, m)
					mu.Lock()
					heavyCalls++
					mu.Unlock()
				}
			})
		}
		b.ResetTimer()
		measure(b)
		b.StopTimer()
		close(stop)
		hw.Wait()
		b.ReportMetric(float64(heavyCalls), "heavy-calls")
	})
}

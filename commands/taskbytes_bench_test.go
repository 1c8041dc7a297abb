package commands

import (
	"fmt"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// BenchmarkBytesPerTask creates 10,000 tasks through the service, one
// task_create call each with a 60-character title and a 300-character
// description (the peer benchmark's task_300 case), 8 calls in flight,
// then reports the file's size and each bucket's pages per task
// (reportUsage's rows, "B/thought" there meaning per task here), then
// rebuilds the projections (as `logbook rebuild` does) and reports again.
//
//	go test ./commands -run '^$' -bench BytesPerTask -benchtime 1x -v
func BenchmarkBytesPerTask(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		h := newHarnessWith(b, Options{Agent: "bench-agent"}, boltstore.Options{Hold: true})
		h.tampered = true
		callMany(b, h, "task_create", n, 8, func(i int) map[string]any {
			return map[string]any{"title": benchProse(i, 60), "project": "bench", "description": benchProse(i+1_000_000, 300)}
		})
		live := h.fingerprint()
		size := reportUsage(b, h, n, "fresh")
		rebuildSame(b, h, live)
		reportUsage(b, h, n, "rebuilt")
		b.ReportMetric(float64(size)/float64(n), "B/task")
	}
}

// benchProse is the peer benchmark's prose(i, n) (bench/peers/servers.mjs).
func benchProse(i, n int) string {
	words := strings.Split("the retry loop backs off when the storage API rate-limits bursts, so a fixed delay either waits too long or trips "+
		"the limit again. We measured p99 latency across three regions and found the west cluster slower because its disks are "+
		"older; decided to cache manifests locally, invalidating on ETag change. Tests cover cold start, eviction and a "+
		"corrupted cache file; the migration keeps the old path readable for one release", " ")
	s := fmt.Sprint(i, ":")
	for k := i*7 + 1; len(s) < n; k = (k*31 + 17) % 100003 {
		s += " " + words[k%len(words)]
	}
	if s = strings.TrimRight(s[:min(len(s), n)], " "); s == "" {
		return fmt.Sprint(i)
	}
	return s
}

package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// BenchmarkBytesPerThought records n thoughts through the service, one
// thought_record call each, 8 calls in flight (group commits, as the peer
// benchmark's stdio client makes them), then reports the file's size and
// each bucket's pages per thought: the events, the Merkle nodes, every
// projection space, the knowledge index. It then rebuilds the projections
// twice (as `logbook rebuild` does: a scratch file, swapped in) and reports
// the file's size after each, which must not grow.
//
//	go test ./commands -run '^$' -bench BytesPerThought -benchtime 1x -v
//
// LOGBOOK_BENCH_THOUGHTS sets n (default 100,000); LOGBOOK_BENCH_CHARS,
// if set, makes each thought that many characters of the peer benchmark's
// prose (benchProse; bench/peers' sizes figures: 20, 300…) rather than its
// usual thought; LOGBOOK_BENCH_INFLIGHT sets the calls in flight (default
// 8, as bench/peers; 1 is one agent's calls, a commit each). Each row of
// the log is
// "bucket  pages B/thought  in-use B/thought  fill%".
func BenchmarkBytesPerThought(b *testing.B) {
	n := 100_000
	if env := os.Getenv("LOGBOOK_BENCH_THOUGHTS"); env != "" {
		v, err := strconv.Atoi(env)
		if err != nil || v <= 0 {
			b.Fatalf("LOGBOOK_BENCH_THOUGHTS=%q: want a count like 100000", env)
		}
		n = v
	}
	text := benchThoughtText
	if env := os.Getenv("LOGBOOK_BENCH_CHARS"); env != "" {
		chars, err := strconv.Atoi(env)
		if err != nil || chars <= 0 {
			b.Fatalf("LOGBOOK_BENCH_CHARS=%q: want a length like 300", env)
		}
		text = func(i int) string { return benchProse(i, chars) }
	}
	inFlight := 8
	if env := os.Getenv("LOGBOOK_BENCH_INFLIGHT"); env != "" {
		v, err := strconv.Atoi(env)
		if err != nil || v <= 0 {
			b.Fatalf("LOGBOOK_BENCH_INFLIGHT=%q: want a count of calls like 1", env)
		}
		inFlight = v
	}
	for b.Loop() {
		h := newHarnessWith(b, Options{Agent: "bench-agent"}, boltstore.Options{Hold: true})
		h.tampered = true // checked below, at the size measured
		task := h.call("task_create", map[string]any{"title": "bench solo", "project": "bench"}, "OK")["task_id"].(string)
		recordThoughts(b, h, task, n, inFlight, text)
		live := h.fingerprint()
		size := reportUsage(b, h, n, "fresh")
		for round := 1; round <= 2; round++ {
			rebuildSame(b, h, live)
			after := reportUsage(b, h, n, fmt.Sprintf("rebuild %d", round))
			b.ReportMetric(float64(after)/float64(size), fmt.Sprintf("size-after-rebuild%d/fresh", round))
		}
		b.ReportMetric(float64(size)/float64(n), "B/thought")
	}
}

// recordThoughts records n thoughts on task, text(i) the i-th (callMany).
func recordThoughts(tb testing.TB, h *harness, task string, n, inFlight int, text func(int) string) {
	tb.Helper()
	callMany(tb, h, "thought_record", n, inFlight, func(i int) map[string]any {
		return map[string]any{"task_id": task, "type": "analysis", "content": text(i)}
	})
}

// callMany makes n calls of tool, args(i) the i-th's arguments, through the
// service, inFlight at a time (not through h.call: the harness's order
// checks do not hold for calls made in parallel, and the ledger is the
// caller's to check, h.tampered).
func callMany(tb testing.TB, h *harness, tool string, n, inFlight int, args func(int) map[string]any) {
	tb.Helper()
	cmd := named(tool)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, inFlight)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				a, _ := json.Marshal(args(i))
				var code string
				_, err := h.svc.Do(context.Background(), Call{Name: tool, Command: cmd, Args: a, Client: "bench",
					Encode: func(r any, err error) (string, []byte) { c, out := testEncode(r, err); code = c; return c, out }})
				if err == nil && code != "OK" {
					err = fmt.Errorf("%s #%d: %s", tool, i, code)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

// rebuildSame rebuilds h's projections as logbook rebuild does and fails tb
// unless they are what was folded live (live, h.fingerprint's).
func rebuildSame(tb testing.TB, h *harness, live uint64) {
	tb.Helper()
	if _, err := Rebuild(h.l, projections.RebuildOptions{Force: true}); err != nil {
		tb.Fatal(err)
	}
	if err := h.l.EmptyTrash(); err != nil {
		tb.Fatal(err)
	}
	if fp := h.fingerprint(); fp != live {
		tb.Fatalf("rebuilt projections differ from live ones (%x != %x)", fp, live)
	}
}

// benchThoughtText is the peer benchmark's thought (bench/peers/servers.mjs).
func benchThoughtText(i int) string {
	return strconv.Itoa(i) + ": Retry the upload with exponential back-off: the storage API rate-limits bursts, and a fixed delay either waits too long or trips the limit again."
}

// reportUsage logs the file's size and every bucket's pages per thought,
// with the ledger closed (and opened again after), and returns the size.
func reportUsage(b *testing.B, h *harness, n int, when string) int64 {
	b.Helper()
	h.l.Close()
	size := fileUsage(b, h.path, n, when)
	l, err := boltstore.Open(h.path, h.lopts)
	if err != nil {
		b.Fatal(err)
	}
	h.l = l
	svc, err := New(l, h.opts)
	if err != nil {
		b.Fatal(err)
	}
	h.svc = svc
	return size
}

package jetstream

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nuid"
)

var benchStreams atomic.Int64

// benchNode is a node for a benchmark: the embedded file alone ("file"), or
// a local copy of a fresh R3 stream on the shared 3-node loopback cluster,
// unsynced as logbook server keeps it ("nats3": the stream is the durable
// log) or fsync'd at every commit ("nats3-fsync", --replica-fsync).
func benchNode(b *testing.B, engine string) *node {
	path := filepath.Join(b.TempDir(), "bench.db")
	if engine == "file" {
		s, err := boltstore.Open(path, boltstore.Options{Create: true, Hold: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return &node{path: path, store: s}
	}
	c := sharedCluster(b)
	nc := c.connect(b, 0, "app")
	rep := openReplica(b, nc, Options{Stream: fmt.Sprintf("bench%d", benchStreams.Add(1))}, hooks{})
	s, err := boltstore.Open(path, boltstore.Options{Create: true, Hold: true, Replica: rep, NoSync: engine == "nats3"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return &node{path: path, nc: nc, rep: rep, store: s}
}

// reportLatency reports the p50 and p99 of lat in µs.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// rawAppend is the engine alone, no ledger: one publish of an event-sized
// message guarded by the expected last sequence, as Append sends it. Its
// rate is the ceiling of a sequential append on the same servers.
func rawAppend(b *testing.B) func(i int) error {
	c := sharedCluster(b)
	nc := c.connect(b, 0, "app")
	rep := openReplica(b, nc, Options{Stream: fmt.Sprintf("bench%d", benchStreams.Add(1))}, hooks{})
	data := make([]byte, 200)
	return func(i int) error {
		_, err := rep.publish(0, uint64(i), nuid.Next(), [][]byte{data})
		return err
	}
}

// BenchmarkSequentialAppend: one caller, one event per call, each waiting
// for the last: appends/s and latency, embedded file vs 3-node stream, and
// the stream's own ceiling (nats3-publish: a guarded publish, no ledger).
func BenchmarkSequentialAppend(b *testing.B) {
	for _, engine := range []string{"file", "nats3", "nats3-fsync", "nats3-publish"} {
		b.Run(engine, func(b *testing.B) {
			var appendOne func(i int) error
			if engine == "nats3-publish" {
				appendOne = rawAppend(b)
			} else {
				n := benchNode(b, engine)
				appendOne = func(i int) error { return n.appendEvents("bench", fmt.Sprintf("s%d", i)) }
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				t0 := time.Now()
				if err := appendOne(i); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
			reportLatency(b, lat)
		})
	}
}

// BenchmarkInFlight64: 64 callers at once, one event per call (the store
// groups them into commits, each one atomic batch): ev/s and per-call
// latency, embedded file vs 3-node stream, and the stream's own ceiling
// (nats3-publish: 64 plain publishes in flight, unguarded, no ledger).
func BenchmarkInFlight64(b *testing.B) {
	const inFlight = 64
	for _, engine := range []string{"file", "nats3", "nats3-fsync", "nats3-publish"} {
		b.Run(engine, func(b *testing.B) {
			var appendOne func(i int64) error
			if engine == "nats3-publish" {
				c := sharedCluster(b)
				nc := c.connect(b, 0, "app")
				rep := openReplica(b, nc, Options{Stream: fmt.Sprintf("bench%d", benchStreams.Add(1))}, hooks{})
				data := make([]byte, 200)
				appendOne = func(int64) error {
					m, err := nc.Request(rep.subject, data, rep.opts.Timeout)
					if err == nil && bytes.Contains(m.Data, []byte(`"error"`)) {
						err = fmt.Errorf("%s", m.Data)
					}
					return err
				}
			} else {
				n := benchNode(b, engine)
				appendOne = func(i int64) error { return n.appendEvents("bench", fmt.Sprintf("s%d", i)) }
			}
			var next atomic.Int64
			var mu sync.Mutex
			lat := make([]time.Duration, 0, b.N)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range inFlight {
				wg.Go(func() {
					var mine []time.Duration
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						t0 := time.Now()
						if err := appendOne(i); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ev/s")
			if len(lat) > 0 {
				reportLatency(b, lat)
			}
		})
	}
}

package commands

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// BenchmarkKnowledgeIndex fills a ledger with n findings through the fold
// (the search fixture's texts, cycled, each with a token of its own), then
// reports what the index costs: per event folded (batch fold, index
// included, in commits of 5,000 events), a live finding_record call (its
// commit and fsync included), per search (the handler in a read transaction,
// which is what holds the file's shared lock: writers of every process wait
// that long; p50 and p99 over the fixture's queries), and a forced rebuild
// of every projection, the index included.
//
//	go test ./commands -run XXX -bench KnowledgeIndex -benchtime 2000x
//
// LOGBOOK_BENCH_KNOWLEDGE=1000000 (a comma-separated list) sets the sizes.
func BenchmarkKnowledgeIndex(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if env := os.Getenv("LOGBOOK_BENCH_KNOWLEDGE"); env != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("LOGBOOK_BENCH_KNOWLEDGE=%q: want sizes like 1000000", env)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h := newHarness(b, Options{Agent: "bench"})
			h.tampered = true // the benchmark times its own rebuild
			corpus := fixture(b, "corpus.txt", 5)
			queries := fixture(b, "queries.txt", 4)
			projects := map[string]string{}
			for _, f := range corpus {
				if projects[f[2]] == "" {
					projects[f[2]] = h.call("task_create", map[string]any{"title": "t", "project": f[2]}, "OK")["task_id"].(string)
				}
			}
			// Appended raw and folded by CatchUp, as a rebuild or a catching-up
			// process folds: the batch path, in commits of 5,000 events.
			start := time.Now()
			for done := 0; done < n; {
				err := h.l.Update(func(lt *boltstore.Tx) error {
					for i := 0; i < 5_000 && done < n; i, done = i+1, done+1 {
						f := corpus[done%len(corpus)]
						id := domain.FormatID(domain.FindingPrefix, uint64(done+1))
						p, err := ledger.EncodePayload(events.FindingRecorded{FindingID: id, TaskID: projects[f[2]], Project: f[2],
							Category: "bug", Summary: fmt.Sprintf("%s case%d", f[4], done)})
						if err != nil {
							return err
						}
						if _, err := lt.Append(ledger.Event{Type: events.TypeFindingRecorded, Version: 1, Actor: "bench",
							Subjects: []string{id, projects[f[2]]}, Payload: p}); err != nil {
							return err
						}
					}
					_, err := projections.CatchUp(lt, 0)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			perEvent := float64(time.Since(start).Microseconds()) / float64(n)
			// A live finding_record: one call, one commit (fsync included).
			var calls []time.Duration
			for i := range 200 {
				t0 := time.Now()
				h.call("finding_record", map[string]any{"task_id": projects["payments-api"], "category": "bug",
					"summary": fmt.Sprintf("%s live%d", corpus[i][4], i)}, "OK")
				calls = append(calls, time.Since(t0))
			}
			slices.Sort(calls)

			var lat []time.Duration
			b.ResetTimer()
			i := 0
			for b.Loop() {
				q := queries[i%len(queries)]
				i++
				in := SearchKnowledgeInput{Query: q[0], CrossProject: q[1] == "*", Project: strings.Trim(q[1], "*")}
				t0 := time.Now()
				err := h.l.View(func(lt *boltstore.Tx) error {
					_, err := h.svc.SearchKnowledge(&Tx{lt: lt}, in)
					return err
				})
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(perEvent, "µs/event-folded")
			b.ReportMetric(float64(calls[len(calls)/2].Microseconds()), "µs-finding_record-p50")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "µs-p50")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs-p99")

			t0 := time.Now()
			if _, err := Rebuild(h.l, projections.RebuildOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(t0).Seconds(), "s-rebuild")
		})
	}
}

package projections_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/search"
)

// TestSearchSeesWaitingLump: the index folds knowledge in lumps, and a
// search indexes the waiting ones for itself, so after every event it finds
// exactly what an index folded at once finds (a second ledger of the same
// events with lumps of one) — across lump boundaries, with memory versions
// replaced and learnings superseded inside and across lumps. A refold of the
// lumped log gives its projections byte for byte.
func TestSearchSeesWaitingLump(t *testing.T) {
	lumped, eager := openFolded(t), openFolded(t)
	both := func(fn func(l *boltstore.Store)) {
		restore := projections.SetIndexLump(1)
		fn(eager)
		restore()
		fn(lumped)
	}
	queries := []struct {
		q string
		f search.Filter
	}{
		{"retry uploads", search.Filter{}},
		{"deploy checklist", search.Filter{}},
		{"rate limits back-off", search.Filter{Project: "p"}},
		{"thought 17", search.Filter{}},
		{"learning", search.Filter{}},
	}
	find := func(l *boltstore.Store, q string, f search.Filter) (hits []search.Hit) {
		if err := l.View(func(tx *boltstore.Tx) (err error) { hits, err = projections.SearchKnowledge(tx, q, f); return }); err != nil {
			t.Fatal(err)
		}
		for i := range hits {
			hits[i].Hash = ledger.Hash{} // the two ledgers' events differ in time
		}
		return hits
	}
	learnings, versions := 0, map[string]uint64{}
	for i := 1; i <= 110; i++ {
		id := domain.FormatID(domain.TaskPrefix, uint64(1+i/20))
		if i%20 == 0 || i == 1 {
			both(func(l *boltstore.Store) {
				appendRaw(t, l, events.TypeTaskCreated, 2, []string{id}, events.TaskCreated{TaskID: id, Project: "p", Title: "task", Priority: "normal", Labels: []string{}})
			})
		}
		switch {
		case i%7 == 0:
			// Two versions of a key back to back: the second takes out a
			// version that may still wait in the same lump.
			key := fmt.Sprintf("deploy-%d", i%3)
			for j := range 2 {
				versions[key]++
				mid := domain.FormatID(domain.MemoryPrefix, uint64(2*i+j))
				both(func(l *boltstore.Store) {
					appendRaw(t, l, events.TypeMemoryWritten, 1, []string{mid}, events.MemoryWritten{MemoryID: mid, Key: key, Scope: "global", Version: versions[key], Content: fmt.Sprintf("deploy checklist %d.%d", i, j)})
				})
			}
		case i%11 == 0:
			learnings++
			lid := domain.FormatID(domain.LearningPrefix, uint64(learnings))
			both(func(l *boltstore.Store) {
				appendRaw(t, l, events.TypeLearningRecorded, 1, []string{lid}, events.LearningRecorded{LearningID: lid, Project: "p", Pattern: fmt.Sprintf("learning %d: retry uploads", i), Context: "rate limits"})
			})
			if learnings > 1 && learnings%2 == 0 {
				old := domain.FormatID(domain.LearningPrefix, uint64(learnings-1))
				both(func(l *boltstore.Store) {
					appendRaw(t, l, events.TypeLearningSuperseded, 1, []string{old, lid}, events.LearningSuperseded{LearningID: old, By: lid})
				})
			}
		default:
			th := domain.FormatID(domain.ThoughtPrefix, uint64(i))
			both(func(l *boltstore.Store) {
				appendRaw(t, l, events.TypeThoughtRecorded, 1, []string{th, id}, events.ThoughtRecorded{ThoughtID: th, TaskID: id, Type: "plan", Content: fmt.Sprintf("thought %d: retry the uploads with back-off", i), ChainPosition: uint64(i)})
			})
		}
		for _, q := range queries {
			got, want := find(lumped, q.q, q.f), find(eager, q.q, q.f)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after event %d, %q: lumped index found\n%+v\nat once:\n%+v", i, q.q, got, want)
			}
			if i > 40 && len(got) == 0 {
				t.Fatalf("after event %d, %q found nothing", i, q.q)
			}
		}
	}
	var indexed uint64
	if err := lumped.View(func(tx *boltstore.Tx) error {
		hits, err := projections.SearchKnowledge(tx, "thought 109", search.Filter{})
		if len(hits) > 0 {
			indexed = hits[0].Seq
		}
		return err
	}); err != nil || indexed == 0 {
		t.Fatalf("the last thought, still waiting for its lump, not found: %v", err)
	}
	for _, batch := range []int{1, 13, 1000} {
		if a, b := fingerprintOf(t, lumped), fingerprintOf(t, refold(t, lumped, batch)); a != b {
			t.Errorf("refold in batches of %d: fingerprint %x, live %x", batch, b, a)
		}
	}
}

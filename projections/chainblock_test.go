package projections_test

import (
	"fmt"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// TestChainBlocks: task chains packed 64 positions to a key read back
// whole across block boundaries (LastThought, ThoughtAt, TaskThoughts),
// with gaps and a thought number far above the rest (a wider record); a
// refold in batches, whose blocks are appended to in memory across many
// thoughts of a batch, and a rebuild store the same bytes as the live fold.
func TestChainBlocks(t *testing.T) {
	l := openFolded(t)
	for _, task := range []string{"T-0001", "T-0002"} {
		appendRaw(t, l, events.TypeTaskCreated, 2, []string{task}, events.TaskCreated{TaskID: task, Project: "p", Title: "t", Priority: "normal", Labels: []string{}, Assignee: "a"})
	}
	want := map[string][]uint64{} // by task: the chain positions recorded, in order
	n := uint64(0)
	record := func(task string, pos, number uint64) {
		n++
		id := domain.FormatID(domain.ThoughtPrefix, number)
		appendRaw(t, l, events.TypeThoughtRecorded, events.CurrentVersion(events.TypeThoughtRecorded), []string{id, task},
			events.ThoughtRecorded{ThoughtID: id, TaskID: task, Type: "plan", Content: fmt.Sprint("step ", pos), ChainPosition: pos})
		want[task] = append(want[task], pos)
	}
	number := uint64(0)
	for pos := uint64(1); pos <= 150; pos++ {
		number++
		record("T-0001", pos, number)
		if pos%20 == 0 { // T-0002: positions 1, 2, ... with a gap at 5-69
			number++
			p := uint64(len(want["T-0002"]) + 1)
			if p >= 5 {
				p += 65
			}
			if pos == 100 {
				number += 1 << 20 // far above: a wider record in T-0002's block
			}
			record("T-0002", p, number)
		}
	}
	check := func(l *boltstore.Store) {
		t.Helper()
		err := l.View(func(tx *boltstore.Tx) error {
			for task, positions := range want {
				var got []uint64
				if err := projections.TaskThoughts(tx, task, func(th projections.Thought) bool {
					if th.Hash == "" || th.Content != fmt.Sprint("step ", th.ChainPosition) {
						t.Errorf("%s: thought %+v", task, th)
					}
					got = append(got, th.ChainPosition)
					return true
				}); err != nil {
					return err
				}
				if fmt.Sprint(got) != fmt.Sprint(positions) {
					t.Errorf("%s: TaskThoughts positions %v, want %v", task, got, positions)
				}
				last, ok, err := projections.LastThought(tx, task)
				if err != nil || !ok || last.ChainPosition != positions[len(positions)-1] {
					t.Errorf("%s: LastThought %d %v %v, want position %d", task, last.ChainPosition, ok, err, positions[len(positions)-1])
				}
				for _, pos := range []uint64{0, 1, 4, 5, 63, 64, 65, 70, 127, 128, 150, 151, 1000} {
					th, ok, err := projections.ThoughtAt(tx, task, pos)
					recorded := false
					for _, p := range positions {
						recorded = recorded || p == pos
					}
					if err != nil || ok != recorded || (ok && (th.ChainPosition != pos || th.Content != fmt.Sprint("step ", pos))) {
						t.Errorf("%s: ThoughtAt(%d) %+v %v %v, want recorded %v", task, pos, th, ok, err, recorded)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(l)
	live := fingerprintOf(t, l)
	for _, batch := range []int{1, 7, 5000} {
		for _, prepare := range []bool{false, true} {
			scratch := refoldWith(t, l, batch, prepare)
			if got := fingerprintOf(t, scratch); got != live {
				t.Errorf("batches of %d, prepared %v: fingerprint %x, live %x", batch, prepare, got, live)
			}
			if c := compare(t, l, scratch, 100); c.Differences != 0 {
				t.Errorf("batches of %d, prepared %v: %d differences, first %+v", batch, prepare, c.Differences, c.First)
			}
		}
	}
	rebuild(t, l, 0)
	if got := fingerprintOf(t, l); got != live {
		t.Errorf("rebuilt: fingerprint %x, live %x", got, live)
	}
	check(l)
}

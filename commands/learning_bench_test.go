package commands

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// benchWords are the vocabulary of generated learnings: texts drawn from
// them at random share words but few consecutive pairs, as real lessons
// about one code base do.
var benchWords = strings.Fields(`ledger commit lock file bbolt process agent server thought task session
	merkle root proof event hash chain fold projection index search query stem token snapshot verify
	replay checkpoint signature timeout retry batch fsync page memory cache test fixture golden schema
	input output error code envelope client transport stdio line json msgpack payload version upcast`)

func benchText(r *rand.Rand, words int) string {
	w := make([]string, words)
	for i := range w {
		w[i] = benchWords[r.IntN(len(benchWords))]
	}
	return strings.Join(w, " ")
}

// BenchmarkNearDuplicateCheck measures the near-duplicate gate of
// learning_record against a project with n live learnings: it re-shingles
// every live learning of the project, inside the writers' commit.
func BenchmarkNearDuplicateCheck(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h := newHarness(b, Options{Agent: "bench"})
			h.tampered = true // no end-of-test rebuild of a benchmark's ledger
			h.call("task_create", map[string]any{"title": "t", "project": "core"}, "OK")
			r := rand.New(rand.NewPCG(1, 2))
			err := h.l.Update(func(lt *boltstore.Tx) error {
				tx := &Tx{lt: lt, actor: "bench"}
				for i := range n {
					id := domain.FormatID(domain.LearningPrefix, uint64(i+1))
					if _, err := tx.emit("learning.recorded", []string{id}, map[string]any{"learning_id": id, "project": "core",
						"pattern": benchText(r, 15), "context": benchText(r, 40)}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			text := domain.LearningText(benchText(r, 15), benchText(r, 40))
			b.ResetTimer()
			for b.Loop() {
				err := h.l.View(func(lt *boltstore.Tx) error {
					err := checkDuplicate(&Tx{lt: lt}, "core", text, "")
					if _, dup := err.(*DuplicateError); dup {
						return nil
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package search_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/search"
)

// refWords are the words of the reference test's documents and queries.
var refWords = []string{"walrus", "migration", "migrations", "migrating", "plan", "the", "of", "Ünïcödé", "日本語", "naïve",
	"TestCheckout", "snake_case", "v1.2.3", "42", "retry", "retries", "flaky", "uploads", "deploy", "checklist", "rate", "x", "zz",
	"alpha", "beta", "gamma", "delta", "epsilon"}

func refText(rng *rand.Rand, n int) string {
	w := make([]string, 1+rng.IntN(n))
	for i := range w {
		w[i] = refWords[rng.IntN(len(refWords))]
	}
	return strings.Join(w, " ")
}

// refIndex is the reference's view of documents: each one's counted terms
// and, for each term, how many documents hold it. Counted once for the
// documents, not again for each query.
type refIndex struct {
	docs   []search.Doc
	counts []*search.Counts
	df     map[string]int
	total  int
}

func newRefIndex(docs []search.Doc) *refIndex {
	r := &refIndex{docs: docs, counts: make([]*search.Counts, len(docs)), df: map[string]int{}}
	for i, d := range docs {
		r.counts[i] = search.CountTerms(d.Fields)
		r.total += int(r.counts[i].Length)
		for _, t := range r.counts[i].Terms {
			r.df[t]++
		}
	}
	return r
}

// search ranks the documents against query by the BM25 the package
// documents, computed from each document's counted terms alone: the k best,
// by score then newest seq. As of a seq, BM25's figures are those of the
// documents recorded at that seq or before.
func (r *refIndex) search(query string, f search.Filter) []search.Hit {
	terms := search.Terms(query)
	docs, counts, df := r.docs, r.counts, r.df
	n := float64(len(docs))
	avg := float64(r.total) / n
	if f.AsOfSeq != 0 {
		df = map[string]int{}
		n, avg = 0, 0
		for i, d := range docs {
			if d.Seq <= f.AsOfSeq {
				n++
				avg += float64(counts[i].Length)
				for _, t := range counts[i].Terms {
					df[t]++
				}
			}
		}
		avg /= n
	}
	var hits []search.Hit
	for i, d := range docs {
		if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, d.Kind) || f.Project != "" && d.Project != f.Project || f.AsOfSeq != 0 && d.Seq > f.AsOfSeq {
			continue
		}
		score, matched := 0.0, false
		for _, t := range terms {
			j, ok := slices.BinarySearch(counts[i].Terms, t)
			if !ok {
				continue
			}
			matched = true
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			tf := float64(counts[i].Freqs[j])
			score += idf * tf * (1.2 + 1) / (tf + 1.2*(1-0.75+0.75*float64(counts[i].Length)/avg))
		}
		if matched {
			hits = append(hits, search.Hit{ID: d.ID, Seq: d.Seq, Score: score})
		}
	}
	slices.SortFunc(hits, func(a, b search.Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return -cmp.Compare(a.Seq, b.Seq)
	})
	k := f.Limit
	if k == 0 {
		k = search.DefaultLimit
	}
	return hits[:min(k, len(hits))]
}

// TestSearchMatchesReference: on random documents, some taken out again,
// every search (kinds, project, as_of_seq and limits of every size) finds
// exactly the documents a plain BM25 over the documents left ranks best,
// in its order, with its scores: nothing missed, nothing twice, no
// filter ignored, pruning exact.
func TestSearchMatchesReference(t *testing.T) {
	for seed := range 2 {
		rng := rand.New(rand.NewPCG(uint64(seed), 99))
		var docs []search.Doc
		kinds := []search.Kind{search.Thought, search.Finding, search.Learning, search.Memory}
		for i := range 300 + rng.IntN(300) {
			k := kinds[rng.IntN(len(kinds))]
			id := fmt.Sprintf("%s-%04d", map[search.Kind]string{search.Thought: "Θ", search.Finding: "F", search.Learning: "L", search.Memory: "M"}[k], i+1)
			d := doc(id, k, []string{"p", "q", ""}[rng.IntN(3)], uint64(i+1), refText(rng, 30))
			if rng.IntN(3) == 0 {
				d.Fields = append(d.Fields, search.Field{Name: "more", Text: refText(rng, 5)})
			}
			docs = append(docs, d)
		}
		ix, _ := build(t, docs)
		// Some taken out again.
		var left []search.Doc
		for _, d := range docs {
			if rng.IntN(5) == 0 {
				if err := remove(ix, d); err != nil {
					t.Fatal(err)
				}
				continue
			}
			left = append(left, d)
		}
		ref := newRefIndex(left)
		for range 200 {
			q := refText(rng, 4)
			f := search.Filter{Limit: []int{0, 1, 2, 3, 10, 100}[rng.IntN(6)]}
			if rng.IntN(3) == 0 {
				f.Kinds = []search.Kind{kinds[rng.IntN(4)], kinds[rng.IntN(4)]}
			}
			if rng.IntN(3) == 0 {
				f.Project = []string{"p", "q", "none"}[rng.IntN(3)]
			}
			if rng.IntN(3) == 0 {
				f.AsOfSeq = uint64(1 + rng.IntN(len(docs)))
			}
			got, err := ix.Search(q, f)
			if err != nil {
				t.Fatal(err)
			}
			want := ref.search(q, f)
			if len(got) != len(want) {
				t.Fatalf("seed %d %q %+v: %d hits, want %d:\n%v\n%v", seed, q, f, len(got), len(want), scores(got), scores(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-9*want[i].Score {
					// Scores equal to the last bits may rank either way.
					if math.Abs(got[i].Score-want[i].Score) < 1e-9*want[i].Score {
						continue
					}
					t.Fatalf("seed %d %q %+v: hit %d\n%v\nwant\n%v", seed, q, f, i, scores(got), scores(want))
				}
			}
		}
	}
}

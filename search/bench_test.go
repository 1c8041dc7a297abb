package search_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

// synthetic returns n documents whose words are drawn, Zipf-distributed by
// their frequency in the fixture corpus, from the corpus vocabulary; lengths
// run from 15 to 74 words, like the fixture's entries. The same n gives the
// same documents.
func synthetic(tb testing.TB, n int) []search.Doc {
	tb.Helper()
	freq := map[string]int{}
	for _, d := range loadCorpus(tb) {
		for _, w := range strings.Fields(d.Fields[0].Text) {
			freq[strings.Trim(w, ".,:;()")]++
		}
	}
	vocab := make([]string, 0, len(freq))
	for w := range freq {
		vocab = append(vocab, w)
	}
	slices.SortFunc(vocab, func(a, b string) int {
		if freq[a] != freq[b] {
			return freq[b] - freq[a]
		}
		return strings.Compare(a, b)
	})
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	kinds := []search.Kind{search.Thought, search.Finding, search.Learning, search.Memory}
	docs := make([]search.Doc, n)
	var sb strings.Builder
	for i := range docs {
		sb.Reset()
		for range 15 + rng.IntN(60) {
			sb.WriteString(vocab[zipf.Uint64()])
			sb.WriteByte(' ')
		}
		seq := uint64(i + 1)
		docs[i] = search.Doc{ID: fmt.Sprintf("%c-%07d", "TFLM"[i%4], i), Kind: kinds[i%4],
			Project: fmt.Sprintf("project-%d", i%8), Author: fmt.Sprintf("agent-%d", i%5), Seq: seq,
			Hash: [32]byte{byte(seq >> 16), byte(seq >> 8), byte(seq)}, Fields: []search.Field{{Name: "text", Text: sb.String()}}}
	}
	return docs
}

var (
	bigOnce  sync.Once
	bigIndex *search.Index
)

func index100k(b *testing.B) *search.Index {
	bigOnce.Do(func() { bigIndex, _ = build(b, synthetic(b, 100_000)) })
	return bigIndex
}

// benchQueries are the fixture's queries followed by random two- and
// three-word queries from the corpus text.
func benchQueries(b *testing.B) []string {
	var qs []string
	for _, q := range loadQueries(b) {
		qs = append(qs, q.text)
	}
	docs := loadCorpus(b)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 58 {
		words := strings.Fields(docs[rng.IntN(len(docs))].Fields[0].Text)
		i := rng.IntN(len(words) - 2)
		qs = append(qs, strings.Join(words[i:i+2+rng.IntN(2)], " "))
	}
	return qs
}

// BenchmarkSearch100k reports the p50 and p99 latency of one Search over a
// 100k-document index in memory, for 100 queries, with and without filters.
func BenchmarkSearch100k(b *testing.B) {
	ix := index100k(b)
	qs := benchQueries(b)
	for _, bc := range []struct {
		name string
		f    search.Filter
	}{
		{"all", search.Filter{}},
		{"project+kinds", search.Filter{Project: "project-3", Kinds: []search.Kind{search.Finding, search.Learning}}},
		{"asof", search.Filter{AsOfSeq: 50_000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, err := ix.Search(qs[i%len(qs)], bc.f); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportPercentiles(b, lat)
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkAdd is the cost of indexing one document into an in-memory space
// (the index's own work, without the ledger's).
func BenchmarkAdd(b *testing.B) {
	docs := synthetic(b, 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		b.StopTimer()
		ix := search.New(newMemSpace(), docsOf(docs))
		b.StartTimer()
		for j := 0; j < len(docs) && i < b.N; j, i = j+1, i+1 {
			if err := ix.Add(docs[j]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRebuild indexes N documents from scratch into an empty space.
func BenchmarkRebuild(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		docs := synthetic(b, n)
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			for range b.N {
				build(b, docs)
			}
		})
	}
}

// BenchmarkLedger100k indexes 100k documents into a real ledger space (in
// transactions of 1000 documents) and then searches it in read
// transactions, as the knowledge tools will.
func BenchmarkLedger100k(b *testing.B) {
	docs := synthetic(b, 100_000)
	byseq := docsOf(docs)
	qs := benchQueries(b)
	l, err := boltstore.Open(filepath.Join(b.TempDir(), "ledger.db"), boltstore.Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	for i := 0; i < len(docs); i += 1000 {
		err := l.Update(func(tx *boltstore.Tx) error {
			sp, err := tx.Space("search")
			if err != nil {
				return err
			}
			ix := search.New(sp, byseq)
			for _, d := range docs[i:min(i+1000, len(docs))] {
				if err := ix.Add(d); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("indexed %d documents in the ledger in %v (%v per document)", len(docs), time.Since(start), time.Since(start)/time.Duration(len(docs)))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		err := l.View(func(tx *boltstore.Tx) error {
			sp, err := tx.Space("search")
			if err != nil {
				return err
			}
			_, err = search.New(sp, byseq).Search(qs[i%len(qs)], search.Filter{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

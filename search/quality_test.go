package search_test

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/search"
)

const fixtureDir = "../fixtures/knowledge/"

// loadCorpus reads fixtures/knowledge/corpus.txt: one entry a line,
// "id|kind|project|author|text"; an entry's seq is its line number among
// entries, from 1.
func loadCorpus(t testing.TB) []search.Doc {
	t.Helper()
	var docs []search.Doc
	for _, f := range fixtureLines(t, "corpus.txt", 5) {
		kind, err := search.ParseKind(f[1])
		if err != nil {
			t.Fatalf("corpus %s: %v", f[0], err)
		}
		seq := uint64(len(docs) + 1)
		docs = append(docs, search.Doc{ID: f[0], Kind: kind, Project: f[2], Author: f[3], Seq: seq,
			Hash: [32]byte{byte(seq >> 8), byte(seq)}, Fields: []search.Field{{Name: "text", Text: f[4]}}})
	}
	return docs
}

// fixtureLines splits the non-comment lines of a fixture on "|".
func fixtureLines(t testing.TB, name string, fields int) [][]string {
	t.Helper()
	f, err := os.Open(fixtureDir + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "|", fields)
		if len(parts) != fields {
			t.Fatalf("%s: %q: want %d fields", name, line, fields)
		}
		out = append(out, parts)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// query is one line of fixtures/knowledge/queries.txt:
// "query|project (* for all)|kinds (* for all, else comma-separated)|relevant ids".
type query struct {
	text     string
	filter   search.Filter
	relevant []string
}

func loadQueries(t testing.TB) []query {
	t.Helper()
	var qs []query
	for _, f := range fixtureLines(t, "queries.txt", 4) {
		q := query{text: f[0], relevant: strings.Split(f[3], ",")}
		if f[1] != "*" {
			q.filter.Project = f[1]
		}
		if f[2] != "*" {
			for _, k := range strings.Split(f[2], ",") {
				kind, err := search.ParseKind(k)
				if err != nil {
					t.Fatalf("query %q: %v", f[0], err)
				}
				q.filter.Kinds = append(q.filter.Kinds, kind)
			}
		}
		qs = append(qs, q)
	}
	return qs
}

// TestQuality measures the ranking on the fixture corpus: precision@5
// (relevant hits in the top 5 over 5, and over min(5, relevant) since most
// queries have fewer than 5 relevant entries) and the mean reciprocal rank of
// the first relevant hit. The floors are the measured figures, rounded down.
func TestQuality(t *testing.T) {
	docs := loadCorpus(t)
	qs := loadQueries(t)
	if len(docs) < 300 || len(qs) < 30 {
		t.Fatalf("fixture too small: %d entries, %d queries", len(docs), len(qs))
	}
	known := map[string]bool{}
	for _, d := range docs {
		if known[d.ID] {
			t.Fatalf("duplicate id %s", d.ID)
		}
		known[d.ID] = true
	}
	ix, _ := build(t, docs)
	var p5, p5norm, mrr float64
	for _, q := range qs {
		for _, id := range q.relevant {
			if !known[id] {
				t.Fatalf("query %q: unknown id %s", q.text, id)
			}
		}
		f := q.filter
		f.Limit = 10
		hits, err := ix.Search(q.text, f)
		if err != nil {
			t.Fatal(err)
		}
		got := ids(hits)
		found, rr := 0, 0.0
		for i, id := range got {
			if !slices.Contains(q.relevant, id) {
				continue
			}
			if i < 5 {
				found++
			}
			if rr == 0 {
				rr = 1 / float64(i+1)
			}
		}
		p5 += float64(found) / 5
		p5norm += float64(found) / float64(min(5, len(q.relevant)))
		mrr += rr
		if rr < 1 || found < min(5, len(q.relevant)) {
			t.Logf("weak: %q %+v: top %q, relevant %q (rr %.2f, %d/%d in top 5)",
				q.text, q.filter, got[:min(5, len(got))], q.relevant, rr, found, min(5, len(q.relevant)))
		}
	}
	n := float64(len(qs))
	p5, p5norm, mrr = p5/n, p5norm/n, mrr/n
	t.Logf("%d entries, %d queries: precision@5 %.3f, precision@5 over min(5, relevant) %.3f, MRR %.3f",
		len(docs), len(qs), p5, p5norm, mrr)
	if mrr < mrrFloor || p5norm < p5NormFloor {
		t.Errorf("below the floors: MRR %.3f (floor %.2f), normalised precision@5 %.3f (floor %.2f)",
			mrr, mrrFloor, p5norm, p5NormFloor)
	}
}

// Floors for TestQuality: the figures measured on the fixture, rounded down.
const (
	mrrFloor    = 0.95 // measured 1.000
	p5NormFloor = 0.85 // measured 0.903
)

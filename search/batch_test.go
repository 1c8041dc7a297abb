package search_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/search"
)

// TestBatchStoresSame: adding and removing documents through a Batch,
// flushed every few documents, stores exactly the keys and values the
// unbatched index does, sealed blocks, the document table and removals (by
// id and by seq) included (the last postings of open blocks too, with
// documents added after them); and a batched index answers from what it
// has not flushed yet.
func TestBatchStoresSame(t *testing.T) {
	var docs []search.Doc
	for i := range 450 {
		id, kind := fmt.Sprintf("F-%04d", i+1), search.Finding
		if i%3 == 1 {
			id, kind = fmt.Sprintf("Θ-%04d", i+1), search.Thought
		}
		docs = append(docs, doc(id, kind, fmt.Sprintf("p%d", i%3), uint64(i+1),
			fmt.Sprintf("common word%d shared%d", i, i%7)))
	}
	// Findings by id, thoughts by seq, out of several blocks of the
	// document table (64 documents each).
	gone := []search.Doc{docs[0], docs[149], docs[398], docs[3], docs[399], docs[1], docs[130], docs[397]}
	run := func(ix *search.Index, flush func()) {
		add := func(docs []search.Doc) {
			for i, d := range docs {
				if err := ix.Add(d); err != nil {
					t.Fatal(err)
				}
				if i%97 == 0 {
					flush()
				}
			}
		}
		add(docs[:400])
		for _, d := range gone {
			if err := remove(ix, d); err != nil {
				t.Fatal(err)
			}
		}
		add(docs[400:])
		flush()
	}
	plainSp := newMemSpace()
	plain := search.New(plainSp, docsOf(docs))
	run(plain, func() {})
	for _, every := range []bool{false, true} {
		sp := newMemSpace()
		b := search.NewBatch()
		ix := search.Batched(sp, docsOf(docs), b)
		flush := func() {
			if err := b.Flush(sp); err != nil {
				t.Fatal(err)
			}
		}
		if !every {
			flush = func() {}
		}
		run(ix, flush)
		hits, err := ix.Search("common shared3", search.Filter{Limit: search.MaxLimit})
		want, _ := plain.Search("common shared3", search.Filter{Limit: search.MaxLimit})
		if err != nil || fmt.Sprint(ids(hits), scores(hits)) != fmt.Sprint(ids(want), scores(want)) {
			t.Errorf("flushing %v: unflushed batch answers %v (%v), unbatched %v", every, ids(hits), err, ids(want))
		}
		if err := b.Flush(sp); err != nil {
			t.Fatal(err)
		}
		if got, want := dump(sp), dump(plainSp); got != want {
			t.Errorf("flushing %v: batched index stores\n%.300s\nunbatched\n%.300s", every, got, want)
		}
	}
}

func dump(sp *memSpace) string {
	var s string
	sp.Scan(nil, false, func(k, v []byte) (bool, error) {
		s += fmt.Sprintf("%q=%x\n", k, v)
		return true, nil
	})
	return s
}

// TestCountedAheadStoresSame: documents handed to Add with their terms
// counted ahead (a Counter, as a fold that prepares documents on another
// goroutine does, or CountTerms) store exactly what documents Add counts
// itself store, batched or not; and the counts are those of the text:
// distinct terms in byte order, each with how often it occurs.
func TestCountedAheadStoresSame(t *testing.T) {
	var docs []search.Doc
	for i := range 300 {
		d := doc(fmt.Sprintf("F-%04d", i+1), search.Finding, "p", uint64(i+1),
			fmt.Sprintf("retry retry the upload%d go.mod TestCheckout retry %d", i%5, i))
		d.Fields = append(d.Fields, search.Field{Name: "more", Text: fmt.Sprint("upload", i%5, " walrus")})
		docs = append(docs, d)
	}
	add := func(ix *search.Index, docs []search.Doc) {
		for _, d := range docs {
			if err := ix.Add(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	plain := newMemSpace()
	add(search.New(plain, docsOf(docs)), docs)
	var c search.Counter
	counted := slices.Clone(docs)
	for i := range counted {
		n := c.Count(counted[i].Fields)
		if i%2 == 1 {
			n = *search.CountTerms(counted[i].Fields)
		}
		counted[i].Counts = &n
	}
	first := counted[0].Counts
	want := search.Counts{Terms: []string{"0", "checkout", "go", "go.mod", "mod", "retri", "test", "testcheckout", "upload0", "walrus"},
		Freqs: []uint64{1, 1, 1, 1, 1, 3, 1, 1, 2, 1}, Length: 13}
	if fmt.Sprint(*first) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", *first, want)
	}
	for _, batched := range []bool{false, true} {
		sp := newMemSpace()
		if batched {
			b := search.NewBatch()
			add(search.Batched(sp, docsOf(docs), b), counted)
			if err := b.Flush(sp); err != nil {
				t.Fatal(err)
			}
		} else {
			add(search.New(sp, docsOf(docs)), counted)
		}
		if got, want := dump(sp), dump(plain); got != want {
			t.Errorf("batched %v: counted ahead stores\n%.300s\ncounted by Add\n%.300s", batched, got, want)
		}
	}
	if fmt.Sprint(*first) != fmt.Sprint(want) {
		t.Errorf("the counts changed after the Counter counted more: %v", *first)
	}
}

// TestCounterReuse: a Counter told to Reuse its arrays counts the next
// documents as a new one would (a document longer than an array
// included), into the arrays it had: counting the same documents again
// allocates nothing (words seen before, none split).
func TestCounterReuse(t *testing.T) {
	var docs [][]search.Field
	for i := range 600 {
		docs = append(docs, []search.Field{{Name: "text", Text: fmt.Sprintf("retry the upload%d walrus Retry %d", i%7, i)}})
	}
	docs = append(docs, []search.Field{{Name: "text", Text: strings.Repeat("walrus ", 5000) + "tusk"}})
	var c search.Counter
	countAll := func() {
		for _, fields := range slices.Backward(docs) {
			got := c.Count(fields)
			if want := search.CountTerms(fields); fmt.Sprint(got) != fmt.Sprint(*want) {
				t.Fatalf("counted %v, want %v", got, *want)
			}
		}
	}
	countAll()
	c.Reuse()
	countAll()
	if n := testing.AllocsPerRun(3, func() {
		c.Reuse()
		for _, fields := range docs {
			c.Count(fields)
		}
	}); n != 0 {
		t.Errorf("counting again after Reuse allocated %v times", n)
	}
}

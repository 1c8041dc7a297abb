package search_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

func doc(id string, kind search.Kind, project string, seq uint64, text string) search.Doc {
	return search.Doc{ID: id, Kind: kind, Project: project, Author: "agent-" + project, Seq: seq,
		Hash: [32]byte{byte(seq)}, Fields: []search.Field{{Name: "text", Text: text}}}
}

func sample() []search.Doc {
	return []search.Doc{
		doc("F-0001", search.Finding, "api", 1, "TestCheckout failed on CI: the payment mock times out under -race"),
		doc("L-0001", search.Learning, "api", 2, "Flaky tests usually share a global clock; inject the clock instead of sleeping"),
		doc("Θ-0001", search.Thought, "web", 3, "The login page test is failing because the session cookie is not Secure on localhost"),
		doc("M-0001", search.Memory, "web", 4, "Deploy checklist: run migrations before switching traffic; go.mod pins bbolt v1.5.0"),
		doc("F-0002", search.Finding, "web", 5, "Nothing about the query here, only CSS grid alignment"),
	}
}

func ids(hits []search.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func build(t testing.TB, docs []search.Doc) (*search.Index, *memSpace) {
	t.Helper()
	sp := newMemSpace()
	ix := search.New(sp, docsOf(docs))
	for _, d := range docs {
		if err := ix.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	return ix, sp
}

func TestSearch(t *testing.T) {
	ix, _ := build(t, sample())
	for _, tc := range []struct {
		query string
		f     search.Filter
		want  []string
	}{
		{"failing tests", search.Filter{}, []string{"Θ-0001", "F-0001", "L-0001"}},
		{"test failed", search.Filter{Project: "api"}, []string{"F-0001", "L-0001"}},
		{"test failed", search.Filter{Kinds: []search.Kind{search.Thought, search.Memory}}, []string{"Θ-0001"}},
		{"test", search.Filter{AsOfSeq: 2}, []string{"L-0001", "F-0001"}},
		{"go.mod", search.Filter{}, []string{"M-0001"}},
		{"bbolt", search.Filter{}, []string{"M-0001"}},
		{"migration", search.Filter{}, []string{"M-0001"}},
		{"test", search.Filter{Limit: 1}, []string{"Θ-0001"}},
		{"test", search.Filter{Project: "nowhere"}, nil},
		{"the of", search.Filter{}, nil},
		{"zebra", search.Filter{}, nil},
	} {
		hits, err := ix.Search(tc.query, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(hits); !slices.Equal(got, tc.want) {
			t.Errorf("Search(%q, %+v) = %q, want %q", tc.query, tc.f, got, tc.want)
		}
	}
}

func TestHit(t *testing.T) {
	long := strings.Repeat("filler words about nothing ", 20) + "the race detector found a data race in the cache" + strings.Repeat(" more filler", 20)
	ix, _ := build(t, []search.Doc{doc("F-0009", search.Finding, "api", 42, long)})
	hits, err := ix.Search("races cached", search.Filter{})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %v, err %v", hits, err)
	}
	h := hits[0]
	if h.ID != "F-0009" || h.Kind != search.Finding || h.Project != "api" || h.Author != "agent-api" ||
		h.Seq != 42 || h.Hash != [32]byte{42} || h.Score <= 0 || h.Field != "text" {
		t.Errorf("hit = %+v", h)
	}
	if !strings.Contains(h.Snippet, "data race in the cache") || !strings.HasPrefix(h.Snippet, "…") || !strings.HasSuffix(h.Snippet, "…") {
		t.Errorf("snippet %q", h.Snippet)
	}
	if !slices.Equal(h.Matched, []string{"race", "cache"}) {
		t.Errorf("matched %q", h.Matched)
	}
}

func TestTiesBySeq(t *testing.T) {
	ix, _ := build(t, []search.Doc{
		doc("L-0001", search.Learning, "p", 7, "retry the migration"),
		doc("L-0003", search.Learning, "p", 8, "retry the migration"),
		doc("L-0002", search.Learning, "p", 9, "retry the migration"),
	})
	hits, err := ix.Search("migration", search.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); !slices.Equal(got, []string{"L-0002", "L-0003", "L-0001"}) {
		t.Errorf("order %q, want newest first", got)
	}
}

func TestRemove(t *testing.T) {
	ix, sp := build(t, sample())
	if err := ix.Remove("L-0001"); err != nil {
		t.Fatal(err)
	}
	hits, _ := ix.Search("flaky clock", search.Filter{})
	if len(hits) != 0 || ix.Has("L-0001") {
		t.Errorf("removed learning still matches: %q", ids(hits))
	}
	if err := ix.Remove("L-0001"); !errors.Is(err, search.ErrNotFound) {
		t.Errorf("second remove: %v", err)
	}
	// The statistics are those of an index that never had the document,
	// except for the doc numbers already handed out.
	docs := slices.DeleteFunc(sample(), func(d search.Doc) bool { return d.ID == "L-0001" })
	fresh, _ := build(t, docs)
	for _, q := range []string{"test", "failing tests", "go.mod migrations", "clock"} {
		a, _ := ix.Search(q, search.Filter{})
		b, _ := fresh.Search(q, search.Filter{})
		if fmt.Sprint(scores(a)) != fmt.Sprint(scores(b)) {
			t.Errorf("%q: after remove %v, fresh %v", q, scores(a), scores(b))
		}
	}
	if _, n := fingerprint(sp); n == 0 {
		t.Fatal("empty space")
	}
}

func scores(hits []search.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s:%.6f", h.ID, h.Score))
	}
	return out
}

// remove takes d out of ix: a thought by its seq (it has no id entry), the
// rest by id.
func remove(ix *search.Index, d search.Doc) error {
	if d.Kind == search.Thought {
		return ix.RemoveAt(d.Seq)
	}
	return ix.Remove(d.ID)
}

// TestThoughtsHaveNoIDEntry: a thought is indexed without an id entry, so
// Has, Remove and ErrDuplicate do not see it; RemoveAt takes it out by its
// seq (and refuses a document that is not a thought), leaving what an
// index that never had it holds.
func TestThoughtsHaveNoIDEntry(t *testing.T) {
	docs := sample()
	ix, sp := build(t, docs)
	if ix.Has("Θ-0001") || !ix.Has("F-0001") {
		t.Errorf("Has(Θ-0001) %v, Has(F-0001) %v; want false, true", ix.Has("Θ-0001"), ix.Has("F-0001"))
	}
	if err := ix.Remove("Θ-0001"); !errors.Is(err, search.ErrNotFound) {
		t.Errorf("Remove(Θ-0001): %v, want ErrNotFound", err)
	}
	if err := ix.RemoveAt(1); !errors.Is(err, search.ErrNotFound) {
		t.Errorf("RemoveAt of a finding: %v, want ErrNotFound", err)
	}
	if err := ix.RemoveAt(3); err != nil {
		t.Fatal(err)
	}
	if hits, _ := ix.Search("session cookie", search.Filter{}); len(hits) != 0 {
		t.Errorf("removed thought still matches: %v", ids(hits))
	}
	if err := ix.RemoveAt(3); !errors.Is(err, search.ErrNotFound) {
		t.Errorf("RemoveAt twice: %v, want ErrNotFound (no document at seq 3 left)", err)
	}
	fresh, _ := build(t, slices.Delete(slices.Clone(docs), 2, 3))
	for _, q := range []string{"test", "clock", "deploy", "grid"} {
		a, _ := ix.Search(q, search.Filter{Limit: search.MaxLimit})
		b, _ := fresh.Search(q, search.Filter{Limit: search.MaxLimit})
		if fmt.Sprint(scores(a)) != fmt.Sprint(scores(b)) {
			t.Errorf("%q: %v after RemoveAt, %v fresh", q, scores(a), scores(b))
		}
	}
	// No key of the index names the thought.
	sp.Scan(nil, false, func(k, _ []byte) (bool, error) {
		if strings.Contains(string(k), "Θ-0001") {
			t.Errorf("key %q names the thought", k)
		}
		return true, nil
	})
}

func TestAddErrors(t *testing.T) {
	ix, sp := build(t, sample())
	if err := ix.Add(sample()[0]); !errors.Is(err, search.ErrDuplicate) {
		t.Errorf("duplicate: %v", err)
	}
	// Documents come in log order: one recorded before the last (seq 5)
	// is refused, the index unchanged (a search as of a seq counts the
	// documents after it from the end).
	before, _ := fingerprint(sp)
	if err := ix.Add(doc("F-0003", search.Finding, "api", 4, "TestCheckout again")); !errors.Is(err, search.ErrInvalid) {
		t.Errorf("a seq below the last document's: %v", err)
	}
	if after, _ := fingerprint(sp); after != before {
		t.Errorf("a refused add changed the index")
	}
	if err := ix.Add(doc("F-0003", search.Finding, "api", 5, "TestCheckout again")); err != nil {
		t.Errorf("the last document's seq again: %v", err)
	}
	if err := ix.Add(doc("", search.Finding, "p", 1, "x")); !errors.Is(err, search.ErrInvalid) {
		t.Errorf("no id: %v", err)
	}
	if err := ix.Add(doc("X-1", search.Kind(9), "p", 1, "x")); !errors.Is(err, search.ErrInvalid) {
		t.Errorf("bad kind: %v", err)
	}
	if k, err := search.ParseKind("learning"); err != nil || k != search.Learning || k.String() != "learning" {
		t.Errorf("ParseKind: %v %v", k, err)
	}
	if _, err := search.ParseKind("note"); !errors.Is(err, search.ErrInvalid) {
		t.Errorf("ParseKind(note): %v", err)
	}
}

// TestRebuildIdentical: the live index, built in steps with removals, and a
// rebuild replaying the same adds and removes hold byte-identical contents.
func TestRebuildIdentical(t *testing.T) {
	corpus := loadCorpus(t)
	replay := func() *memSpace {
		sp := newMemSpace()
		for i, d := range corpus {
			ix := search.New(sp, docsOf(corpus)) // a new Index per "transaction", like the ledger's
			if err := ix.Add(d); err != nil {
				t.Fatal(err)
			}
			if i%10 == 9 {
				if err := remove(ix, corpus[i-5]); err != nil {
					t.Fatal(err)
				}
			}
		}
		return sp
	}
	a, na := fingerprint(replay())
	b, nb := fingerprint(replay())
	if a != b || na != nb {
		t.Errorf("rebuild differs: %x (%d keys) vs %x (%d keys)", a, na, b, nb)
	}
	// A different order of adds gives different bytes: the fingerprint sees
	// it. (The documents renumbered in their new order: Add takes them in
	// log order.)
	slices.Reverse(corpus)
	for i := range corpus {
		corpus[i].Seq = uint64(i + 1)
	}
	c, _ := fingerprint(replay())
	if c == a {
		t.Error("fingerprint blind to the order of adds")
	}
}

// TestLedgerSpace: the index works in a real ledger space, written in an
// update and read in a view.
func TestLedgerSpace(t *testing.T) {
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "ledger.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = l.Update(func(tx *boltstore.Tx) error {
		sp, err := tx.Space("search")
		if err != nil {
			return err
		}
		ix := search.New(sp, docsOf(sample()))
		for _, d := range sample() {
			if err := ix.Add(d); err != nil {
				return err
			}
		}
		return ix.Remove("F-0002")
	})
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := build(t, sample())
	if err := mem.Remove("F-0002"); err != nil {
		t.Fatal(err)
	}
	err = l.View(func(tx *boltstore.Tx) error {
		sp, err := tx.Space("search")
		if err != nil {
			return err
		}
		hits, err := search.New(sp, docsOf(sample())).Search("failing tests migrations", search.Filter{})
		if err != nil {
			return err
		}
		want, _ := mem.Search("failing tests migrations", search.Filter{})
		if fmt.Sprint(scores(hits)) != fmt.Sprint(scores(want)) || len(hits) != 4 {
			t.Errorf("ledger space %v, memory %v", scores(hits), scores(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPruningExact: skipping common terms (MaxScore) never changes the top
// hits: the best 3 are the first 3 of the best 100, scores included, on a
// corpus large enough for the pruning to engage.
func TestPruningExact(t *testing.T) {
	ix, _ := build(t, synthetic(t, 5000))
	for _, q := range loadQueries(t) {
		few, err := ix.Search(q.text, search.Filter{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		many, err := ix.Search(q.text, search.Filter{Limit: search.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := scores(few), scores(many[:min(3, len(many))]); !slices.Equal(got, want) {
			t.Errorf("%q: limit 3 %v, limit 100 %v", q.text, got, want)
		}
	}
}

// TestRemoveFromBlocks: documents taken out of a term's sealed blocks and
// out of its open block stop matching, and the rest score as in an index
// that never had them; once every document is out, the term's keys are gone.
func TestRemoveFromBlocks(t *testing.T) {
	var docs []search.Doc
	for i := range 300 {
		docs = append(docs, doc(fmt.Sprintf("F-%04d", i+1), search.Finding, "p", uint64(i+1), fmt.Sprintf("common word%d", i)))
	}
	ix, sp := build(t, docs)
	gone := map[string]bool{"F-0001": true, "F-0004": true, "F-0150": true, "F-0299": true, "F-0300": true}
	for id := range gone {
		if err := ix.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	fresh, _ := build(t, slices.DeleteFunc(slices.Clone(docs), func(d search.Doc) bool { return gone[d.ID] }))
	got, err := ix.Search("common", search.Filter{Limit: search.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fresh.Search("common", search.Filter{Limit: search.MaxLimit})
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) || fmt.Sprint(scores(got)) != fmt.Sprint(scores(want)) {
		t.Errorf("after removes %v, fresh %v", ids(got)[:5], ids(want)[:5])
	}
	for _, d := range docs {
		if !gone[d.ID] {
			if err := ix.Remove(d.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	sp.Scan(nil, false, func(k, _ []byte) (bool, error) {
		if k[0] == 'p' || k[0] == 't' {
			t.Errorf("key %q left after every document was removed", k)
		}
		return true, nil
	})
	if hits, _ := ix.Search("common", search.Filter{}); len(hits) != 0 {
		t.Errorf("hits in an emptied index: %v", ids(hits))
	}
}

// TestPostingFields: every field a posting and the document table code
// (tf; kind, project, doc length, seq) reads back as added, whatever changes from one posting to
// the next (projects in runs, seqs far apart, a tf past one byte), and
// after postings are cut out of sealed and open blocks (the first of a
// block included) and more are appended: each filter finds what an index
// built from the remaining documents alone finds, with the same scores.
func TestPostingFields(t *testing.T) {
	kinds := []search.Kind{search.Thought, search.Finding, search.Learning, search.Memory}
	mk := func(i int) search.Doc {
		text := strings.Repeat("common ", 1+i%5) + fmt.Sprintf("word%d", i)
		if i%97 == 0 {
			text += strings.Repeat(" common", 300)
		}
		return doc(fmt.Sprintf("D-%04d", i), kinds[i%4], fmt.Sprintf("p%d", i/7%3), uint64(1+i*i), text)
	}
	var docs []search.Doc
	for i := range 450 {
		docs = append(docs, mk(i))
	}
	ix := search.New(newMemSpace(), docsOf(docs))
	for _, d := range docs[:400] {
		if err := ix.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	gone := map[string]bool{}
	for _, i := range []int{0, 1, 36, 37, 38, 200, 250, 398, 399} {
		id := docs[i].ID
		if err := remove(ix, docs[i]); err != nil {
			t.Fatal(err)
		}
		gone[id] = true
	}
	for _, d := range docs[400:] {
		if err := ix.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	fresh, _ := build(t, slices.DeleteFunc(slices.Clone(docs), func(d search.Doc) bool { return gone[d.ID] }))
	for _, f := range []search.Filter{
		{}, {Project: "p1"}, {Kinds: []search.Kind{search.Learning}}, {AsOfSeq: 40_000},
		{Project: "p2", Kinds: []search.Kind{search.Thought, search.Memory}, AsOfSeq: 150_000},
	} {
		f.Limit = search.MaxLimit
		got, err := ix.Search("common", f)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := fresh.Search("common", f)
		if len(want) == 0 || fmt.Sprint(ids(got), scores(got)) != fmt.Sprint(ids(want), scores(want)) {
			t.Errorf("filter %+v: %v, want %v", f, ids(got), ids(want))
		}
		for _, h := range got {
			if gone[h.ID] {
				t.Errorf("filter %+v: removed %s found", f, h.ID)
			}
		}
	}
}

// TestDamagedIndex: a block of the document table or of postings that does
// not decode is ErrCorrupt for Search and Remove, never a panic or a wrong
// answer.
func TestDamagedIndex(t *testing.T) {
	var docs []search.Doc
	for i := range 300 {
		docs = append(docs, doc(fmt.Sprintf("F-%04d", i+1), search.Finding, "p", uint64(i+1), fmt.Sprintf("common word%d", i)))
	}
	cases := []struct {
		prefix string
		damage func([]byte) []byte
	}{
		{"d", func(v []byte) []byte { return v[:len(v)-1] }},    // cut short (a posting block cut after a whole posting still decodes)
		{"d", func(v []byte) []byte { return append(v, 0x80) }}, // a varint left open
		{"p", func(v []byte) []byte { return append(v, 0x80) }},
		{"d", func(v []byte) []byte { return append([]byte{0xff, 0xff, 0x7f}, v[1:]...) }}, // a head out of range
		{"p", func(v []byte) []byte { return append([]byte{0x02, 0x01}, v[1:]...) }},       // a tf of 1 written out
	}
	for _, c := range cases {
		ix, sp := build(t, docs)
		var key []byte
		sp.Scan([]byte(c.prefix), false, func(k, _ []byte) (bool, error) { key = bytes.Clone(k); return false, nil })
		if key == nil {
			t.Fatalf("no %q key", c.prefix)
		}
		sp.Put(key, c.damage(bytes.Clone(sp.Get(key))))
		if _, err := ix.Search("common", search.Filter{Limit: search.MaxLimit}); !errors.Is(err, search.ErrCorrupt) {
			t.Errorf("%q block damaged: Search: %v, want ErrCorrupt", c.prefix, err)
		}
		if err := ix.Remove("F-0002"); !errors.Is(err, search.ErrCorrupt) {
			t.Errorf("%q block damaged: Remove: %v, want ErrCorrupt", c.prefix, err)
		}
	}
}

// TestDocTableWidens: the document table's records widen as a block needs
// (project numbers past a byte, lengths past a byte, seqs far apart, so the
// block's seq offsets widen), and every document still reads back as
// added: its project, its seq (AsOfSeq, the hit's seq) and its length (the
// score an index of it alone gives).
func TestDocTableWidens(t *testing.T) {
	var docs []search.Doc
	for i := range 300 {
		// Rising, as Add takes them (log order), and ever further apart,
		// with a jump every 50 documents.
		seq := uint64(i+1)*uint64(i+1)*uint64(i+1)*7919 + uint64(i/50)<<36
		docs = append(docs, doc(fmt.Sprintf("Θ-%04d", i), search.Thought, fmt.Sprintf("p%d", i), seq,
			strings.Repeat("common ", 1+i%3)+strings.Repeat("filler ", i)))
	}
	ix, _ := build(t, docs)
	for _, i := range []int{0, 1, 49, 50, 127, 128, 255, 256, 299} {
		d := docs[i]
		hits, err := ix.Search("common", search.Filter{Project: d.Project})
		if err != nil || len(hits) != 1 || hits[0].ID != d.ID || hits[0].Seq != d.Seq {
			t.Errorf("project %s: %v (%v), want %s at seq %d", d.Project, hits, err, d.ID, d.Seq)
		}
		hits, _ = ix.Search("common", search.Filter{AsOfSeq: d.Seq, Limit: search.MaxLimit})
		n := 0
		for _, e := range docs {
			if e.Seq <= d.Seq {
				n++
			}
		}
		if len(hits) != min(n, search.MaxLimit) {
			t.Errorf("as of seq %d: %d hits, want %d", d.Seq, len(hits), min(n, search.MaxLimit))
		}
	}
	// Scores depend on each document's length, not on its record: an
	// index of the same documents at other seqs (other widths) agrees.
	near := slices.Clone(docs)
	for i := range near {
		near[i].Seq = uint64(i + 1)
	}
	other, _ := build(t, near)
	a, _ := ix.Search("common filler", search.Filter{Limit: search.MaxLimit})
	b, _ := other.Search("common filler", search.Filter{Limit: search.MaxLimit})
	if fmt.Sprint(ids(a), scores(a)) != fmt.Sprint(ids(b), scores(b)) {
		t.Errorf("added in reverse: %v, in order %v", scores(b)[:3], scores(a)[:3])
	}
	for _, i := range []int{50, 299, 0} {
		if err := ix.RemoveAt(docs[i].Seq); err != nil {
			t.Fatal(err)
		}
		if hits, _ := ix.Search("common", search.Filter{Project: docs[i].Project}); len(hits) != 0 {
			t.Errorf("%s removed, still found", docs[i].ID)
		}
	}
}

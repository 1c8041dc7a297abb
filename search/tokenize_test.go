package search_test

import (
	"slices"
	"testing"

	"github.com/logbook-dev/logbook/search"
)

func TestTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"failing tests", []string{"fail", "test"}},
		{"The test FAILED", []string{"test", "fail"}},
		{"bump go.mod to Go 1.26", []string{"bump", "go.mod", "go", "mod", "1.26", "1", "26"}},
		{"bbolt's freelist", []string{"bbolt", "s", "freelist"}},
		{"rate-limit the API", []string{"rate", "limit", "api"}},
		{"snake_case_name", []string{"snake_case_name", "snake", "case", "name"}},
		{"TestCheckout getBalance HTTPServer", []string{"testcheckout", "test", "checkout", "getbalance", "get", "balanc", "httpserver"}},
		{"trailing dot. and _under", []string{"trail", "dot", "under"}},
		{"Migrações ÉCHOUÉES", []string{"migrações", "échouées"}},
		{"the of and", nil},
		{"test tests testing", []string{"test"}},
		{"", nil},
	} {
		if got := search.Terms(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Terms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzTerms: any input tokenizes without panicking, deterministically, into
// distinct non-empty terms of bounded length without the byte that ends a
// term in a posting key.
func FuzzTerms(f *testing.F) {
	for _, s := range []string{"failing tests", "go.mod v1.2.3", "a..b__c", "ÉÇ\x00\xff", "x.", "._.", "Θ-0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, b := search.Terms(s), search.Terms(s)
		if !slices.Equal(a, b) {
			t.Fatalf("not deterministic: %q vs %q", a, b)
		}
		seen := map[string]bool{}
		for _, term := range a {
			if term == "" || len(term) > 64 || seen[term] || slices.Contains([]byte(term), 0) {
				t.Fatalf("bad term %q in %q", term, a)
			}
			seen[term] = true
		}
		d := search.Doc{ID: "F-1", Kind: search.Finding, Seq: 1, Fields: []search.Field{{Name: "summary", Text: s}}}
		ix := search.New(newMemSpace(), docsOf([]search.Doc{d}))
		if err := ix.Add(d); err != nil {
			t.Fatal(err)
		}
		hits, err := ix.Search(s, search.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(a) > 0 && len(hits) != 1 {
			t.Fatalf("a document does not match its own text %q: %d hits", s, len(hits))
		}
	})
}

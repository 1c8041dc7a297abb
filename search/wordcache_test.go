package search

import (
	"fmt"
	"slices"
	"testing"
)

// TestWordCacheSameTerms: tokenize through a wordCache emits exactly what
// it emits without one (terms, ranges, positions), for texts that repeat
// words, mix cases, scripts, digits, identifiers and stop words — the
// second time from the cache, and after the cache was emptied for being
// full.
func TestWordCacheSameTerms(t *testing.T) {
	type token struct {
		term            string
		start, end, pos int
	}
	all := func(text string, words *wordCache) []token {
		var out []token
		tokenize(text, words, func(term string, start, end, pos int) { out = append(out, token{term, start, end, pos}) })
		return out
	}
	texts := []string{
		"Looked at the failing test; the fix is to read in chunks rather than hold the lock.",
		"The test FAILED: bump go.mod to Go 1.26, TestCheckout getBalance HTTPServer snake_case_name",
		"Migrações ÉCHOUÉES, naïve café — 東京 tests testing TESTED tested",
		"trailing dot. and _under the of and is IS Is",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa long",
	}
	for i := range wordCacheSize + 10 { // past the bound: the cache is emptied
		texts = append(texts, fmt.Sprintf("Word%d running RUNS word%d", i, i))
	}
	texts = append(texts, texts[:5]...)
	var words wordCache
	for _, text := range texts {
		if got, want := all(text, &words), all(text, nil); !slices.Equal(got, want) {
			t.Fatalf("tokenize(%q) through the cache = %v, want %v", text, got, want)
		}
	}
	if len(words.m) == 0 || len(words.m) > wordCacheSize {
		t.Fatalf("cache holds %d words, want 1..%d", len(words.m), wordCacheSize)
	}
}

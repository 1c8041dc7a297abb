package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/logbook-dev/logbook/domain"
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
		tokenize(text, words, true, func(term string, start, end, pos int) { out = append(out, token{term, start, end, pos}) })
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

// referenceTokenize is tokenize as it was written first, rune by rune,
// with compound words found by splitIdentifier alone, and a spaceless run
// cut into its characters first: the oracle of TestTokenizeAsReference.
func referenceTokenize(text string, emit func(term string, start, end, pos int)) {
	word := func(r rune) bool { return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !isSpaceless(r) }
	pos, i := 0, 0
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += n
			continue
		}
		if isSpaceless(r) {
			// bounds[k] is where character k starts: a rune, what NFKC
			// composes with it (no boundary before), and its marks.
			var bounds []int
			for i < len(text) {
				r, n := utf8.DecodeRuneInString(text[i:])
				if len(bounds) > 0 && (unicode.IsMark(r) || !norm.NFKC.PropertiesString(text[i:]).BoundaryBefore()) {
					i += n
					continue
				}
				if !isSpaceless(r) || !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				bounds = append(bounds, i)
				i += n
			}
			bounds = append(bounds, i)
			chars := len(bounds) - 1
			for k := range chars {
				emit(normalize(text[bounds[k]:bounds[k+1]]), bounds[k], bounds[k+1], pos)
				if k+1 < chars {
					emit(normalize(text[bounds[k]:bounds[k+2]]), bounds[k], bounds[k+2], pos)
				}
				pos++
			}
			continue
		}
		start := i
		i += n
		for i < len(text) {
			r, n = utf8.DecodeRuneInString(text[i:])
			if word(r) || unicode.IsMark(r) {
				i += n
				continue
			}
			if isJoiner(r) && i+n < len(text) {
				if next, _ := utf8.DecodeRuneInString(text[i+n:]); word(next) {
					i += n
					continue
				}
			}
			break
		}
		word := text[start:i]
		if parts := splitIdentifier(word); len(parts) > 1 {
			if whole := domain.FoldCase(word); len(whole) <= maxTermLen {
				emit(whole, start, i, pos)
			}
			for _, p := range parts {
				if t := normalize(p); t != "" {
					emit(t, start, i, pos)
				}
			}
		} else if t := normalize(word); t != "" {
			emit(t, start, i, pos)
		}
		pos++
	}
}

// TestTokenizeAsReference: tokenize (ASCII read inline, compound words
// found while scanning, through a wordCache) emits what the rune-by-rune
// reference emits, on random texts of letters of both cases and scripts,
// digits, joiners, spaces and punctuation.
func TestTokenizeAsReference(t *testing.T) {
	alphabet := []rune("aAbBzZeE09._ -;'ÉéßÖö東京データ한ｶﾞﾟ\u1100\u1161\u11a8\u302e\u0301\u3099\u00a0")
	rng := rand.New(rand.NewPCG(5, 6))
	var words wordCache
	for range 20_000 {
		b := make([]rune, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		text := string(b)
		var got, want []string
		tokenize(text, &words, true, func(term string, start, end, pos int) { got = append(got, fmt.Sprint(term, start, end, pos)) })
		referenceTokenize(text, func(term string, start, end, pos int) { want = append(want, fmt.Sprint(term, start, end, pos)) })
		if !slices.Equal(got, want) {
			t.Fatalf("tokenize(%q) = %q, want %q", text, got, want)
		}
	}
}

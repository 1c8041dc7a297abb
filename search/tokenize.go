package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/unicode/norm"

	"github.com/logbook-dev/logbook/domain"
)

// maxTermLen bounds a term's bytes: longer runs (hashes, base64 blobs) are
// not words anyone searches for, and they would bloat the keys.
const maxTermLen = 64

// stopWords are dropped at index and query time. The list is kept small on
// purpose: words like "not" or "no" change the meaning of a finding.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true,
	"be": true, "but": true, "by": true, "for": true, "from": true, "has": true,
	"have": true, "in": true, "is": true, "it": true, "its": true, "of": true,
	"on": true, "or": true, "that": true, "the": true, "this": true, "to": true,
	"was": true, "were": true, "will": true, "with": true, "we": true, "i": true,
}

// isWordRune reports whether r belongs to a word.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// asciiWord is isWordRune of the ASCII runes (letters and digits).
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	return t
}()

// decodeRune is utf8.DecodeRuneInString(s[i:]), an ASCII byte without
// the call.
func decodeRune(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// isLower is unicode.IsLower, an ASCII rune without the call.
func isLower(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z'
	}
	return unicode.IsLower(r)
}

// isJoiner reports whether r joins two word runs into one identifier
// (go.mod, v1.2.3, snake_case) when it sits between word runes.
func isJoiner(r rune) bool { return r == '.' || r == '_' }

// isSpaceless is domain.IsSpaceless: a run of such a script is not one
// term but its characters and their overlapping pairs (spaceless).
func isSpaceless(r rune) bool { return domain.IsSpaceless(r) }

// tokenize calls emit for each term of text, with the byte range of the word
// it came from and the word's position. An identifier made of parts (go.mod,
// snake_case, TestCheckout) emits itself, lowercased, and then each part, all
// at the same position. A run of a spaceless script emits, at each
// character's position, the character (if unigrams, or if the run is that
// one character) and the pair it begins (spaceless). words, if not nil,
// remembers what normalize made of each word (a Counter's: one map lookup
// for a word seen before).
func tokenize(text string, words *wordCache, unigrams bool, emit func(term string, start, end, pos int)) {
	pos := 0
	i := 0
	for i < len(text) {
		r, n := decodeRune(text, i)
		if !isWordRune(r) {
			i += n
			continue
		}
		if isSpaceless(r) {
			i, pos = spaceless(text, i, pos, words, unigrams, emit)
			continue
		}
		start := i
		i += n
		// split: whether splitIdentifier splits the word (compound), worked
		// out while scanning it.
		prev, split := r, false
		for i < len(text) {
			if c := text[i]; c < utf8.RuneSelf && asciiWord[c] { // the usual rune
				split = split || c >= 'A' && c <= 'Z' && isLower(prev)
				prev = rune(c)
				i++
				continue
			}
			r, n = decodeRune(text, i)
			if isWordRune(r) && !isSpaceless(r) || unicode.IsMark(r) { // a combining mark is part of its word
				split = split || unicode.IsUpper(r) && isLower(prev)
				prev = r
				i += n
				continue
			}
			if isJoiner(r) && i+n < len(text) {
				if next, _ := decodeRune(text, i+n); isWordRune(next) && !isSpaceless(next) {
					split, prev = true, r
					i += n
					continue
				}
			}
			break
		}
		word := text[start:i]
		if !split {
			if t := words.normalize(word); t != "" {
				emit(t, start, i, pos)
			}
		} else if parts := splitIdentifier(word); len(parts) > 1 {
			if whole := domain.FoldCase(word); len(whole) <= maxTermLen {
				emit(whole, start, i, pos)
			}
			for _, p := range parts {
				if t := words.normalize(p); t != "" {
					emit(t, start, i, pos)
				}
			}
		} else if t := words.normalize(word); t != "" {
			emit(t, start, i, pos)
		}
		pos++
	}
}

// spaceless emits the terms of the run of a spaceless script that starts at
// text[i] (tokenize) and returns where it ends and the position after it.
// Searching such text by its characters' pairs (bigrams, as Lucene's CJK
// analysis does) finds a word inside a sentence without a dictionary: the
// query 数据库 is 数据 and 据库, both in 使用数据库连接. A query keeps a run's
// single characters only when the run is one character, which the index
// holds for every character.
func spaceless(text string, i, pos int, words *wordCache, unigrams bool, emit func(term string, start, end, pos int)) (int, int) {
	// prev is the character before the one being read, [prevStart, start).
	prevStart, start, chars := -1, i, 0
	for {
		end := start
		if end < len(text) {
			if r, _ := decodeRune(text, end); isWordRune(r) && isSpaceless(r) {
				end = charEnd(text, end)
			}
		}
		if prevStart >= 0 {
			// prev is complete, and whether a character follows it known.
			if unigrams || (end == start && chars == 1) {
				if t := words.normalize(text[prevStart:start]); t != "" {
					emit(t, prevStart, start, pos)
				}
			}
			if end > start {
				if t := words.normalize(text[prevStart:end]); t != "" {
					emit(t, prevStart, end, pos)
				}
			}
			pos++
		}
		if end == start {
			return start, pos
		}
		prevStart, start = start, end
		chars++
	}
}

// charEnd returns where the character of a spaceless script that starts at
// text[i] ends: its rune, what composes with it under NFKC (FoldCase, which
// normalize applies: half-width ｶﾞ is ガ, a Hangul syllable written as its
// jamo, as NFD text has it, is that syllable), and the combining marks
// after it. Cut between them, a character's pieces would be terms of their
// own, and text would not find its other forms (ｶﾞｲﾄﾞ and ガイド, 한국 in
// jamo and precomposed), as it did when a run was one term.
func charEnd(text string, i int) int {
	_, n := decodeRune(text, i)
	end := i + max(n, norm.NFKC.NextBoundaryInString(text[i:], true))
	for end < len(text) {
		m, n := decodeRune(text, end)
		if !unicode.IsMark(m) {
			break
		}
		end += max(n, norm.NFKC.NextBoundaryInString(text[end:], true))
	}
	return end
}

// wordCacheSize bounds a wordCache, as stemCacheSize the stems.
const wordCacheSize = 1 << 14

// A wordCache remembers what normalize made of the words seen so far (the
// words of agents' notes repeat): normalize is a pure function of the
// word, so the term cached is the one it gives. One goroutine's: no lock.
type wordCache struct{ m map[string]string }

// normalize is normalize(word), through the cache if c is not nil.
func (c *wordCache) normalize(word string) string {
	if c == nil {
		return normalize(word)
	}
	if t, ok := c.m[word]; ok {
		return t
	}
	t := normalize(word)
	if t == "" && len(word) > maxTermLen {
		// A run too long to be a term (a hash, a base64 blob) rarely
		// comes again: caching each would fill the cache with copies.
		return ""
	}
	// word and the term may be slices of a whole document: keep copies.
	t = strings.Clone(t)
	switch {
	case c.m == nil:
		// No room reserved: a live commit's index lump (16 thoughts) makes
		// a cache of its own that sees a few dozen words, and a map made
		// for 256 was 1.1 KB of every thought_record's 45 KB.
		c.m = make(map[string]string)
	case len(c.m) >= wordCacheSize:
		clear(c.m)
	}
	c.m[strings.Clone(word)] = t
	return t
}

// splitIdentifier returns the parts of an identifier: split at joiners and
// where a lower-case letter is followed by an upper-case one (TestCheckout,
// getBalance), so a search for "checkout" finds TestCheckout. A word of one
// part (most words) gives nil, without allocating.
func splitIdentifier(word string) []string {
	if !compound(word) {
		return nil
	}
	var parts []string
	partStart := 0
	var prev rune
	for j, r := range word {
		switch {
		case isJoiner(r):
			parts = append(parts, word[partStart:j])
			partStart = j + utf8.RuneLen(r)
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			parts = append(parts, word[partStart:j])
			partStart = j
		}
		prev = r
	}
	return append(parts, word[partStart:])
}

// compound reports whether splitIdentifier splits word.
func compound(word string) bool {
	var prev rune
	for _, r := range word {
		if isJoiner(r) || unicode.IsUpper(r) && unicode.IsLower(prev) {
			return true
		}
		prev = r
	}
	return false
}

// normalize folds a word's case (domain.FoldCase: as Unicode does, so a
// word found in capitals is found in any case, a final sigma too), drops
// stop words and over-long words, and
// stems words made only of ASCII letters (the English stemmer has nothing to
// say about other scripts or about words with digits).
func normalize(word string) string {
	w := domain.FoldCase(word)
	if w == "" || len(w) > maxTermLen || stopWords[w] {
		return ""
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return w
		}
	}
	return stems.stem(w)
}

// stemCacheSize bounds the stem cache: a working vocabulary fits, and a
// flood of distinct words only empties it now and then.
const stemCacheSize = 1 << 15

// stems caches english.Stem, which converts each word to runes and tries
// its suffix lists one by one (most of a rebuild's indexing time): the
// words of agents' notes repeat, so a word is mostly stemmed once. Stem is
// a pure function of the word, so a cached stem is the one Stem gives.
var stems = stemCache{m: make(map[string]string, stemCacheSize)}

type stemCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *stemCache) stem(w string) string {
	c.mu.Lock()
	s, ok := c.m[w]
	c.mu.Unlock()
	if ok {
		return s
	}
	s = english.Stem(w, true)
	// w may be a slice of a whole document: keep copies, not the text.
	w = strings.Clone(w)
	if s == w {
		s = w
	} else {
		s = strings.Clone(s)
	}
	c.mu.Lock()
	if len(c.m) >= stemCacheSize {
		clear(c.m)
	}
	c.m[w] = s
	c.mu.Unlock()
	return s
}

// Terms returns the distinct terms of a query, in order of first appearance.
// A query is plain text: every word counts, stop words excepted.
func Terms(query string) []string {
	var terms []string
	seen := map[string]bool{}
	tokenize(query, nil, false, func(t string, _, _, _ int) {
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	})
	return terms
}

package search

import (
	"slices"
	"strings"
)

// snippetWords is the width of a snippet, in words.
const snippetWords = 24

// word is one word of a field, with whether it matched a query term.
type word struct {
	start, end int
	term       int // index of the query term it matched, -1 if none
	// matchEnd is where the longest term it matched ends: past end for
	// a character's pair (spaceless), which matched the next one too.
	matchEnd int
}

// snippet returns the window of snippetWords words, over all fields, that
// holds the most distinct query terms (then the most matches; the first such
// window on a tie), with the matched words as written. A document that
// matched no term in any field (impossible for a hit) gets its first words.
func snippet(fields []Field, terms []string) (field, text string, matched []string) {
	bestDistinct, bestCount := -1, -1
	// index[term] is the term's index in terms: a query of spaceless text
	// has a term per character (up to 1000), each looked up for every
	// character of a field (two terms each).
	index := make(map[string]int, len(terms))
	for i, t := range terms { // distinct (Terms)
		index[t] = i
	}
	for _, f := range fields {
		words := fieldWords(f.Text, index)
		if len(words) == 0 {
			continue
		}
		counts := make([]int, len(terms))
		distinct, count := 0, 0
		add := func(w word, d int) {
			if w.term < 0 {
				return
			}
			counts[w.term] += d
			count += d
			if d > 0 && counts[w.term] == 1 {
				distinct++
			} else if d < 0 && counts[w.term] == 0 {
				distinct--
			}
		}
		// Slide a window [lo, lo+snippetWords) over the words.
		for i := 0; i < min(snippetWords, len(words)); i++ {
			add(words[i], 1)
		}
		for lo := 0; ; lo++ {
			if distinct > bestDistinct || (distinct == bestDistinct && count > bestCount) {
				bestDistinct, bestCount = distinct, count
				hi := min(lo+snippetWords, len(words))
				field, text, matched = f.Name, cut(f.Text, words, lo, hi), matchedWords(f.Text, words[lo:hi])
			}
			if lo+snippetWords >= len(words) {
				break
			}
			add(words[lo], -1)
			add(words[lo+snippetWords], 1)
		}
	}
	return field, text, matched
}

// fieldWords lists the words of text; a joined identifier is one word that
// matches if any of its terms does.
func fieldWords(text string, index map[string]int) []word {
	var words []word
	last := -1
	tokenize(text, nil, true, func(t string, start, end, pos int) {
		if pos != last {
			last = pos
			words = append(words, word{start: start, end: end, term: -1})
		}
		w := &words[len(words)-1]
		if i, ok := index[t]; ok {
			if w.term < 0 {
				w.term = i
			}
			w.matchEnd = max(w.matchEnd, end)
		}
	})
	return words
}

// cut returns the text of words [lo, hi), with an ellipsis where it trims;
// a pair of characters matched at the last word ends it (matchedWords
// lists it whole).
func cut(text string, words []word, lo, hi int) string {
	start, end := words[lo].start, max(words[hi-1].end, words[hi-1].matchEnd)
	if lo == 0 {
		start = 0
	}
	if hi == len(words) {
		end = len(text)
	}
	s := strings.TrimSpace(text[start:end])
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(words) {
		s += "…"
	}
	return s
}

// matchedWords lists the matched words as written; matched pairs of
// characters that overlap make one: 连接 and 接池 are 连接池.
func matchedWords(text string, words []word) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		if words[i].term < 0 {
			continue
		}
		start, end := words[i].start, words[i].matchEnd
		for i+1 < len(words) && words[i+1].start < end {
			i++
			if words[i].term >= 0 {
				end = max(end, words[i].matchEnd)
			}
		}
		if s := text[start:end]; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

package domain

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// FoldCase folds s for case-insensitive matching: Unicode's full case
// folding (CaseFolding.txt's C and F mappings, golang.org/x/text/cases'
// Fold), so that "Straße" and "STRASSE" fold to "strasse" and "ᾳ" to "αι",
// with every rune of a case folding orbit first mapped to the lower case
// of its upper case (one rune for the orbit: unicode.SimpleFold; checked
// over every rune by TestFoldCaseOrbits), so two strings equal under
// strings.EqualFold fold to the same string, and a substring search in
// folded strings is case-insensitive. strings.ToLower is not: a final
// sigma (ς), the micro sign (µ) and the long s (ſ) are lower case already,
// and their orbits' upper-case letters lower to σ, μ and s; nor is simple
// folding, which leaves ß alone. Beyond Unicode's folding (which has the
// Turkic mappings apart, and folds İ to i and a combining dot), the
// Turkish İ and ı fold to i, whatever the language, and text is composed
// (NFKC), so that an accent typed apart, a ligature or full-width letters
// fold as the letters they show (TestFoldCaseComposes; EqualFold strings
// still fold equal, TestFoldCaseOrbitsWithMarks). The marks Arabic and
// Hebrew text may carry or leave out (vowel points, cantillation, the
// Arabic tatweel: optionalMark) are left out, as a reader does not see
// two words in "مَرْحَبًا" and "مرحبا", or "שָׁלוֹם" and "שלום"
// (TestFoldCaseOptionalMarks). ASCII text folds as strings.ToLower does.
func FoldCase(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return strings.ToLower(s)
	}
	// First each rune to its orbit's (so that strings equal under
	// EqualFold are equal from here on: composing first would not keep
	// them so, as "I" and a dot above compose to "İ", "i" and one do not),
	// then the compatibility composition (NFKC): "é" typed as e and a
	// combining accent is the é of one rune, "ﬁ" is "fi", "ＡＢＣ" is "ABC";
	// then the case of what composition made, which composes anew (rare).
	// The full folding of a rune that has one (ß is ss) follows its orbit's.
	s = fullFold(strings.Map(foldRune, s))
	if c := norm.NFKC.String(s); c != s {
		s = fullFold(strings.Map(foldRune, c))
		if !norm.NFKC.IsNormalString(s) {
			s = norm.NFKC.String(s)
		}
	}
	return s
}

// foldRune is r's orbit's rune, or -1 (left out) for an optional mark.
func foldRune(r rune) rune {
	if r >= 0x0591 && r <= 0x06ED && optionalMark(r) {
		return -1
	}
	return unicode.ToLower(unicode.ToUpper(r))
}

// optionalMark reports whether r is a mark that Arabic or Hebrew text may
// carry or leave out without being another word: the Hebrew points and
// cantillation marks (the nonspacing marks of U+0591–U+05C7), the Arabic
// harakat, Quranic annotation marks and the tatweel (U+0640, a letter
// that only stretches a word). Not the madda and hamza (U+0653–U+0655),
// which NFKC composes into letters of their own (ا and U+0654 are أ).
func optionalMark(r rune) bool {
	switch {
	case r == 0x0640:
		return true
	case r <= 0x05C7:
		return unicode.Is(unicode.Mn, r)
	case r >= 0x0610 && (r < 0x0653 || r > 0x0655):
		return unicode.Is(unicode.Mn, r)
	}
	return false
}

// fullFold is Unicode's full case folding of s; s itself when nothing
// folds, which the Caser's Span tells on a pooled copy of s without
// allocating (its String allocates a buffer every call; most text has no
// rune that the orbits' folding left to fold). A Caser is not shared
// between goroutines: one per call, which Fold's costs nothing.
func fullFold(s string) string {
	c := cases.Fold()
	bp := spanBufs.Get().(*[]byte)
	b := append((*bp)[:0], s...)
	n, err := c.Span(b, true)
	*bp = b
	spanBufs.Put(bp)
	if n == len(s) && err == nil {
		return s
	}
	return c.String(s)
}

// spanBufs holds the scratch copies fullFold spans.
var spanBufs = sync.Pool{New: func() any { return new([]byte) }}

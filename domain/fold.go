package domain

import (
	"strings"
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
	if r < utf8.RuneSelf { // what the Unicode tables give, looked up for less
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
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

// fullFold is Unicode's full case folding of s, a string of runes each
// its orbit's (foldRune), valid UTF-8 (strings.Map's): s itself unless it
// holds a rune that full folding changes (fullFolds), as most text does
// not. The folding is rune by rune, so only those runes are replaced, by
// their folding (fullFolded): the Caser over the whole string took 40% of
// a task_list search of 10,000 tasks whose texts hold a ß (and spanning s
// to tell, the Caser's Span, cost a copy and a look-up per rune). Equal to
// cases.Fold over every rune in context: TestFullFoldRuneByRune.
func fullFold(s string) string {
	for i, r := range s {
		if r >= 0xDF && unicode.Is(fullFolds, r) {
			var b strings.Builder
			b.Grow(len(s) + 8)
			b.WriteString(s[:i])
			for s = s[i:]; s != ""; {
				r, n := utf8.DecodeRuneInString(s)
				f := s[:n]
				if r >= 0xDF {
					if folded, ok := fullFolded[r]; ok {
						f = folded
					}
				}
				b.WriteString(f)
				s = s[n:]
			}
			return b.String()
		}
	}
	return s
}

// fullFolded is the full case folding of each rune of fullFolds.
var fullFolded = func() map[rune]string {
	m := map[rune]string{}
	fold := cases.Fold()
	for _, rg := range fullFolds.R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			m[r] = fold.String(string(r))
		}
	}
	return m
}()

// fullFolds holds the runes, each its orbit's (foldRune), that Unicode's
// full case folding changes (CaseFolding.txt's F mappings, and the
// Cherokee small letters, which fold to the capitals): exactly those, over
// every rune (TestFullFoldsExactly).
var fullFolds = &unicode.RangeTable{LatinOffset: 1, R16: []unicode.Range16{
	{Lo: 0x00DF, Hi: 0x00DF, Stride: 1}, {Lo: 0x0149, Hi: 0x0149, Stride: 1},
	{Lo: 0x01F0, Hi: 0x01F0, Stride: 1}, {Lo: 0x0390, Hi: 0x0390, Stride: 1},
	{Lo: 0x03B0, Hi: 0x03B0, Stride: 1}, {Lo: 0x0587, Hi: 0x0587, Stride: 1},
	{Lo: 0x13F8, Hi: 0x13FD, Stride: 1}, {Lo: 0x1E96, Hi: 0x1E9A, Stride: 1},
	{Lo: 0x1F50, Hi: 0x1F56, Stride: 2}, {Lo: 0x1F80, Hi: 0x1F87, Stride: 1},
	{Lo: 0x1F90, Hi: 0x1F97, Stride: 1}, {Lo: 0x1FA0, Hi: 0x1FA7, Stride: 1},
	{Lo: 0x1FB2, Hi: 0x1FB4, Stride: 1}, {Lo: 0x1FB6, Hi: 0x1FB7, Stride: 1},
	{Lo: 0x1FC2, Hi: 0x1FC4, Stride: 1}, {Lo: 0x1FC6, Hi: 0x1FC7, Stride: 1},
	{Lo: 0x1FD2, Hi: 0x1FD3, Stride: 1}, {Lo: 0x1FD6, Hi: 0x1FD7, Stride: 1},
	{Lo: 0x1FE2, Hi: 0x1FE4, Stride: 1}, {Lo: 0x1FE6, Hi: 0x1FE7, Stride: 1},
	{Lo: 0x1FF2, Hi: 0x1FF4, Stride: 1}, {Lo: 0x1FF6, Hi: 0x1FF7, Stride: 1},
	{Lo: 0xAB70, Hi: 0xABBF, Stride: 1}, {Lo: 0xFB00, Hi: 0xFB06, Stride: 1},
	{Lo: 0xFB13, Hi: 0xFB17, Stride: 1},
}}

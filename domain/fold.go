package domain

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FoldCase maps each rune of s to the lower case of its upper case, which
// is one rune, lower case where it can be, for all the runes of a Unicode
// case folding orbit (unicode.SimpleFold; checked over every rune by
// TestFoldCaseOrbits). Two strings equal under strings.EqualFold fold to
// the same string, so a substring search in folded strings is
// case-insensitive. strings.ToLower is not: a final sigma (ς), the micro
// sign (µ) and the long s (ſ) are lower case already, and their orbits'
// upper-case letters lower to σ, μ and s. Beyond EqualFold, the Turkish
// İ and ı fold to i, and text is composed (NFKC), so that an accent typed
// apart, a ligature or full-width letters fold as the letters they show
// (TestFoldCaseComposes; EqualFold strings still fold equal,
// TestFoldCaseOrbitsWithMarks). ASCII text folds as strings.ToLower does.
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
	s = strings.Map(foldRune, s)
	if c := norm.NFKC.String(s); c != s {
		s = strings.Map(foldRune, c)
		if !norm.NFKC.IsNormalString(s) {
			s = norm.NFKC.String(s)
		}
	}
	return s
}

func foldRune(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }

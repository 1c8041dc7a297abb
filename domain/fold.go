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
// İ and ı fold to i. ASCII text folds as strings.ToLower does.
func FoldCase(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return strings.ToLower(s)
	}
	// First the compatibility composition (NFKC): "é" typed as e and a
	// combining accent is the é of one rune, "ﬁ" is "fi", "ＡＢＣ" is "ABC".
	s = norm.NFKC.String(s)
	s = strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, s)
	if !norm.NFKC.IsNormalString(s) {
		s = norm.NFKC.String(s) // a lower case that composes anew (rare)
	}
	return s
}

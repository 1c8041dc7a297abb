package domain

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// FoldCase maps each rune of s to one rune of its Unicode case folding
// orbit (unicode.SimpleFold): the lower-case ASCII letter if the orbit has
// an ASCII letter, else its least rune. Two strings equal under
// strings.EqualFold fold to the same string, so a substring search in
// folded strings is case-insensitive. strings.ToLower is not: a final
// sigma (ς), the micro sign (µ) and the long s (ſ) are lower case already,
// and their orbits' upper-case letters lower to σ, μ and s. Lower-case
// ASCII text folds to itself; ASCII text folds as strings.ToLower does.
func FoldCase(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return strings.ToLower(s)
	}
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf {
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			return r
		}
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < utf8.RuneSelf {
				return unicode.ToLower(f)
			}
			least = min(least, f)
		}
		return least
	}, s)
}

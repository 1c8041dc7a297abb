package domain

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// TestFoldCaseOrbits: every rune of a Unicode case folding orbit folds to
// the same rune, so strings equal under strings.EqualFold fold equal.
func TestFoldCaseOrbits(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := FoldCase(string(r))
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if got := FoldCase(string(f)); got != want {
				t.Fatalf("%U folds to %q but %U, of its orbit, to %q", r, want, f, got)
			}
		}
	}
}

// TestFoldCaseOrbitsWithMarks: strings equal under strings.EqualFold fold
// equal when a letter carries a combining mark too, however the letter's
// case lets it compose: "ᾼ" (U+1FBC) with an acute has no precomposed
// form, "ᾳ" with one has (U+1FB4), and "I" with a dot above composes to
// "İ" where "i" with one does not.
func TestFoldCaseOrbitsWithMarks(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.SimpleFold(r) == r {
			continue
		}
		for m := rune(0x300); m <= 0x36f; m++ {
			want := FoldCase(string(r) + string(m))
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if got := FoldCase(string(f) + string(m)); got != want {
					t.Fatalf("%U %U folds to %+q but %U %U, equal under EqualFold, to %+q", r, m, want, f, m, got)
				}
			}
		}
	}
}

func TestFoldCase(t *testing.T) {
	for in, want := range map[string]string{
		"Go HTTP":     "go http",
		"ΟΔΌΣ":        "οδόσ",
		"οδός":        "οδόσ",
		"5µs 5ΜS":     "5μs 5μs",
		"Maſs":        "mass",
		"\u212Aelvin": "kelvin",
		"ÉCHOUÉES":    "échouées",
		"İstanbul ıi": "istanbul ii",
	} {
		if got := FoldCase(in); got != want {
			t.Errorf("FoldCase(%q) = %q, want %q", in, got, want)
		}
		if !strings.EqualFold(in, want) && !strings.ContainsAny(in, "İı") {
			t.Errorf("%q and %q are not equal under EqualFold", in, want)
		}
	}
}

// TestFullFoldsExactly: fullFolds holds exactly the runes, each its
// orbit's, that Unicode's full case folding changes, over every rune, so
// fullFold leaves alone only strings that folding would leave as they are.
func TestFullFoldsExactly(t *testing.T) {
	fold := cases.Fold()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		f := foldRune(r)
		if !utf8.ValidRune(r) || f < 0 {
			continue
		}
		s := string(f)
		if changes, held := fold.String(s) != s, unicode.Is(fullFolds, f); changes != held || (held && f < 0xDF) {
			t.Errorf("rune %U (its orbit's %U): full folding changes it %v, in fullFolds %v", r, f, changes, held)
		}
	}
}

// TestFoldCaseFull: FoldCase is Unicode's full case folding, not only the
// simple one EqualFold applies: ß and ẞ are ss, a Greek letter with an
// iota subscript (or adscript, in capitals) is the letter and ι.
func TestFoldCaseFull(t *testing.T) {
	for in, want := range map[string]string{
		"Straße":       "strasse",
		"STRASSE":      "strasse",
		"STRAẞE":       "strasse",
		"ᾳ ᾼ ΑΙ ᾴ":     "αι αι αι άι",
		"ŉ":            "ʼn",
		"\ufb00\ufb06": "ffst",
	} {
		if got := FoldCase(in); got != want {
			t.Errorf("FoldCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFoldCaseOptionalMarks: Arabic and Hebrew words fold to their
// letters, the vowel points, cantillation and the tatweel left out,
// however they were typed (presentation forms included); the hamza and
// madda stay, composed into their letters.
func TestFoldCaseOptionalMarks(t *testing.T) {
	for in, want := range map[string]string{
		"مَرْحَبًا":                      "مرحبا",
		"مرحـــبا":                       "مرحبا",
		"\ufe8d\ufee0\ufee4\ufe8e\ufe80": "الماء",  // presentation forms
		"\u0627\u0654":                   "\u0623", // alef and hamza above: أ
		"أَمْر":                          "أمر",
		"שָׁלוֹם":                        "שלום",
		"\ufb2a\u05dc\u05d5\u05dd":       "שלום",      // shin with shin dot, a presentation form
		"בְּרֵאשִׁ֖ית":                   "בראשית",    // with a cantillation mark
		"a\u05be b":                      "a\u05be b", // maqaf is punctuation, kept
	} {
		if got := FoldCase(in); got != want {
			t.Errorf("FoldCase(%+q) = %+q, want %+q", in, got, want)
		}
	}
}

// TestFoldCaseComposes: text that is the same to a reader folds the same,
// however its letters were typed: an accent apart (e and U+0301) or
// composed, a ligature, full-width letters.
func TestFoldCaseComposes(t *testing.T) {
	for in, want := range map[string]string{
		"cafe\u0301":    "café",
		"CAFE\u0301":    "café",
		"café":          "café",
		"\ufb01le":      "file",
		"ＡＰＩ":           "api",
		"\u212bngstrom": "ångstrom", // the Angstrom sign
		"ΟΔΟ\u0301Σ":    "οδόσ",
	} {
		if got := FoldCase(in); got != want {
			t.Errorf("FoldCase(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Words("हिन्दी, cafe\u0301!"); !slices.Equal(got, []string{"हिन्दी", "café"}) {
		t.Errorf("Words split at a combining mark or kept it apart: %q", got)
	}
	// A script written without spaces: each character a word, its marks
	// kept (NFKC composes か and the combining mark to が).
	want := []string{"使", "用", "连", "接", "池", "go", "语", "言", "v2", "テ", "ス", "ト", "が", "데", "이", "터", "ข้", "อ", "มู", "ล"}
	if got := Words("使用连接池, Go语言v2 テスト か\u3099 데이터 ข้อมูล"); !slices.Equal(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
	// A mark of a spaceless script (the Hangul tone marks U+302E, U+302F;
	// U+16FF0 of Han) is its character's, once: it was a word again.
	for in, want := range map[string][]string{
		"가\u302e나":      {"가\u302e", "나"},
		"가\u302e\u302f": {"가\u302e\u302f"},
		"中\U00016FF0文":  {"中\U00016FF0", "文"},
		"a\u302e가":      {"a\u302e", "가"},
	} {
		if got := Words(in); !slices.Equal(got, want) {
			t.Errorf("Words(%+q) = %+q, want %+q", in, got, want)
		}
	}
}

// TestFullFoldRuneByRune: fullFold, which replaces only the runes of
// fullFolds, is Unicode's full case folding (cases.Fold) of the whole
// string, for every rune (its orbit's) between others that fold and
// others that do not; foldRune's ASCII is the Unicode tables' too.
func TestFullFoldRuneByRune(t *testing.T) {
	fold := cases.Fold()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if r < utf8.RuneSelf && foldRune(r) != unicode.ToLower(unicode.ToUpper(r)) {
			t.Errorf("foldRune(%U) = %U", r, foldRune(r))
		}
		f := foldRune(r)
		if f < 0 {
			continue
		}
		for _, s := range []string{string(f), "aß" + string(f) + "x", "x" + string(f) + "ﬀ" + string(f)} {
			if got, want := fullFold(s), fold.String(s); got != want {
				t.Fatalf("fullFold(%+q) = %+q, cases.Fold %+q", s, got, want)
			}
		}
	}
}

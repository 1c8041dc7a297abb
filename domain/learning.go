package domain

import (
	"hash/fnv"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quality gates of a learning: enough text, and enough distinct words that
// the text is not padding.
const (
	MinPatternLength    = 50
	MinContextLength    = 100
	MinPatternWords     = 6
	MinContextWords     = 12
	DuplicateSimilarity = 0.6 // see Similarity
)

func learningID(doc string) Rule { return idOf(LearningPrefix, doc) }

// RecordLearning records a reusable lesson for a project.
var RecordLearning = Command{
	Name: "learning_record",
	Fields: []Field{
		field("pattern", str("The lesson itself, stated so another agent can apply it: at least 50 characters and 6 distinct words.").
			length(MinPatternLength, 2000).text(Prose)),
		field("context", str("Where it was learnt and when it applies: at least 100 characters and 12 distinct words.").
			length(MinContextLength, 8000).text(Prose)),
		field("project", projectSlug("Project the learning belongs to.")),
		field("tags", array("Tags; duplicates are removed.", str("A tag.").length(1, 64).text(Line), 20)),
		field("source_task_id", taskID("Task the learning came from; it must exist.")),
		field("supersedes", learningID("A live learning of the same project this one replaces, e.g. \"L-0001\": it is marked superseded "+
			"in the same commit, and the near-duplicate check ignores it.")),
	},
	Required: []string{"pattern", "context", "project"},
	check:    checkLearning,
}

func checkLearning(args *Value, add func(path, msg string)) {
	for _, f := range []struct {
		name string
		min  int
	}{{"pattern", MinPatternWords}, {"context", MinContextWords}} {
		if v := args.Get(f.name); v != nil && v.kind == String && len(distinct(Words(v.text))) < f.min {
			add(f.name, "must have at least "+Plural(f.min, "distinct word"))
		}
	}
}

// SupersedeLearning marks a learning as replaced by a newer one.
var SupersedeLearning = Command{
	Name: "learning_supersede",
	Fields: []Field{
		field("learning_id", learningID("Id of the learning that is replaced, e.g. \"L-0001\"; it must be live.")),
		field("by", learningID("Id of the live learning of the same project that replaces it.")),
	},
	Required: []string{"learning_id", "by"},
}

// Words are the case-folded runs of letters, combining marks and digits of
// s (FoldCase: a word in capitals is the same word, a final sigma's too, an
// accent typed apart the same as one composed; a mark, as in "हिन्दी", does
// not split its word), each character of a script written without spaces
// a word of its own (IsSpaceless; as word processors count them): a
// learning written in Chinese has its words, and pairs of them to compare.
func Words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(FoldCase(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	}) {
		start := 0 // of the part of w not yet out
		for i, r := range w {
			// A rune already out as a mark of the character before (a
			// Hangul tone mark is of a spaceless script), or not a letter,
			// begins no character.
			if i < start || !unicode.IsLetter(r) || !IsSpaceless(r) {
				continue
			}
			if start < i {
				out = append(out, w[start:i])
			}
			// The character and the marks after it.
			end := i + utf8.RuneLen(r)
			for end < len(w) {
				m, n := utf8.DecodeRuneInString(w[end:])
				if !unicode.IsMark(m) {
					break
				}
				end += n
			}
			out = append(out, w[i:end])
			start = end
		}
		if start < len(w) {
			out = append(out, w[start:])
		}
	}
	return out
}

// IsSpaceless reports whether r, a letter, is of a script written without
// spaces between words — Han, Hiragana, Katakana (and their prolonged
// sound mark), Thai, Lao, Khmer, Myanmar — or Hangul, whose spaced words
// are long compounds: its characters are words (Words), and the search
// index cuts its runs into characters and pairs of them.
func IsSpaceless(r rune) bool {
	return r >= 0x0E00 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) || r == 0x30FC || r == 0xFF70 ||
		unicode.Is(unicode.Thai, r) || unicode.Is(unicode.Lao, r) || unicode.Is(unicode.Khmer, r) || unicode.Is(unicode.Myanmar, r))
}

func distinct(words []string) map[string]bool {
	set := make(map[string]bool, len(words))
	for _, w := range words {
		set[w] = true
	}
	return set
}

// Shingles are the distinct pairs of consecutive words of s (its words,
// if it has fewer than two), each as its 64-bit FNV-1a hash, sorted: a
// compact, deterministic form that projections can store and Similarity
// compares by merging. (Two pairs sharing a hash are negligibly rare, and
// would only nudge a similarity upwards.)
func Shingles(s string) []uint64 {
	w := Words(s)
	var out []uint64
	add := func(parts ...string) {
		h := fnv.New64a()
		for i, p := range parts {
			if i > 0 {
				h.Write([]byte{' '})
			}
			h.Write([]byte(p))
		}
		out = append(out, h.Sum64())
	}
	if len(w) < 2 {
		for _, x := range w {
			add(x)
		}
	}
	for i := 1; i < len(w); i++ {
		add(w[i-1], w[i])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Similarity is the Jaccard similarity |A∩B| / |A∪B| of two shingle sets
// (sorted, as Shingles returns them), from 0 (nothing in common) to 1 (the
// same word pairs).
//
// Why word pairs and 0.6: changing one word of an n-word text removes at
// most two of its n-1 pairs, so a resubmission with a few words changed or
// a sentence added stays well above 0.6, while two different lessons about
// the same subject share words but few consecutive pairs (below 0.2 in the
// tests' examples). Single words would make every learning about the same
// subsystem look alike; longer shingles would let a light rewording through.
func Similarity(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			common++
			i++
			j++
		}
	}
	return float64(common) / float64(len(a)+len(b)-common)
}

// LearningText is the text a learning's near-duplicates are judged on.
func LearningText(pattern, context string) string { return pattern + "\n" + context }

package domain

import (
	"strings"
	"testing"
)

func TestSimilarity(t *testing.T) {
	const (
		a = "Retry the flock with a blocking wait instead of polling every fifty milliseconds. " +
			"Found while profiling concurrent serve processes sharing one ledger file."
		// Two words changed and a clause added.
		reworded = "Retry the flock with a blocking wait instead of polling every 50 milliseconds. " +
			"Found while profiling concurrent serve processes sharing one ledger file, on every machine."
		// Same subject, same vocabulary, another lesson.
		other = "Hold the ledger file lock only while a commit runs: processes sharing one file " +
			"otherwise wait for the lock, whatever the polling interval of the flock."
	)
	cases := []struct {
		name     string
		x, y     string
		min, max float64
	}{
		{"identical", a, a, 1, 1},
		{"case and punctuation", a, strings.ToUpper(strings.ReplaceAll(a, ".", " !")), 1, 1},
		{"light rewording", a, reworded, DuplicateSimilarity, 0.99},
		{"same subject", a, other, 0, 0.2},
		{"nothing in common", a, "Prefer table-driven tests with got and want.", 0, 0},
	}
	for _, tc := range cases {
		got := Similarity(Shingles(tc.x), Shingles(tc.y))
		if got < tc.min || got > tc.max {
			t.Errorf("%s: similarity %.3f, want in [%.2f, %.2f]", tc.name, got, tc.min, tc.max)
		}
		if back := Similarity(Shingles(tc.y), Shingles(tc.x)); back != got {
			t.Errorf("%s: not symmetric: %.3f vs %.3f", tc.name, got, back)
		}
	}
	if Similarity(Shingles(""), Shingles("")) != 1 || len(Shingles("one")) != 1 {
		t.Error("short texts")
	}
}

func TestRepoPathProblem(t *testing.T) {
	for p, bad := range map[string]bool{
		"a.go": false, "dir/sub/a.go": false, "./a.go": false, ".github/x.yml": false, "a..b": false, "ab:c": false, "a:b": true,
		"/etc/passwd": true, `\\server\share`: true, "C:/x": true, `c:\x`: true, "..": true, "a/../b": true,
		`a\..\b`: true, "a//b": true, "dir/": true, "./C:/x": true, `.\c:x`: true, "././d:": true, "./ab:c": false,
	} {
		if got := RepoPathProblem(p) != ""; got != bad {
			t.Errorf("RepoPathProblem(%q) = %q, want refused %v", p, RepoPathProblem(p), bad)
		}
		// A path accepted is accepted as it is kept (finding_record
		// writes CleanRepoPath's spelling).
		if c := CleanRepoPath(p); !bad && RepoPathProblem(c) != "" {
			t.Errorf("RepoPathProblem(%q) accepts it, but refuses %q, its spelling kept: %q", p, c, RepoPathProblem(c))
		}
	}
}

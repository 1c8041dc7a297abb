package domain

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// FindingCategories are the kinds of finding an agent records.
var FindingCategories = []string{"test_result", "code_pattern", "architecture", "bug", "gap", "risk"}

// Bounds of a finding's files.
const (
	MaxFindingFiles = 50
	MaxPathLength   = 1024 // characters; far above any real repository path
)

// RecordFinding appends a finding to a task: append-only, never edited.
var RecordFinding = Command{
	Name: "finding_record",
	Fields: []Field{
		field("task_id", taskID("Id of the task the finding was made on, e.g. \"T-0001\".")),
		field("category", enum("Kind of finding.", FindingCategories...)),
		field("summary", str("One-line summary of the finding.").length(1, 300).text(Line)),
		field("details", str("The finding in full: evidence, reasoning, what to do.").length(0, 8000).text(Notes)),
		field("files", array("Repository-relative paths the finding concerns: no absolute path, drive letter, "+
			"empty segment or \"..\" segment, no control character, at most 1024 characters each.",
			str("A repository-relative path, e.g. \"ledger/tx.go\".").length(1, MaxPathLength).text(Line), MaxFindingFiles)),
	},
	Required: []string{"task_id", "category", "summary"},
	check:    checkFinding,
}

func checkFinding(args *Value, add func(path, msg string)) {
	files := args.Get("files")
	if files == nil {
		return
	}
	for i, f := range files.items {
		if f.kind == String {
			if msg := RepoPathProblem(f.text); msg != "" {
				add(indexPath("files", i), msg)
			}
		}
	}
}

// RepoPathProblem says why p is not a repository-relative path, or "". A
// path names a file inside the repository whatever the platform: it is
// relative (no leading slash or backslash, no drive letter), and none of
// its segments (split at "/" or "\") is empty or "..", so it cannot climb
// out. Control characters and length are the rule's Text and MaxLen.
func RepoPathProblem(p string) string {
	switch {
	case p == "" || utf8.RuneCountInString(p) > MaxPathLength:
		return ""
	case p[0] == '/' || p[0] == '\\':
		return "must be relative to the repository, not absolute"
	}
	// The drive letter of the path as it is kept (CleanRepoPath): "./C:/x"
	// is written "C:/x".
	if c := CleanRepoPath(p); len(c) >= 2 && c[1] == ':' && ('a' <= c[0]|0x20 && c[0]|0x20 <= 'z') {
		return "must be relative to the repository, not start with a drive letter"
	}
	for _, seg := range strings.Split(strings.ReplaceAll(p, "\\", "/"), "/") {
		switch seg {
		case "..":
			return "must not contain a \"..\" segment"
		case "":
			return "must not contain an empty segment (\"//\" or a trailing slash)"
		}
	}
	return ""
}

// CleanRepoPath is the one spelling of a repository-relative path that
// RepoPathProblem accepts: its segments (split at "/" or "\", as that rule
// splits them) joined by "/", "." segments left out. "a\\b", "./a/b" and
// "a/./b" name the file "a/b" names, and are written so; a path of "."
// segments alone (the repository itself) is ".".
func CleanRepoPath(p string) string {
	if !strings.ContainsAny(p, "\\.") {
		return p
	}
	segs := strings.Split(strings.ReplaceAll(p, "\\", "/"), "/")
	segs = slices.DeleteFunc(segs, func(s string) bool { return s == "." })
	if len(segs) == 0 {
		return "."
	}
	return strings.Join(segs, "/")
}

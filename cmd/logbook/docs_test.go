package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
)

// linkProblems lists the relative links of a markdown file (at path, inside
// root) that leave root or name nothing there. Links in fenced code blocks
// are code, not links; URLs with a scheme and in-page anchors are not
// checked.
func linkProblems(root, path, text string) []string {
	var prose strings.Builder
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if !fenced {
			prose.WriteString(line + "\n")
		}
	}
	var targets []string
	for _, m := range inlineLink.FindAllStringSubmatch(prose.String(), -1) {
		targets = append(targets, m[1])
	}
	for _, m := range refLink.FindAllStringSubmatch(prose.String(), -1) {
		targets = append(targets, m[1])
	}
	var problems []string
	for _, target := range targets {
		if strings.HasPrefix(target, "#") || regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) {
			continue
		}
		file, _, _ := strings.Cut(target, "#")
		if strings.HasPrefix(file, "/") {
			problems = append(problems, target+": absolute path (use one relative to the file)")
			continue
		}
		resolved := filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
		rel, err := filepath.Rel(root, resolved)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			problems = append(problems, target+": leaves the repository")
			continue
		}
		if _, err := os.Stat(resolved); err != nil {
			problems = append(problems, target+": no such file in the repository")
		}
	}
	return problems
}

// TestDocLinksStayInRepo: every relative link in the repository's
// top-level markdown and docs/ names a file of the repository, so a fresh
// clone has everything its README points to.
func TestDocLinksStayInRepo(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	if len(files) < 3 {
		t.Fatalf("found only %v: want README.md, ARCHITECTURE.md and docs/CONTRACT.md at least", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range linkProblems(repoRoot, f, string(b)) {
			t.Errorf("%s: %s", f, p)
		}
	}
	readme, _ := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if !strings.Contains(string(readme), "(docs/CONTRACT.md)") {
		t.Error("README.md does not link the contract, docs/CONTRACT.md")
	}
}

// TestLinkProblems: the checker finds what it is for.
func TestLinkProblems(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "A.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	text := "[ok](docs/A.md#x) [web](https://example.com) [anchor](#top) [out](../shared/CONTRACT.md)\n" +
		"[gone](docs/B.md) [abs](/etc/passwd)\n```\n[code](nowhere.md)\n```\n[ref]: ../outside.md\n"
	got := linkProblems(root, filepath.Join(root, "README.md"), text)
	want := []string{"../shared/CONTRACT.md: leaves the repository", "docs/B.md: no such file in the repository",
		"/etc/passwd: absolute path (use one relative to the file)", "../outside.md: leaves the repository"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const fixtureSkills = "../fixtures/skills"

// writeSkill writes dir/folder/SKILL.md and returns its path.
func writeSkill(t *testing.T, dir, folder, content string) string {
	t.Helper()
	p := filepath.Join(dir, folder, "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unsupported: %v", err)
	}
}

func sha(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func names(skills []Skill) []string {
	out := []string{}
	for _, s := range skills {
		out = append(out, s.Name)
	}
	return out
}

func TestLoadSkillsValid(t *testing.T) {
	tests := []struct {
		name    string
		folder  string
		content string
		want    Skill // Path and SHA256 are checked separately
	}{
		{
			name:    "minimal gets defaults",
			folder:  "review",
			content: "---\nname: review\ndescription: Review code.\n---\n# Review\n",
			want:    Skill{Name: "review", Version: "0.0.0", Description: "Review code.", Capabilities: []string{}},
		},
		{
			name:   "all fields",
			folder: "test-runner",
			content: "---\nname: test-runner\nversion: 1.2.3\ndescription: Run tests.\n" +
				"capabilities:\n  - test\n  - go\n---\nbody\n",
			want: Skill{Name: "test-runner", Version: "1.2.3", Description: "Run tests.", Capabilities: []string{"test", "go"}},
		},
		{
			name:    "CRLF line endings and a UTF-8 BOM",
			folder:  "crlf",
			content: "\xEF\xBB\xBF---\r\nname: crlf\r\ndescription: Windows file.\r\ncapabilities: [a, b]\r\n---\r\nbody\r\n",
			want:    Skill{Name: "crlf", Version: "0.0.0", Description: "Windows file.", Capabilities: []string{"a", "b"}},
		},
		{
			name:    "bare float version kept as written",
			folder:  "v",
			content: "---\nname: v\nversion: 1.10\ndescription: d\n---\n",
			want:    Skill{Name: "v", Version: "1.10", Description: "d", Capabilities: []string{}},
		},
		{
			name:    "bare int version",
			folder:  "v2",
			content: "---\nname: v2\nversion: 2\ndescription: d\n---\n",
			want:    Skill{Name: "v2", Version: "2", Description: "d", Capabilities: []string{}},
		},
		{
			name:    "bare date version kept as written",
			folder:  "v3",
			content: "---\nname: v3\nversion: 2024-01-01\ndescription: d\n---\n",
			want:    Skill{Name: "v3", Version: "2024-01-01", Description: "d", Capabilities: []string{}},
		},
		{
			name:    "a capability listed twice is kept once",
			folder:  "twice",
			content: "---\nname: twice\ndescription: d\ncapabilities: [review, go, review]\n---\n",
			want:    Skill{Name: "twice", Version: "0.0.0", Description: "d", Capabilities: []string{"review", "go"}},
		},
		{
			name:    "null version and capabilities get defaults",
			folder:  "nulls",
			content: "---\nname: nulls\nversion:\ndescription: d\ncapabilities: ~\n---\n",
			want:    Skill{Name: "nulls", Version: "0.0.0", Description: "d", Capabilities: []string{}},
		},
		{
			name:   "unknown keys are ignored",
			folder: "extra",
			content: "---\nname: extra\ndescription: d\nlicense: MIT\nallowed-tools: [Bash, Read]\n" +
				"metadata:\n  owner: team\n---\n",
			want: Skill{Name: "extra", Version: "0.0.0", Description: "d", Capabilities: []string{}},
		},
		{
			name:    "folded description is trimmed",
			folder:  "folded",
			content: "---\nname: folded\ndescription: >\n  Two\n  lines.\n---\n",
			want:    Skill{Name: "folded", Version: "0.0.0", Description: "Two lines.", Capabilities: []string{}},
		},
		{
			name:    "fences with trailing blanks, body with a later fence",
			folder:  "fences",
			content: "--- \nname: fences\ndescription: d\n---\t\n# Body\n---\nmore\n",
			want:    Skill{Name: "fences", Version: "0.0.0", Description: "d", Capabilities: []string{}},
		},
		{
			name:    "aliases are resolved",
			folder:  "alias",
			content: "---\ncommon: &caps [x, y]\ntext: &d Shared text.\nname: alias\ndescription: *d\ncapabilities: *caps\n---\n",
			want:    Skill{Name: "alias", Version: "0.0.0", Description: "Shared text.", Capabilities: []string{"x", "y"}},
		},
		{
			name:    "digits-only name",
			folder:  "7zip",
			content: "---\nname: 7zip\ndescription: d\n---\n",
			want:    Skill{Name: "7zip", Version: "0.0.0", Description: "d", Capabilities: []string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeSkill(t, dir, tt.folder, tt.content)
			skills, skipped, err := Load(dir)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(skipped) != 0 {
				t.Fatalf("skipped = %+v, want none", skipped)
			}
			got := skills.All()
			if len(got) != 1 {
				t.Fatalf("got %d skills, want 1: %+v", len(got), got)
			}
			want := tt.want
			want.Path = tt.folder + "/SKILL.md"
			want.SHA256 = sha(t, p)
			if !reflect.DeepEqual(got[0], want) {
				t.Errorf("got  %+v\nwant %+v", got[0], want)
			}
		})
	}
}

func TestLoadSkillsSkipsMalformed(t *testing.T) {
	valid := "---\nname: %s\ndescription: d\n---\n"
	tests := []struct {
		name    string
		folder  string
		content string                         // written to folder/SKILL.md unless setup is set
		setup   func(t *testing.T, dir string) // builds folder/SKILL.md itself
		want    string                         // substring of the reason
	}{
		{name: "no front matter", folder: "a", content: "# Just a body\n", want: "no front matter"},
		{name: "empty file", folder: "a", content: "", want: "no front matter"},
		{name: "front matter not on the first line", folder: "a", content: "\n---\nname: a\ndescription: d\n---\n", want: "no front matter"},
		{name: "unterminated", folder: "a", content: "---\nname: a\ndescription: d\n", want: "not terminated"},
		{name: "bad YAML", folder: "a", content: "---\nname: a\ndescription: [never closed\n---\n", want: "invalid YAML"},
		{name: "bad YAML line is the file's line", folder: "a", content: "---\nname: a\ndescription: a: b\n---\n", want: "line 3: mapping values are not allowed"},
		{name: "invalid UTF-8", folder: "a", content: "---\nname: a\ndescription: \xff\xfe\n---\n", want: "invalid YAML"},
		{name: "empty front matter", folder: "a", content: "---\n---\nbody\n", want: "front matter is empty"},
		{name: "front matter is a list", folder: "a", content: "---\n- name\n- a\n---\n", want: "must be a YAML mapping, got a list"},
		{name: "front matter is a scalar", folder: "a", content: "---\njust text\n---\n", want: "must be a YAML mapping, got a string"},
		{name: "duplicate key", folder: "a", content: "---\nname: a\ndescription: d\nname: a\n---\n", want: `duplicate key "name" (line 4)`},
		{name: "missing name", folder: "a", content: "---\ndescription: d\n---\n", want: `missing required field "name"`},
		{name: "null name", folder: "a", content: "---\nname:\ndescription: d\n---\n", want: `missing required field "name"`},
		{name: "empty name", folder: "a", content: "---\nname: \"\"\ndescription: d\n---\n", want: `missing required field "name"`},
		{name: "name is a number", folder: "123", content: "---\nname: 123\ndescription: d\n---\n", want: "name must be a string, got a number (!!int) (line 2)"},
		{name: "name is a list", folder: "a", content: "---\nname: [a]\ndescription: d\n---\n", want: "name must be a string, got a list"},
		{name: "name != folder", folder: "review", content: fmt.Sprintf(valid, "code-review"), want: `name "code-review" does not match its folder name "review"`},
		{name: "bad name chars", folder: "Code_Review", content: fmt.Sprintf(valid, "Code_Review"), want: `name "Code_Review" is invalid: it must match ^[a-z0-9][a-z0-9-]*$`},
		{name: "name with a space", folder: "code review", content: fmt.Sprintf(valid, `"code review"`), want: "is invalid"},
		{name: "name starts with a dash", folder: "-x", content: fmt.Sprintf(valid, `"-x"`), want: `name "-x" is invalid`},
		{name: "missing description", folder: "a", content: "---\nname: a\n---\n", want: `missing required field "description"`},
		{name: "blank description", folder: "a", content: "---\nname: a\ndescription: \"  \"\n---\n", want: `missing required field "description"`},
		{name: "description is a list", folder: "a", content: "---\nname: a\ndescription: [d]\n---\n", want: "description must be a string, got a list (line 3)"},
		{name: "description is a boolean", folder: "a", content: "---\nname: a\ndescription: true\n---\n", want: "description must be a string, got a boolean"},
		{name: "description is a number", folder: "a", content: "---\nname: a\ndescription: 42\n---\n", want: "description must be a string, got a number"},
		{name: "version is a list", folder: "a", content: "---\nname: a\ndescription: d\nversion: [1]\n---\n", want: "version must be a string, got a list"},
		{name: "version is empty", folder: "a", content: "---\nname: a\ndescription: d\nversion: \"\"\n---\n", want: "version must not be empty"},
		{name: "capabilities is a string", folder: "a", content: "---\nname: a\ndescription: d\ncapabilities: review\n---\n", want: "capabilities must be a list of strings, got a string (line 4)"},
		{name: "capabilities is a mapping", folder: "a", content: "---\nname: a\ndescription: d\ncapabilities: {review: true}\n---\n", want: "capabilities must be a list of strings, got a mapping"},
		{name: "capability is a number", folder: "a", content: "---\nname: a\ndescription: d\ncapabilities: [review, 7]\n---\n", want: "capabilities must be a list of strings, but item 1 is a number"},
		{name: "capability is a list", folder: "a", content: "---\nname: a\ndescription: d\ncapabilities:\n  - [x]\n---\n", want: "but item 0 is a list (line 5)"},
		{name: "capability is empty", folder: "a", content: "---\nname: a\ndescription: d\ncapabilities: [\"\"]\n---\n", want: "but item 0 is empty"},
		{name: "capability is null", folder: "a", content: "---\nname: a\ndescription: d\ncapabilities: [~]\n---\n", want: "but item 0 is null"},
		// What agents are given holds to the rules of what they send
		// (attack5: NUL, ESC and others reached agents as written).
		{name: "description with NUL", folder: "a", content: "---\nname: a\ndescription: \"d\\0e\"\n---\n", want: "description must not contain control characters other than tab"},
		{name: "description with ESC", folder: "a", content: "---\nname: a\ndescription: \"\\e[31mred\"\n---\n", want: "description must not contain control characters"},
		{name: "version with a newline", folder: "a", content: "---\nname: a\ndescription: d\nversion: \"1\\n2\"\n---\n", want: "version must not contain control characters"},
		{name: "capability with a C1 control", folder: "a", content: "---\nname: a\ndescription: d\ncapabilities: [\"re\\x9bview\"]\n---\n", want: "capabilities: item 0 must not contain control characters"},
		{
			name:    "too big",
			folder:  "a",
			content: fmt.Sprintf(valid, "a") + strings.Repeat("x", MaxSize),
			want:    fmt.Sprintf("too big: %d bytes, over the %d-byte limit", len(fmt.Sprintf(valid, "a"))+MaxSize, MaxSize),
		},
		{
			name:   "SKILL.md is a directory",
			folder: "a",
			setup: func(t *testing.T, dir string) {
				if err := os.MkdirAll(filepath.Join(dir, "a", "SKILL.md"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: "SKILL.md is a directory",
		},
		{
			name:   "SKILL.md is a symlink inside the dir",
			folder: "a",
			setup: func(t *testing.T, dir string) {
				writeSkill(t, dir, "a", fmt.Sprintf(valid, "a"))
				p := filepath.Join(dir, "a", "SKILL.md")
				if err := os.Rename(p, filepath.Join(dir, "a", "real.md")); err != nil {
					t.Fatal(err)
				}
				symlink(t, "real.md", p)
			},
			want: "SKILL.md is a symbolic link",
		},
		{
			name:   "SKILL.md is a symlink out of the dir",
			folder: "a",
			setup: func(t *testing.T, dir string) {
				outside := writeSkill(t, t.TempDir(), "a", fmt.Sprintf(valid, "a"))
				if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
					t.Fatal(err)
				}
				symlink(t, outside, filepath.Join(dir, "a", "SKILL.md"))
			},
			want: "SKILL.md is a symbolic link",
		},
		{
			name:   "skill folder is a symlink out of the dir",
			folder: "a",
			setup: func(t *testing.T, dir string) {
				outside := t.TempDir()
				writeSkill(t, outside, "a", fmt.Sprintf(valid, "a"))
				symlink(t, filepath.Join(outside, "a"), filepath.Join(dir, "a"))
			},
			want: "skill folder is a symbolic link",
		},
		{
			name:   "skill folder is a symlink inside the dir",
			folder: "a",
			setup: func(t *testing.T, dir string) {
				writeSkill(t, dir, ".store/a", fmt.Sprintf(valid, "a"))
				symlink(t, filepath.Join(".store", "a"), filepath.Join(dir, "a"))
			},
			want: "skill folder is a symbolic link",
		},
		{
			name:   "skill folder is a dangling symlink",
			folder: "a",
			setup: func(t *testing.T, dir string) {
				symlink(t, "nowhere", filepath.Join(dir, "a"))
			},
			want: "skill folder is a symbolic link",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, dir)
			} else {
				writeSkill(t, dir, tt.folder, tt.content)
			}
			skills, skipped, err := Load(dir)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := skills.All(); len(got) != 0 {
				t.Errorf("loaded %+v, want none", got)
			}
			if len(skipped) != 1 {
				t.Fatalf("skipped = %+v, want exactly one", skipped)
			}
			if got, want := skipped[0].Path, tt.folder+"/SKILL.md"; got != want {
				t.Errorf("skipped path = %q, want %q", got, want)
			}
			if got := skipped[0].Reason; !strings.Contains(got, tt.want) {
				t.Errorf("reason = %q, want it to contain %q", got, tt.want)
			}
			if strings.Contains(skipped[0].Reason, dir) {
				t.Errorf("reason %q leaks the directory path", skipped[0].Reason)
			}
		})
	}
}

func TestLoadSkillsUnreadableFile(t *testing.T) {
	dir := t.TempDir()
	p := writeSkill(t, dir, "a", "---\nname: a\ndescription: d\n---\n")
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(p); err == nil {
		f.Close()
		t.Skip("file is still readable (running as root?)")
	}
	_, skipped, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(skipped) != 1 || skipped[0].Path != "a/SKILL.md" || !strings.Contains(skipped[0].Reason, "cannot open SKILL.md: permission denied") {
		t.Fatalf("skipped = %+v, want a/SKILL.md with a permission reason", skipped)
	}
	if strings.Contains(skipped[0].Reason, dir) {
		t.Errorf("reason %q leaks the directory path", skipped[0].Reason)
	}
}

func TestLoadSkillsIgnoresNonCandidates(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "empty-folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a skill"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: x\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, dir, "deep/nested", "---\nname: nested\ndescription: d\n---\n") // two levels down
	symlink(t, "README.md", filepath.Join(dir, "readme-link"))                    // a link to a file

	skills, skipped, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := skills.All(); len(got) != 0 {
		t.Errorf("loaded %+v, want none", got)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped = %+v, want none", skipped)
	}
}

func TestLoadSkillsMissingDir(t *testing.T) {
	skills, skipped, err := Load(filepath.Join(t.TempDir(), "no-such-dir"))
	if err != nil {
		t.Fatalf("Load: %v, want nil", err)
	}
	if skills == nil {
		t.Fatal("skills = nil, want an empty set")
	}
	if got := skills.All(); len(got) != 0 {
		t.Errorf("All() = %+v, want empty", got)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped = %+v, want none", skipped)
	}
}

func TestLoadSkillsUnreadableDir(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	skills, skipped, err := Load(notDir)
	if err == nil {
		t.Fatalf("Load(a file) = %+v, %+v, nil; want an error", skills, skipped)
	}
}

func TestLoadSkillsMixedSorted(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "zeta", "---\nname: zeta\ndescription: Last.\n---\n")
	writeSkill(t, dir, "broken", "no front matter\n")
	writeSkill(t, dir, "alpha", "---\nname: alpha\ndescription: First.\n---\n")
	writeSkill(t, dir, "also-broken", "---\nname: wrong\ndescription: d\n---\n")
	writeSkill(t, dir, "mid", "---\nname: mid\ndescription: Middle.\n---\n")

	skills, skipped, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := names(skills.All()), []string{"alpha", "mid", "zeta"}; !reflect.DeepEqual(got, want) {
		t.Errorf("names = %q, want %q", got, want)
	}
	var gotSkipped []string
	for _, s := range skipped {
		gotSkipped = append(gotSkipped, s.Path)
	}
	if want := []string{"also-broken/SKILL.md", "broken/SKILL.md"}; !reflect.DeepEqual(gotSkipped, want) {
		t.Errorf("skipped = %q, want %q", gotSkipped, want)
	}
}

func TestSkillsList(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "code-review", "---\nname: code-review\ndescription: Review a DIFF.\ncapabilities: [review, git]\n---\n")
	writeSkill(t, dir, "test-runner", "---\nname: test-runner\ndescription: Run the tests.\ncapabilities: [test]\n---\n")
	writeSkill(t, dir, "release-notes", "---\nname: release-notes\ndescription: Summarise the git log.\ncapabilities: [git, docs]\n---\n")
	writeSkill(t, dir, "plain", "---\nname: plain\ndescription: No capabilities.\n---\n")
	skills, skipped, err := Load(dir)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("Load: %v, skipped %+v", err, skipped)
	}

	tests := []struct {
		name, search, capability string
		want                     []string
	}{
		{name: "no filter", want: []string{"code-review", "plain", "release-notes", "test-runner"}},
		{name: "search in name", search: "review", want: []string{"code-review"}},
		{name: "search is case-insensitive", search: "REVIEW", want: []string{"code-review"}},
		{name: "search in description, case-insensitive", search: "diff", want: []string{"code-review"}},
		{name: "search matches several", search: "the", want: []string{"release-notes", "test-runner"}},
		{name: "search matches nothing", search: "deploy", want: []string{}},
		{name: "capability", capability: "git", want: []string{"code-review", "release-notes"}},
		{name: "capability is exact", capability: "Git", want: []string{}},
		{name: "capability is not a substring", capability: "rev", want: []string{}},
		{name: "both filters", search: "notes", capability: "git", want: []string{"release-notes"}},
		{name: "both filters, no overlap", search: "test", capability: "git", want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := skills.List(tt.search, tt.capability)
			if got == nil {
				t.Fatal("List returned nil, want a non-nil slice")
			}
			if !reflect.DeepEqual(names(got), tt.want) {
				t.Errorf("List(%q, %q) = %q, want %q", tt.search, tt.capability, names(got), tt.want)
			}
		})
	}
}

func TestSkillsListReturnsCopies(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "a", "---\nname: a\ndescription: d\ncapabilities: [x]\n---\n")
	skills, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := skills.All()
	got[0].Name = "changed"
	got[0].Capabilities[0] = "changed"
	if again := skills.All(); again[0].Name != "a" || again[0].Capabilities[0] != "x" {
		t.Errorf("mutating a result changed the set: %+v", again[0])
	}
}

func TestSkillsNilAndZero(t *testing.T) {
	var nilSkills *Set
	for _, s := range []*Set{nilSkills, {}} {
		if got := s.All(); got == nil || len(got) != 0 {
			t.Errorf("All() = %#v, want empty non-nil", got)
		}
		if got := s.List("x", "y"); got == nil || len(got) != 0 {
			t.Errorf("List() = %#v, want empty non-nil", got)
		}
	}
}

func TestLoadSkillsFixtures(t *testing.T) {
	skills, skipped, err := Load(fixtureSkills)
	if err != nil {
		t.Fatalf("Load(%s): %v", fixtureSkills, err)
	}
	want := []Skill{
		{
			Name: "code-review", Version: "1.2.0",
			Description:  "Review a diff for correctness, tests and style before it is merged.",
			Capabilities: []string{"review", "git"}, Path: "code-review/SKILL.md",
		},
		{
			Name: "release-notes", Version: "0.0.0",
			Description:  "Draft release notes from the tasks closed since the last tag.",
			Capabilities: []string{"git", "docs"}, Path: "release-notes/SKILL.md",
		},
		{
			Name: "test-runner", Version: "2.0",
			Description:  "Run the Go test suite with the race detector and summarise failures.",
			Capabilities: []string{"test", "go"}, Path: "test-runner/SKILL.md",
		},
	}
	for i := range want {
		want[i].SHA256 = sha(t, filepath.Join(fixtureSkills, filepath.FromSlash(want[i].Path)))
	}
	if got := skills.All(); !reflect.DeepEqual(got, want) {
		t.Errorf("All() =\n%+v\nwant\n%+v", got, want)
	}

	wantSkipped := []struct{ path, reason string }{
		{"broken-yaml/SKILL.md", "invalid YAML in front matter"},
		{"misnamed/SKILL.md", `name "code-reviewer" does not match its folder name "misnamed"`},
	}
	if len(skipped) != len(wantSkipped) {
		t.Fatalf("skipped = %+v, want %d", skipped, len(wantSkipped))
	}
	for i, w := range wantSkipped {
		if skipped[i].Path != w.path || !strings.Contains(skipped[i].Reason, w.reason) {
			t.Errorf("skipped[%d] = %+v, want path %q and a reason containing %q", i, skipped[i], w.path, w.reason)
		}
	}
}

func ExampleSet_List() {
	skills, skipped, err := Load("../fixtures/skills")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range skipped {
		fmt.Printf("skipped %s\n", s.Path)
	}
	for _, s := range skills.List("", "git") {
		fmt.Printf("%s %s %v\n", s.Name, s.Version, s.Capabilities)
	}
	// Output:
	// skipped broken-yaml/SKILL.md
	// skipped misnamed/SKILL.md
	// code-review 1.2.0 [review git]
	// release-notes 0.0.0 [git docs]
}

// skill_list's search is case-insensitive as Unicode folds case, not as
// strings.ToLower maps it: a final sigma, the micro sign and the long s are
// lower case already, and their capitals lower to other letters.
func TestSkillsListSearchFoldsCase(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "odos", "---\nname: odos\ndescription: ΟΔΌΣ through 5ΜS of MASS\ncapabilities: [x]\n---\n")
	skills, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, search := range []string{"οδός", "ΟΔΌΣ", "5µs", "Maſs", "mass", "ODOS"} {
		if got := skills.List(search, ""); len(got) != 1 {
			t.Errorf("List(%q) found %d skills, want the one", search, len(got))
		}
	}
	if got := skills.List("οδόσx", ""); len(got) != 0 {
		t.Errorf("List(%q) found %d skills, want none", "οδόσx", len(got))
	}
}

package commands

import (
	"fmt"
	"strings"
	"testing"
)

func TestRecordFinding(t *testing.T) {
	h := newHarness(t, Options{Agent: "agent-a"})
	h.call("task_create", map[string]any{"title": "Audit parser", "project": "core"}, "OK")
	d := h.call("finding_record", map[string]any{"task_id": "T-0001", "category": "bug", "summary": "Off-by-one in the lexer",
		"details": "The lexer drops the last rune.", "files": []string{"lexer/scan.go", "lexer/scan_test.go", "lexer/scan.go"}}, "OK")
	wantKeys(t, "finding_record", d, "finding_id", "task_id", "project", "category", "files", "hash", "recorded_at", "recorded_by", "seq")
	if d["finding_id"] != "F-0001" || d["project"] != "core" || d["recorded_by"] != "agent-a" ||
		fmt.Sprint(d["files"]) != "[lexer/scan.go lexer/scan_test.go]" {
		t.Errorf("finding_record = %v", d)
	}
	wantHash(t, "hash", d["hash"])
	wantTime(t, "recorded_at", d["recorded_at"])
	if d2 := h.call("finding_record", map[string]any{"task_id": "T-0001", "category": "gap", "summary": "No fuzz test"}, "OK"); d2["finding_id"] != "F-0002" || fmt.Sprint(d2["files"]) != "[]" {
		t.Errorf("second finding = %v", d2)
	}
	// One file is one path, however it is spelt: a backslash is a
	// separator (the rule splits at it too), a "." segment names nothing.
	d3 := h.call("finding_record", map[string]any{"task_id": "T-0001", "category": "bug", "summary": "s",
		"files": []string{`lexer\scan.go`, "lexer/scan.go", "./lexer/scan.go", "lexer/./scan.go", `.\lexer\.\scan.go`, ".", "./.", "a..b/c", ".hidden/x"}}, "OK")
	if got := fmt.Sprint(d3["files"]); got != "[lexer/scan.go . a..b/c .hidden/x]" {
		t.Errorf("files %s, want [lexer/scan.go . a..b/c .hidden/x]", got)
	}
	// A closed task takes findings too.
	h.call("task_update", map[string]any{"task_id": "T-0001", "status": "cancelled"}, "OK")
	h.call("finding_record", map[string]any{"task_id": "T-0001", "category": "risk", "summary": "Cancelled half done"}, "OK")
}

func TestRecordFindingRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "t", "project": "core"}, "OK")
	ok := func(extra map[string]any) map[string]any {
		args := map[string]any{"task_id": "T-0001", "category": "bug", "summary": "s"}
		for k, v := range extra {
			args[k] = v
		}
		return args
	}
	cases := []struct {
		name string
		args map[string]any
		code string
		path string // the issue's path, for ERR_INVALID_INPUT
	}{
		{"unknown task", ok(map[string]any{"task_id": "T-0009"}), "ERR_TASK_NOT_FOUND", ""},
		{"bad category", ok(map[string]any{"category": "opinion"}), "ERR_INVALID_INPUT", "category"},
		{"empty summary", ok(map[string]any{"summary": ""}), "ERR_INVALID_INPUT", "summary"},
		{"summary too long", ok(map[string]any{"summary": strings.Repeat("s", 301)}), "ERR_INVALID_INPUT", "summary"},
		{"multi-line summary", ok(map[string]any{"summary": "a\nb"}), "ERR_INVALID_INPUT", "summary"},
		{"details too long", ok(map[string]any{"details": strings.Repeat("d", 8001)}), "ERR_INVALID_INPUT", "details"},
		{"51 files", ok(map[string]any{"files": make51()}), "ERR_INVALID_INPUT", "files"},
		{"absolute path", ok(map[string]any{"files": []string{"a.go", "/etc/passwd"}}), "ERR_INVALID_INPUT", "files[1]"},
		{"backslash absolute", ok(map[string]any{"files": []string{`\windows\x`}}), "ERR_INVALID_INPUT", "files[0]"},
		{"drive letter", ok(map[string]any{"files": []string{`C:\x.go`}}), "ERR_INVALID_INPUT", "files[0]"},
		{"dot-dot segment", ok(map[string]any{"files": []string{"a/../../b"}}), "ERR_INVALID_INPUT", "files[0]"},
		{"dot-dot backslash", ok(map[string]any{"files": []string{`a\..\b`}}), "ERR_INVALID_INPUT", "files[0]"},
		{"dot-dot alone", ok(map[string]any{"files": []string{".."}}), "ERR_INVALID_INPUT", "files[0]"},
		{"empty segment", ok(map[string]any{"files": []string{"a//b"}}), "ERR_INVALID_INPUT", "files[0]"},
		{"trailing slash", ok(map[string]any{"files": []string{"dir/"}}), "ERR_INVALID_INPUT", "files[0]"},
		{"NUL", ok(map[string]any{"files": []string{"a\x00b"}}), "ERR_INVALID_INPUT", "files[0]"},
		{"newline", ok(map[string]any{"files": []string{"a\nb"}}), "ERR_INVALID_INPUT", "files[0]"},
		{"empty path", ok(map[string]any{"files": []string{""}}), "ERR_INVALID_INPUT", "files[0]"},
		{"path too long", ok(map[string]any{"files": []string{strings.Repeat("a/", 600)}}), "ERR_INVALID_INPUT", "files[0]"},
		{"unknown field", ok(map[string]any{"severity": "high"}), "ERR_INVALID_INPUT", "severity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.head()
			o := h.do("finding_record", tc.args)
			if o.Code != tc.code {
				t.Fatalf("code %s, want %s: %s", o.Code, tc.code, o.Reply)
			}
			if tc.path != "" && !hasIssue(o.Err, tc.path) {
				t.Errorf("no issue at %q: %v", tc.path, o.Err)
			}
			if h.head() != before+1 {
				t.Errorf("a refused call appended %d events, want 1", h.head()-before)
			}
		})
	}
	// Names that look odd but stay inside the repository are fine.
	h.call("finding_record", ok(map[string]any{"files": []string{".github/workflows/ci.yml", "./a.go", "a..b/c", "docs/ü.md", "notes:2.md"}}), "OK")
}

func make51() []string {
	files := make([]string, 51)
	for i := range files {
		files[i] = fmt.Sprintf("f%d.go", i)
	}
	return files
}

// hasIssue reports whether err is an *InvalidInputError with an issue at path.
func hasIssue(err error, path string) bool {
	ie, ok := err.(*InvalidInputError)
	if !ok {
		return false
	}
	for _, is := range ie.Issues {
		if is.Path == path {
			return true
		}
	}
	return false
}

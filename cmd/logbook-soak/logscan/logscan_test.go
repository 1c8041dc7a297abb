package logscan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScan: a Go crash, a logged recovered panic and a race report are
// found, each with its file and line; ordinary log lines, the word panic in
// a message included, are not.
func TestScan(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agent0.stderr": "time=x level=INFO msg=serving\npanic: runtime error: index out of range\n\ngoroutine 1 [running]:\n",
		"agent1.stderr": "time=x level=ERROR msg=\"tool call panicked\" tool=task_get panic=\"boom\" stack=...\n",
		"node0.log":     "==== start 0\n==================\nWARNING: DATA RACE\nWrite at 0x00c by goroutine 7:\n",
		"node1.log":     "fatal error: concurrent map writes\n",
		"calm.stderr":   "time=x level=INFO msg=\"a failing or panicking call is rolled back\"\n",
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(append(Scan(filepath.Join(dir, "*.stderr")), Scan(filepath.Join(dir, "*.log"))...), "\n")
	for _, want := range []string{"agent0.stderr:2: panic: runtime error", "agent1.stderr:1: ", "node0.log:3: WARNING: DATA RACE", "node1.log:1: fatal error: concurrent map writes"} {
		if !strings.Contains(got, want) {
			t.Errorf("Scan misses %q; found:\n%s", want, got)
		}
	}
	if strings.Contains(got, "calm.stderr") {
		t.Errorf("Scan took an ordinary line for a crash:\n%s", got)
	}
	if n := len(Scan(filepath.Join(dir, "none-*"))); n != 0 {
		t.Errorf("Scan of no file: %d findings", n)
	}
}

// TestScanCaps: past maxShown findings, Scan counts the rest.
func TestScanCaps(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.log"), []byte(strings.Repeat("WARNING: DATA RACE\n", maxShown+5)), 0o644)
	got := Scan(filepath.Join(dir, "*.log"))
	if len(got) != maxShown+1 || got[maxShown] != "and 5 more such lines" {
		t.Errorf("Scan of %d findings: %d lines, last %q", maxShown+5, len(got), got[len(got)-1])
	}
}

package stdio

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSmoke runs the stdio soak for a few seconds, so that `make test`
// keeps the harness working against the binary as it is (a tool's
// arguments or reply changed, a check no longer matching the log). Its
// checks do not depend on timing: a loaded machine makes fewer calls, not
// different verdicts. make soak-stdio runs it for minutes.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "logbook")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/logbook-dev/logbook/cmd/logbook").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if code := Run([]string{"-bin", bin, "-dir", filepath.Join(dir, "run"), "-dur", "5s", "-agents", "3", "-kill-mode", "mix"}); code != 0 {
		t.Fatalf("the stdio soak exited %d: its FAIL lines are above", code)
	}
}

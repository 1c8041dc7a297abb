package stdio

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain: a logbook process of another boot (-reboots) is this test
// binary first, as it is logbook-soak's main.
func TestMain(m *testing.M) {
	ExecInBoot()
	os.Exit(m.Run())
}

// TestSmoke runs the stdio soak for a few seconds, so that `make test`
// keeps the harness working against the binary as it is (a tool's
// arguments or reply changed, a check no longer matching the log). Its
// checks do not depend on timing: a loaded machine makes fewer calls, not
// different verdicts. Where processes can be started in another boot
// (root), the run has a reboot halfway. make soak-stdio runs it for
// minutes.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "logbook")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/logbook-dev/logbook/cmd/logbook").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := []string{"-bin", exe, "-dir", filepath.Join(dir, "run"), "-dur", "5s", "-agents", "3", "-kill-mode", "mix"}
	*bin = exe
	if err := checkBoot(); err != nil {
		t.Logf("no reboot: %v", err)
	} else {
		args = append(args, "-reboots", "1")
	}
	if code := Run(args); code != 0 {
		t.Fatalf("the stdio soak exited %d: its FAIL lines are above", code)
	}
}

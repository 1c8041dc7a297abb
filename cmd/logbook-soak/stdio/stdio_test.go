//go:build linux

package stdio

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

	// A check that never fails checks nothing. The run's calls.json with
	// one acknowledged call's reply changed, as if its tool.called were
	// lost, and another's nonce, as if its events were: -check-only of the
	// same ledger fails, saying which calls were lost.
	path := filepath.Join(dir, "run", "calls.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var acked []*call
	for _, c := range s.Calls {
		if c.State == "ok" && c.Tool == "thought_record" {
			acked = append(acked, c)
		}
	}
	if len(acked) < 2 {
		t.Fatalf("%d thought_record calls acknowledged in 5 s", len(acked))
	}
	acked[0].Text += " "
	acked[1].Nonce = "Nagent9-1-1"
	if b, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var code int
	out := stderrOf(t, func() { code = Run([]string{"-bin", exe, "-dir", filepath.Join(dir, "run"), "-check-only"}) })
	if code != 1 {
		t.Errorf("-check-only of calls the ledger lacks exited %d, want 1", code)
	}
	for _, want := range []string{
		"FAIL " + acked[0].Agent + " thought_record",
		"(nonce \"" + acked[0].Nonce + "\") was acknowledged, but no tool.called records its reply",
		"thought_record (nonce Nagent9-1-1) was acknowledged, and its events are in the log 0 times",
		"FAIL: 2 failures",
		filepath.Join(dir, "run"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-check-only does not say %q; it said:\n%s", want, out)
		}
	}

	// A ledger that cannot even be replayed: the run fails, naming its
	// directory all the same.
	junk := filepath.Join(dir, "run", "junk.db")
	if err := os.WriteFile(junk, []byte("not a ledger"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = stderrOf(t, func() {
		code = Run([]string{"-bin", exe, "-dir", filepath.Join(dir, "run"), "-db", junk, "-check-only"})
	})
	if code != 1 || !strings.Contains(out, "FAIL replay exit") || !strings.Contains(out, "logs are in "+filepath.Join(dir, "run")) {
		t.Errorf("-check-only of a file that is no ledger: exit %d, want 1 and its directory named; it said:\n%s", code, out)
	}
}

// stderrOf runs f and returns what it wrote to os.Stderr.
func stderrOf(t *testing.T, f func()) string {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	f()
	os.Stderr = saved
	w.Close()
	return <-got
}

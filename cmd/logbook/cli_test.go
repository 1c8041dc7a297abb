package main

import (
	"bytes"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// commandArgs are the arguments that name each subcommand: prove's kind
// comes before its flags.
func commandArgs(name string) []string {
	if name == "prove" {
		return []string{"prove", "inclusion"}
	}
	return []string{name}
}

// TestHelpCommand: logbook help X prints X's own help — what X --help
// prints — to stdout with exit 0, never the top-level help.
func TestHelpCommand(t *testing.T) {
	top := run(t, "--help")
	wantExit(t, top, 0, "--help")
	for _, sc := range subcommands {
		name := sc.name
		h := run(t, "help", name)
		wantExit(t, h, 0, "help "+name)
		if !strings.HasPrefix(h.stdout, "Usage: logbook "+name) || h.stdout == top.stdout {
			t.Errorf("help %s: want its own usage, got:\n%s", name, h.stdout)
		}
		// A command that takes an argument names it in its usage line.
		if usage, _, _ := strings.Cut(h.stdout, "\n"); sc.args > 0 && !regexp.MustCompile(`^Usage: logbook \S+ [A-Z]+ \[flags\]$`).MatchString(usage) {
			t.Errorf("help %s: its usage line %q does not name its argument", name, usage)
		}
		if f := run(t, name, "--help"); f.stdout != h.stdout || f.code != 0 {
			t.Errorf("help %s and %s --help differ:\n%s\n---\n%s", name, name, h, f)
		}
	}
	if r := run(t, "help", "no-such-command"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "no-such-command"`) {
		t.Errorf("help of an unknown command: want exit 2 naming it, got %s", r)
	}
}

// TestHelpSubcommand: logbook help X SUB, for the commands made of
// subcommands (token add, prove inclusion, …), prints what X SUB --help
// prints, as logbook help X does for X.
func TestHelpSubcommand(t *testing.T) {
	for _, args := range [][]string{
		{"token", "add"}, {"token", "revoke"}, {"token", "list"},
		{"prove", "inclusion"}, {"prove", "consistency"},
	} {
		what := strings.Join(args, " ")
		h := run(t, append([]string{"help"}, args...)...)
		wantExit(t, h, 0, "help "+what)
		f := run(t, append(args, "--help")...)
		if !strings.HasPrefix(h.stdout, "Usage: logbook "+what) || f.stdout != h.stdout || f.code != 0 {
			t.Errorf("help %s and %s --help differ:\n%s\n---\n%s", what, what, h, f)
		}
	}
	if r := run(t, "help", "show", "T-0001"); r.code != 2 || !strings.Contains(r.stderr, "at most one command") {
		t.Errorf("help of a command and an argument: want exit 2, got %s", r)
	}
}

// TestProveHelpListsFlags: prove --help lists the flags of both proofs.
func TestProveHelpListsFlags(t *testing.T) {
	r := run(t, "prove", "--help")
	wantExit(t, r, 0, "prove --help")
	for _, f := range []string{"-seq", "-size", "-old", "-new", "-out", "-db"} {
		if !strings.Contains(r.stdout, "\n  "+f+" ") {
			t.Errorf("prove --help does not list %s:\n%s", f, r.stdout)
		}
	}
}

// TestUnknownFlagOnce: an unknown flag is one line on stderr, exit 2,
// naming the flag and where the flags are listed.
func TestUnknownFlagOnce(t *testing.T) {
	for _, sc := range subcommands {
		args := append(commandArgs(sc.name), "--no-such-flag")
		r := run(t, args...)
		wantExit(t, r, 2, strings.Join(args, " "))
		if n := strings.Count(r.stderr, "no-such-flag"); n != 1 || strings.Count(r.stderr, "\n") != 1 ||
			!strings.Contains(r.stderr, "--help") || (sc.name != "token" && !strings.Contains(r.stderr, "(see logbook "+strings.Join(args[:len(args)-1], " ")+" --help)")) {
			t.Errorf("%s: want the error once, on one line, pointing to --help; got (%d mentions):\n%s", strings.Join(args, " "), n, r.stderr)
		}
	}
}

// TestTopLevelHelpDocumentsEnvironment: every variable the binary reads
// is in --help.
func TestTopLevelHelpDocumentsEnvironment(t *testing.T) {
	r := run(t, "--help")
	for _, v := range []string{"LOGBOOK_DB", "LOGBOOK_AGENT", "LOGBOOK_LOG", "NO_COLOR", "logbook help COMMAND"} {
		if !strings.Contains(r.stdout, v) {
			t.Errorf("--help does not mention %s:\n%s", v, r.stdout)
		}
	}
}

// TestLogLevel: LOGBOOK_LOG picks the level of stderr's log lines; an
// unknown value is info, and said so in one warning (it was silent).
func TestLogLevel(t *testing.T) {
	for _, c := range []struct {
		env         string
		debug, info bool
	}{{"", false, true}, {"debug", true, true}, {"DEBUG", true, true}, {"warn", false, false}, {"error", false, false}, {"loud", false, true}, {"verbose", false, true}} {
		var b bytes.Buffer
		log := newLogger(&env{stderr: &b, getenv: func(k string) string {
			if k == "LOGBOOK_LOG" {
				return c.env
			}
			return ""
		}})
		log.Debug("a-debug-line")
		log.Info("an-info-line")
		if strings.Contains(b.String(), "a-debug-line") != c.debug || strings.Contains(b.String(), "an-info-line") != c.info {
			t.Errorf("LOGBOOK_LOG=%q: want debug %v info %v, got:\n%s", c.env, c.debug, c.info, b.String())
		}
		unknown := c.env == "loud" || c.env == "verbose"
		if warned := strings.Count(b.String(), "is not a level"); warned != map[bool]int{true: 1}[unknown] || (unknown && !strings.Contains(b.String(), "LOGBOOK_LOG="+c.env)) {
			t.Errorf("LOGBOOK_LOG=%q: warned %d times, want it said once for an unknown level:\n%s", c.env, warned, b.String())
		}
	}
}

// TestVersion: version and --version print the same line, a SemVer.
func TestVersion(t *testing.T) {
	a, b := run(t, "version"), run(t, "--version")
	wantExit(t, a, 0, "version")
	if a.stdout != b.stdout || b.code != 0 {
		t.Errorf("version and --version differ:\n%s\n%s", a, b)
	}
	semver := regexp.MustCompile(`^logbook \d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?\n$`)
	if !semver.MatchString(a.stdout) {
		t.Errorf("version: want logbook SEMVER, got %q", a.stdout)
	}
	// An argument it does not take is a usage error, as for every command.
	for _, args := range [][]string{{"version", "extra"}, {"--version", "--json"}} {
		if r := run(t, args...); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "unexpected argument") {
			t.Errorf("%v: %s, want exit 2 and no version", args, r)
		}
	}
}

// TestVersionOf: the version is the module's for a published build, else
// the next release's -dev with the revision and whether the tree was dirty.
func TestVersionOf(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"v1.2.3", nil, "1.2.3"},
		{"v0.3.0-rc.1", settings("vcs.revision", "0123456789abcdef"), "0.3.0-rc.1"},
		{"(devel)", settings("vcs.revision", "0123456789abcdef0123", "vcs.modified", "false"), nextRelease + "-dev+0123456789ab"},
		{"(devel)", settings("vcs.revision", "abc1234", "vcs.modified", "true"), nextRelease + "-dev+abc1234.dirty"},
		{"v0.0.0-20260101000000-0123456789ab+dirty", settings("vcs.revision", "0123456789abcdef", "vcs.modified", "true"), nextRelease + "-dev+0123456789ab.dirty"},
		{"v0.0.0-20261123092847-1570c2c84240", settings("vcs.revision", "1570c2c84240aaaa", "vcs.modified", "false"), nextRelease + "-dev+1570c2c84240"},
		{"", nil, nextRelease + "-dev"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Version: c.main}, Settings: c.settings}
		if got := versionOf(bi); got != c.want {
			t.Errorf("versionOf(%q, %v) = %q, want %q", c.main, c.settings, got, c.want)
		}
	}
}

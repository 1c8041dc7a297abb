package main

import (
	"runtime/debug"
	"strings"

	"golang.org/x/mod/module"
)

// nextRelease is the release the source is heading for: a build from a
// clone is a pre-release of it ("0.2.0-dev+abc1234").
const nextRelease = "0.2.0"

// version is the binary's version: set with -ldflags "-X main.version=…"
// by a release build, else taken from the build information.
var version = buildVersion()

func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nextRelease + "-dev"
	}
	return versionOf(bi)
}

// versionOf is the module's version when the binary was built from a
// published module (go install …@v1.2.3) or a tagged commit, else nextRelease-dev with the
// VCS revision (12 hex digits) and ".dirty" if the tree had changes, as
// SemVer build metadata.
func versionOf(bi *debug.BuildInfo) string {
	// A build from a clone gets a pseudo-version (v0.0.0-DATE-REVISION)
	// unless its commit is tagged: that says less than nextRelease-dev.
	if v := bi.Main.Version; v != "" && v != "(devel)" && !strings.Contains(v, "+dirty") && !module.IsPseudoVersion(v) {
		return strings.TrimPrefix(v, "v")
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	v := nextRelease + "-dev"
	if rev != "" {
		v += "+" + rev
		if dirty {
			v += ".dirty"
		}
	}
	return v
}

package boltstore

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// statPath reads the identity, size and names of the file a path names as
// os.Stat does: a file given another name, grown, or replaced at its path
// is seen so by checkSameFile.
func TestStatPathAgreesWithStat(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, make([]byte, 1234), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(want pathStat) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := statPath(path)
		if err != nil {
			t.Fatal(err)
		}
		if viaStat := statOf(fi); got != viaStat || got != want && want != (pathStat{}) {
			t.Fatalf("statPath %+v, os.Stat %+v, want %+v", got, viaStat, want)
		}
	}
	first, err := statPath(path)
	if err != nil || first.size != 1234 || first.links != 1 || first.ino == 0 {
		t.Fatalf("%+v, %v", first, err)
	}
	check(first)
	if err := os.Link(path, filepath.Join(dir, "g")); err == nil {
		if runtime.GOOS == "linux" { // elsewhere no journal counts names (hardLinks)
			first.links = 2
		}
		check(first)
	}
	other := filepath.Join(dir, "h")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	replaced, err := statPath(path)
	if err != nil || replaced.ino == first.ino || replaced.size != 0 {
		t.Fatalf("after the replacement: %+v, %v (before %+v)", replaced, err, first)
	}
	check(replaced)
	if _, err := statPath(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("a missing file: %v", err)
	}
}

package main

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNumberFlagsDecimal: a number flag is read in decimal: --size 010 is
// size 10 (the flag package read it as octal 8, and 0x14 as 20: a
// zero-padded seq silently another, with exit 0), and 0x14, 1e3 or 10_000
// are refused (exit 2) naming the value.
func TestNumberFlagsDecimal(t *testing.T) {
	path := healthyLedger(t, 3)
	ten := run(t, "root", "--db", path, "--size", "10")
	wantExit(t, ten, 0, "root --size 10")
	if r := run(t, "root", "--db", path, "--size", "010"); r.code != 0 || r.stdout != ten.stdout {
		t.Errorf("root --size 010: exit %d, %q; want the root of size 10, %q", r.code, r.stdout, ten.stdout)
	}
	for _, args := range [][]string{
		{"root", "--size", "0x14"}, {"root", "--size", "1e3"}, {"root", "--size", "10_000"}, {"root", "--size", "-1"},
		{"prove", "inclusion", "--seq", "0o7"}, {"replay", "--from", "0b1"}, {"root", "--size", "99999999999999999999"},
	} {
		r := run(t, append(args, "--db", path)...)
		if r.code != 2 || !strings.Contains(r.stderr, args[len(args)-1]) {
			t.Errorf("%s: exit %d, %s; want 2 naming the value", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := run(t, "root", "--help"); !strings.Contains(r.stdout, "-size uint") {
		t.Errorf("root --help does not show -size as a number:\n%s", r.stdout)
	}
}

// TestNoFlagPackageNumberFlags: every number flag of the CLI is a decimal
// one (decimalVar, decimalFlag): the flag package's own read any base.
func TestNoFlagPackageNumberFlags(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "decimal.go" { // (its help shows them as the flag package's)
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch sel.Sel.Name {
			case "Int", "IntVar", "Int64", "Int64Var", "Uint", "UintVar", "Uint64", "Uint64Var":
				if x := string(src[fset.Position(sel.X.Pos()).Offset:fset.Position(sel.X.End()).Offset]); x == "flag" || strings.HasSuffix(x, "fs") {
					t.Errorf("%s: %s.%s: a number flag read in any base; use decimalVar or decimalFlag", fset.Position(sel.Pos()), x, sel.Sel.Name)
				}
			}
			return true
		})
	}
}

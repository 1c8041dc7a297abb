package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// TestEveryTypeHasACode: every event type this package defines has a code
// in ledger.TypeCodes. A type without one is stored as a string in
// envelope version 2, and a code added for it later would make those
// events non-canonical (DecodeEvent refuses a coded type written as a
// string): a valid ledger would then fail verify as malformed.
func TestEveryTypeHasACode(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Type") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						types = append(types, s)
					}
				}
			}
			return true
		})
	}
	if len(types) < 13 {
		t.Fatalf("found %d event types (%v): the parse misses some", len(types), types)
	}
	for _, typ := range types {
		if !slices.Contains(ledger.TypeCodes[:], typ) {
			t.Errorf("event type %q has no code in ledger.TypeCodes", typ)
		}
	}
}

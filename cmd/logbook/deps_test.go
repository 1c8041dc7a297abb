package main

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/logbook-dev/logbook/"

// TestDependenciesPointInward enforces the layering
// cmd → mcp → commands → projections → skills → events → domain → ledger:
// a package may import only the layers below it, and only mcp may import
// the MCP SDK.
func TestDependenciesPointInward(t *testing.T) {
	layers := []string{"ledger", "domain", "events", "skills", "projections", "commands", "mcp"}
	for i, pkg := range layers {
		out, err := exec.Command("go", "list", "-deps", "./../../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, dep := range deps {
			for _, above := range layers[i+1:] {
				if dep == mod+above {
					t.Errorf("%s imports %s, a layer above it", pkg, above)
				}
			}
			if dep == mod+"cmd/logbook" {
				t.Errorf("%s imports cmd/logbook", pkg)
			}
			if strings.HasPrefix(dep, "github.com/modelcontextprotocol/go-sdk") && pkg != "mcp" {
				t.Errorf("%s imports the MCP SDK (%s); only mcp may", pkg, dep)
			}
		}
	}
}

// TestOnlyLedgerImportsBbolt checks bbolt is imported directly by the ledger
// package alone (others reach the file through ledger.Tx).
func TestOnlyLedgerImportsBbolt(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./../../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if imp == "go.etcd.io/bbolt" && !strings.HasSuffix(fields[0], "/ledger") {
				t.Errorf("%s imports bbolt directly", fields[0])
			}
		}
	}
}

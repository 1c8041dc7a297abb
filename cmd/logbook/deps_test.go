package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/logbook-dev/logbook/"

// soakHarness is the soak harness's packages (cmd/logbook-soak): a client
// of the product from outside, over stdio, HTTP and NATS, which imports no
// package of it (TestSoakHarnessIsOutside), so the rules of the product's
// layers do not apply to it.
const soakHarness = mod + "cmd/logbook-soak"

func isSoakHarness(pkg string) bool {
	return pkg == soakHarness || strings.HasPrefix(pkg, soakHarness+"/")
}

// TestDependenciesPointInward enforces the layering
// cmd → server → mcp → commands → projections → search → skills → events → domain →
// ledger: a package may import only the layers below it, and only mcp may
// import the MCP SDK.
func TestDependenciesPointInward(t *testing.T) {
	layers := []string{"ledger", "domain", "events", "skills", "search", "projections", "commands", "mcp", "server"}
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
			// Below mcp nothing reaches the SDK; above it (server) nothing
			// imports it directly (checked below).
			if strings.HasPrefix(dep, "github.com/modelcontextprotocol/go-sdk") && i < slices.Index(layers, "mcp") {
				t.Errorf("%s imports the MCP SDK (%s); only mcp may", pkg, dep)
			}
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "./../../server", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "github.com/modelcontextprotocol/go-sdk") {
			t.Errorf("server or cmd/logbook imports the MCP SDK (%s); only mcp may", imp)
		}
	}
}

// TestSoakHarnessIsOutside: the soak harness drives the built binaries and
// imports no package of logbook but its own, so what it checks is the
// product's surface alone, and the layers below need not know of it.
func TestSoakHarnessIsOutside(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./../logbook-soak/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, mod) && !isSoakHarness(dep) {
			t.Errorf("the soak harness imports %s", dep)
		}
	}
}

// TestOnlyEdgesImportNetHTTP: HTTP is the business of mcp (the MCP
// transport) and server (listening, tokens, admin socket, and its web
// console in server/console) alone (and of the soak harness, a client).
func TestOnlyEdgesImportNetHTTP(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./../../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if imp == "net/http" && fields[0] != mod+"mcp" && fields[0] != mod+"server" && fields[0] != mod+"server/console" && !isSoakHarness(fields[0]) {
				t.Errorf("%s imports net/http; only mcp, server and server/console may", fields[0])
			}
		}
	}
}

// TestInnermostPackages checks that the domain's rules and the event
// payloads import nothing but ledger and the standard library, so every
// layer and transport (and an auditor) can use them — and, for
// domain.FoldCase, the Go project's Unicode normalization and case folding
// tables (golang.org/x/text/unicode/norm and golang.org/x/text/cases), and
// for domain.Canonical, RFC 8785's numbers (github.com/gowebpki/jcs): pure
// functions over text, no I/O.
func TestInnermostPackages(t *testing.T) {
	innermostImports := []string{mod + "ledger", "golang.org/x/text/unicode/norm", "golang.org/x/text/cases", "github.com/gowebpki/jcs"}
	for _, pkg := range []string{"domain", "events"} {
		out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "./../../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(out)) {
			first, _, _ := strings.Cut(imp, "/")
			if !slices.Contains(innermostImports, imp) && strings.Contains(first, ".") {
				t.Errorf("%s imports %s; it may import only %s and the standard library", pkg, imp, strings.Join(innermostImports, ", "))
			}
		}
	}
}

// TestOnlyBoltstoreImportsBbolt checks bbolt is imported directly by the
// ledger/boltstore package alone (others reach the file through its Tx).
func TestOnlyBoltstoreImportsBbolt(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./../../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if imp == "go.etcd.io/bbolt" && !strings.HasSuffix(fields[0], "/ledger/boltstore") {
				t.Errorf("%s imports bbolt directly", fields[0])
			}
		}
	}
}

// TestLedgerFormatHasNoStorageEngine checks the log's format package depends
// on no storage engine, so an auditor can embed its verifiers alone.
func TestLedgerFormatHasNoStorageEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./../../ledger").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, engine := range []string{"go.etcd.io/bbolt", "github.com/nats-io/", "/ledger/boltstore"} {
			if strings.Contains(dep, engine) {
				t.Errorf("ledger depends on the storage engine %s", dep)
			}
		}
	}
}

// TestAuditLayer: audit sits above projections and ledger and below mcp and
// cmd. audit/boltaudit may read a ledger file (ledger/boltstore,
// projections); nothing of the write side or MCP is in an auditor, and no
// layer below imports audit.
func TestAuditLayer(t *testing.T) {
	const mod = "github.com/logbook-dev/logbook/"
	for _, pkg := range []string{"audit", "audit/boltaudit"} {
		out, err := exec.Command("go", "list", "-deps", "./../../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, above := range []string{"commands", "mcp", "cmd/logbook"} {
				if dep == mod+above {
					t.Errorf("%s imports %s, a layer above it", pkg, above)
				}
			}
			if strings.HasPrefix(dep, "github.com/modelcontextprotocol/go-sdk") {
				t.Errorf("%s imports the MCP SDK (%s)", pkg, dep)
			}
		}
	}
	for _, pkg := range []string{"ledger", "ledger/boltstore", "projections", "commands"} {
		out, err := exec.Command("go", "list", "-deps", "./../../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == mod+"audit" || strings.HasPrefix(dep, mod+"audit/") {
				t.Errorf("%s imports %s, a layer above it", pkg, dep)
			}
		}
	}
}

// TestAuditFormatHasNoStorageEngine: the proof-file and checkpoint formats
// and their checks (package audit) link no storage engine and no read
// model, so a program that only checks proofs embeds them alone.
func TestAuditFormatHasNoStorageEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./../../audit").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, engine := range []string{"go.etcd.io/bbolt", "github.com/nats-io/", "/ledger/boltstore", "/projections"} {
			if strings.Contains(dep, engine) {
				t.Errorf("audit depends on %s", dep)
			}
		}
	}
}

// TestFormatBuildsForWindows: the log's format and the auditor's checks
// build where the bbolt store's unix locking does not.
func TestFormatBuildsForWindows(t *testing.T) {
	cmd := exec.Command("go", "build", "./ledger/", "./audit/")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=windows go build ./ledger/ ./audit/: %v\n%s", err, out)
	}
}

// TestJetstreamLayer: ledger/jetstream is a storage engine beside
// boltstore — it may import ledger, ledger/boltstore and NATS, nothing
// above — and only it (and the commands wiring it, and the soak harness,
// which reads the stream's state) import NATS.
func TestJetstreamLayer(t *testing.T) {
	const mod = "github.com/logbook-dev/logbook/"
	out, err := exec.Command("go", "list", "-deps", "./../../ledger/jetstream").Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{mod + "ledger": true, mod + "ledger/boltstore": true, mod + "ledger/jetstream": true}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, mod) && !allowed[dep] {
			t.Errorf("ledger/jetstream imports %s", dep)
		}
	}
	out, err = exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./../../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/nats-io/") && fields[0] != mod+"ledger/jetstream" && fields[0] != mod+"cmd/logbook" && !isSoakHarness(fields[0]) {
				t.Errorf("%s imports NATS (%s) directly", fields[0], imp)
			}
		}
	}
}

// TestConsoleLayer: the web console only reads: no write side (commands),
// no MCP, nothing of the server it is mounted in.
func TestConsoleLayer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./../../server/console").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, no := range []string{mod + "commands", mod + "mcp", mod + "server", mod + "cmd/logbook", "github.com/modelcontextprotocol/go-sdk"} {
			if dep == no || strings.HasPrefix(dep, no+"/") && !strings.HasPrefix(dep, mod+"server/console") {
				t.Errorf("server/console imports %s", dep)
			}
		}
	}
}

// TestViewsLayer: views (what people look at, shared by the CLI and the web
// console) reads the ledger file and its projections only; nothing of the
// write side, MCP or HTTP is in it.
func TestViewsLayer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./../../views").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, above := range []string{mod + "commands", mod + "mcp", mod + "server", mod + "cmd/logbook", "net/http"} {
			if dep == above || strings.HasPrefix(dep, above+"/") {
				t.Errorf("views imports %s", dep)
			}
		}
	}
}

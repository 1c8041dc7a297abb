package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestE2EConsoleProof runs `logbook server` on a ledger, downloads an
// event's inclusion proof from its web console with a token, and checks it
// with `logbook check-proof` against the root and size the console states:
// it holds, and a proof with one path hash changed does not.
func TestE2EConsoleProof(t *testing.T) {
	db := healthyLedger(t, 3)
	s := startHTTPServer(t, db)
	token, _ := addToken(t, db, "--agent", "auditor")
	base := strings.TrimSuffix(s.url, "/mcp")
	get := func(path string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	code, page := get("/ledger")
	if code != http.StatusOK {
		t.Fatalf("/ledger: %d\n%s", code, page)
	}
	m := regexp.MustCompile(`<dd id="size">(\d+)</dd>[\s\S]*id="root">([0-9a-f]{64})<`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no size and root on /ledger:\n%s", page)
	}
	size, root := string(m[1]), string(m[2])
	code, proof := get("/proofs/5?size=" + size)
	if code != http.StatusOK {
		t.Fatalf("/proofs/5: %d %s", code, proof)
	}
	file := filepath.Join(t.TempDir(), "leaf-5.json")
	if err := os.WriteFile(file, proof, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "check-proof", file, "--root", root, "--size", size); r.code != 0 {
		t.Fatalf("check-proof of the console's proof: %v", r)
	}
	path := regexp.MustCompile(`"path": \[\s*"([0-9a-f])`).FindSubmatchIndex(proof)
	if path == nil {
		t.Fatalf("no path in the proof:\n%s", proof)
	}
	bad := []byte(string(proof))
	// Another hex digit: still well-formed, no longer a proof.
	if bad[path[2]] == '0' {
		bad[path[2]] = '1'
	} else {
		bad[path[2]] = '0'
	}
	if err := os.WriteFile(file, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "check-proof", file, "--root", root, "--size", size); r.code != 1 {
		t.Errorf("check-proof of a changed proof: %v", r)
	}
	if code := s.stop(); code != 0 {
		t.Errorf("server exit %d", code)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"golang.org/x/mod/sumdb/tlog"
)

// mth is RFC 9162's MTH, written out naively as the independent reference.
func mth(leaves []ledger.Hash) ledger.Hash {
	switch len(leaves) {
	case 0:
		return ledger.EmptyRoot
	case 1:
		return leaves[0]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	return ledger.NodeHash(mth(leaves[:k]), mth(leaves[k:]))
}

// leafHashes recomputes every event's hash from its stored bytes.
func leafHashes(t testing.TB, path string) []ledger.Hash {
	t.Helper()
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var hs []ledger.Hash
	l.View(func(tx *boltstore.Tx) error {
		return tx.Scan(1, tx.Head().Seq+1, func(r ledger.Record) error {
			hs = append(hs, ledger.LeafHash(r.Raw))
			return nil
		})
	})
	return hs
}

func mustHash(t testing.TB, s string) ledger.Hash {
	t.Helper()
	h, err := ledger.ParseHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func tlogHashes(t testing.TB, hs []string) []tlog.Hash {
	out := make([]tlog.Hash, len(hs))
	for i, h := range hs {
		out[i] = tlog.Hash(mustHash(t, h))
	}
	return out
}

func TestRoot(t *testing.T) {
	path := healthyLedger(t, 4)
	leaves := leafHashes(t, path)
	n := uint64(len(leaves))
	for _, size := range []uint64{1, 2, 3, 7, 8, 9, n - 1, n} {
		var out struct {
			Size      uint64
			LeafCount uint64 `json:"leaf_count"`
			Root      string
		}
		r := run(t, "root", "--db", path, "--size", strconv.FormatUint(size, 10), "--json")
		wantExit(t, r, 0, "root")
		decodeJSON(t, r, &out)
		if out.Size != size || out.Root != mth(leaves[:size]).String() {
			t.Errorf("root --size %d: %s, want %s", size, r.stdout, mth(leaves[:size]))
		}
	}
	for _, rg := range [][2]uint64{{1, 1}, {3, 9}, {5, 12}, {2, n}, {n, n}} {
		var out struct {
			From, To  uint64
			LeafCount uint64 `json:"leaf_count"`
			Root      string
		}
		r := run(t, "root", "--db", path, "--from", strconv.FormatUint(rg[0], 10), "--to", strconv.FormatUint(rg[1], 10), "--json")
		wantExit(t, r, 0, "root --from --to")
		decodeJSON(t, r, &out)
		if want := mth(leaves[rg[0]-1 : rg[1]]); out.Root != want.String() || out.LeafCount != rg[1]-rg[0]+1 {
			t.Errorf("root --from %d --to %d: %s, want %s", rg[0], rg[1], r.stdout, want)
		}
	}
	r := run(t, "root", "--db", path)
	wantExit(t, r, 0, "root")
	if want := fmt.Sprintf("size %d root %s\n", n, mth(leaves)); r.stdout != want {
		t.Errorf("root: %q, want %q", r.stdout, want)
	}
}

// TestProofs: every proof prove writes verifies with check-proof and with
// golang.org/x/mod/sumdb/tlog, an RFC 9162 verifier written independently.
func TestProofs(t *testing.T) {
	path := healthyLedger(t, 4)
	leaves := leafHashes(t, path)
	n := uint64(len(leaves))
	dir := t.TempDir()
	for _, size := range []uint64{n, 13} {
		for seq := uint64(1); seq <= size; seq++ {
			file := filepath.Join(dir, fmt.Sprintf("incl-%d-%d.json", seq, size))
			r := run(t, "prove", "inclusion", "--db", path, "--seq", strconv.FormatUint(seq, 10), "--size", strconv.FormatUint(size, 10), "--out", file)
			wantExit(t, r, 0, "prove inclusion")
			var p proofFile
			b, _ := os.ReadFile(file)
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			root := mth(leaves[:size])
			if p.Root != root.String() || p.LeafHash != leaves[seq-1].String() || p.TreeSize != size || p.Seq != seq {
				t.Fatalf("inclusion %d in %d: %s", seq, size, b)
			}
			if err := tlog.CheckRecord(tlogHashes(t, p.Path), int64(size), tlog.Hash(root), int64(seq-1), tlog.Hash(leaves[seq-1])); err != nil {
				t.Errorf("tlog.CheckRecord(seq %d, size %d): %v", seq, size, err)
			}
			if seq%4 == 1 || seq == size {
				r := run(t, "check-proof", file, "--root", root.String(), "--size", strconv.FormatUint(size, 10))
				wantExit(t, r, 0, "check-proof inclusion")
			}
		}
	}
	for _, old := range []uint64{1, 2, 3, 4, 7, 8, 11, n - 1, n} {
		for _, size := range []uint64{old, old + 1, n} {
			if size > n {
				continue
			}
			file := filepath.Join(dir, fmt.Sprintf("cons-%d-%d.json", old, size))
			if _, err := os.Stat(file); err == nil {
				continue // proved already (old+1 = n); --out never replaces a file
			}
			r := run(t, "prove", "consistency", "--db", path, "--old", strconv.FormatUint(old, 10), "--new", strconv.FormatUint(size, 10), "--out", file)
			wantExit(t, r, 0, "prove consistency")
			var p proofFile
			b, _ := os.ReadFile(file)
			json.Unmarshal(b, &p)
			oldRoot, root := mth(leaves[:old]), mth(leaves[:size])
			if p.OldRoot != oldRoot.String() || p.Root != root.String() || p.OldSize != old || p.TreeSize != size {
				t.Fatalf("consistency %d → %d: %s", old, size, b)
			}
			if err := tlog.CheckTree(tlogHashes(t, p.Path), int64(size), tlog.Hash(root), int64(old), tlog.Hash(oldRoot)); err != nil {
				t.Errorf("tlog.CheckTree(%d → %d): %v", old, size, err)
			}
			r = run(t, "check-proof", file, "--root", root.String(), "--size", strconv.FormatUint(size, 10),
				"--old-root", oldRoot.String(), "--old-size", strconv.FormatUint(old, 10), "--json")
			wantExit(t, r, 0, "check-proof consistency")
		}
	}
	// A proof checked against another root fails, with exit 1.
	file := filepath.Join(dir, fmt.Sprintf("incl-%d-%d.json", 5, n))
	r := run(t, "check-proof", file, "--root", mth(leaves[:n-1]).String())
	wantExit(t, r, 1, "check-proof against the wrong root")
	r = run(t, "check-proof", file, "--root", mth(leaves).String(), "--size", strconv.FormatUint(n-1, 10))
	wantExit(t, r, 1, "check-proof against the wrong size")
	// stdin, and prove to stdout.
	r = run(t, "prove", "inclusion", "--db", path, "--seq", "2")
	wantExit(t, r, 0, "prove to stdout")
	r = runIn(t, bytes.NewReader([]byte(r.stdout)), "check-proof", "-", "--root", mth(leaves).String(), "--json")
	wantExit(t, r, 0, "check-proof from stdin")
}

// runInProcess runs the command line in this process (no exec) and returns
// its exit code: for checks that run thousands of times.
func runInProcess(stdin io.Reader, args ...string) int {
	return exitCode(Run(context.Background(), args, stdin, io.Discard, io.Discard))
}

// TestCheckProofBitFlips: a proof file with any one bit flipped fails
// check-proof (exit 1), given the trusted root and size.
func TestCheckProofBitFlips(t *testing.T) {
	path := healthyLedger(t, 4)
	leaves := leafHashes(t, path)
	n := uint64(len(leaves))
	root := mth(leaves).String()
	size := strconv.FormatUint(n, 10)
	incl := run(t, "prove", "inclusion", "--db", path, "--seq", "11")
	cons := run(t, "prove", "consistency", "--db", path, "--old", "11")
	oldRoot := mth(leaves[:11]).String()
	for _, c := range []struct {
		name  string
		proof []byte
		args  []string
	}{
		{"inclusion", []byte(incl.stdout), []string{"check-proof", "-", "--root", root, "--size", size}},
		{"consistency", []byte(cons.stdout), []string{"check-proof", "-", "--root", root, "--size", size, "--old-root", oldRoot, "--old-size", "11"}},
	} {
		if code := runInProcess(bytes.NewReader(c.proof), c.args...); code != 0 {
			t.Fatalf("%s: the untouched proof fails (exit %d)", c.name, code)
		}
		flips := 0
		for i := range c.proof {
			for bit := range 8 {
				bad := bytes.Clone(c.proof)
				bad[i] ^= 1 << bit
				if code := runInProcess(bytes.NewReader(bad), c.args...); code != 1 {
					t.Errorf("%s: bit %d of byte %d (%q) flipped: exit %d, want 1", c.name, bit, i, c.proof[i], code)
				}
				flips++
			}
		}
		// And a few through the binary, the way an auditor runs it.
		for _, i := range []int{len(c.proof) / 3, len(c.proof) / 2, len(c.proof) - 10} {
			bad := bytes.Clone(c.proof)
			bad[i] ^= 0x04
			r := runIn(t, bytes.NewReader(bad), c.args...)
			wantExit(t, r, 1, c.name+" with a flipped bit, through the binary")
		}
		t.Logf("%s: %d single-bit edits, all rejected", c.name, flips)
	}
	// The path's hashes really are checked: not just the canonical form.
	var p proofFile
	json.Unmarshal([]byte(incl.stdout), &p)
	h := mustHash(t, p.Path[0])
	h[0] ^= 1
	p.Path[0] = hex.EncodeToString(h[:])
	edited, _ := p.encode()
	if code := runInProcess(bytes.NewReader(edited), "check-proof", "-", "--root", root); code != 1 {
		t.Errorf("a re-encoded proof with a wrong path hash: exit %d", code)
	}
}

// TestAuditorCommandsAnswerForTheBytes: root, prove and checkpoint answer
// for the events' stored bytes, as their help says, though they read the
// stored Merkle nodes: on a file whose event was edited in place (the
// nodes over it stored before), each refuses, exit 1 saying the file is
// damaged, rather than print, prove or sign the root the nodes still
// give; a range no stored node covers is hashed from the bytes, edited or
// not.
func TestAuditorCommandsAnswerForTheBytes(t *testing.T) {
	path := healthyLedger(t, 10)
	n := headOf(t, path)
	if n < 32 {
		t.Fatalf("%d events: want two stored nodes of 16", n)
	}
	flipEventByte(t, path, 3)
	leaves := leafHashes(t, path) // the edited bytes'
	skey := writeKey(t, t.TempDir())
	for _, args := range [][]string{
		{"root"},
		{"root", "--size", "16"},
		{"root", "--from", "1", "--to", "16"},
		{"root", "--from", "1", "--to", "20"},
		{"prove", "inclusion", "--seq", "3"},
		{"prove", "inclusion", "--seq", "20"},
		{"prove", "consistency", "--old", "16"},
		{"prove", "consistency", "--old", "2", "--new", "17"},
		{"checkpoint", "--key", skey},
	} {
		r := run(t, append(args, "--db", path)...)
		wantExit(t, r, 1, strings.Join(args, " "))
		if !strings.Contains(r.stderr, "damaged") || !strings.Contains(r.stderr, "edited or damaged") {
			t.Errorf("%s: %s", strings.Join(args, " "), r)
		}
	}
	// No stored node covers events 2..4: their root is the bytes'.
	r := run(t, "root", "--db", path, "--from", "2", "--to", "4")
	wantExit(t, r, 0, "root of a range below the stored nodes")
	if want := fmt.Sprintf("events 2..4 (3 leaves) root %s\n", mth(leaves[1:4])); r.stdout != want {
		t.Errorf("root --from 2 --to 4: %q, want %q", r.stdout, want)
	}
	// Events after the edit are proved against nodes over none of it.
	r = run(t, "root", "--db", path, "--from", "17", "--to", "32")
	wantExit(t, r, 0, "root of a range past the edit")
	if want := fmt.Sprintf("events 17..32 (16 leaves) root %s\n", mth(leaves[16:32])); r.stdout != want {
		t.Errorf("root --from 17 --to 32: %q, want %q", r.stdout, want)
	}
}

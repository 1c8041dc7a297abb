package main

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2ELedgerSwappedUnderServers: the ledger file deleted, or replaced by
// an older copy of itself, under two running servers: every later call is
// answered ERR_STORAGE saying why, the servers stay up, and nothing is
// created or written at the path.
func TestE2ELedgerSwappedUnderServers(t *testing.T) {
	t.Parallel()
	for _, swap := range []string{"deleted", "older copy"} {
		t.Run(swap, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "swap.db")
			a := startE2E(t, e2eConfig{DB: db, Agent: "a"})
			a.initialize("2025-11-25")
			if r := a.call("task_create", map[string]any{"title": "first", "project": "swap"}); !r.Env.OK {
				t.Fatalf("task_create: %+v", r)
			}
			older := filepath.Join(dir, "older.db")
			raw, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(older, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			b := startE2E(t, e2eConfig{DB: db, Agent: "b"})
			b.initialize("2025-11-25")
			for _, s := range []*e2eServer{a, b} {
				if r := s.call("task_create", map[string]any{"title": "second", "project": "swap"}); !r.Env.OK {
					t.Fatalf("task_create: %+v", r)
				}
			}
			if swap == "deleted" {
				err = os.Remove(db)
			} else {
				err = os.Rename(older, db)
			}
			if err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(db)
			for round := range 3 {
				for _, s := range []*e2eServer{a, b} {
					r := s.call("task_create", map[string]any{"title": "after", "project": "swap"})
					if r.code() != "ERR_STORAGE" {
						t.Fatalf("round %d: a call after the ledger was %s: %+v, want ERR_STORAGE", round, swap, r)
					}
					if !strings.Contains(string(r.Env.Error.Details), "deleted or replaced") {
						t.Errorf("ERR_STORAGE does not say why: %s", r.Env.Error.Details)
					}
				}
			}
			after, statErr := os.ReadFile(db)
			if !bytes.Equal(before, after) || (before == nil) != (statErr != nil) {
				t.Errorf("the path was written or created after the ledger was %s", swap)
			}
			for _, s := range []*e2eServer{a, b} {
				select {
				case <-s.exited:
					t.Errorf("a server exited after the ledger was %s", swap)
				default:
				}
			}
		})
	}
}

// TestE2EDamagedFile: verify reports a damaged file as an integrity
// failure or an error (exit 1 or 2, never a crash), and serve refuses to
// start on one it cannot read, saying so.
func TestE2EDamagedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	w := newLedger(t, good, "damager")
	for i := range 300 {
		w.call("task_create", map[string]any{"title": "t", "project": "damage", "description": strings.Repeat("x", 1+i%50)})
	}
	w.l.Close()
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	reported := 0
	for round := range 12 {
		b := append([]byte(nil), raw...)
		if round%3 == 0 {
			b = b[:usedBytes(t, raw)/2] // half of what the last commit uses, whatever the file's slack
		} else {
			for range 30 {
				i := 2*4096 + rng.IntN(len(b)-2*4096)
				b[i] ^= byte(1 + rng.IntN(255))
			}
		}
		path := filepath.Join(dir, "damaged.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r := run(t, "verify", "--db", path)
		switch {
		case r.code == 0:
			// Damaged where nothing reads (free pages): nothing to report.
		case r.code == 1:
			reported++
		case r.code == 2 && strings.Contains(r.stderr, "invalid database"):
			reported++ // bbolt refuses to open it at all, saying why
		default:
			t.Fatalf("round %d: verify of a damaged file: %s", round, r)
		}
		if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "SIGSEGV") || strings.Contains(r.stderr, "SIGBUS") {
			t.Fatalf("round %d: verify printed a crash: %s", round, r)
		}
		if round%3 == 0 {
			// serve refuses a file it cannot read, saying so.
			s := runIn(t, strings.NewReader(""), "serve", "--db", path, "--skills", "../../fixtures/skills")
			if s.code == 0 || !strings.Contains(s.stderr, "damaged") || strings.Contains(s.stderr, "goroutine ") {
				t.Errorf("round %d: serve on a truncated file: %s", round, s)
			}
		}
	}
	if reported < 6 {
		t.Errorf("only %d of 12 damaged files reported", reported)
	}
	// Both meta pages' magic damaged: bbolt calls it no bbolt file, but
	// the root page they name is a ledger's, so it is a damaged ledger
	// (exit 1), not another program's file (it was exit 2, "not a logbook
	// ledger").
	b := append([]byte(nil), raw...)
	pageSize := int(binary.LittleEndian.Uint32(raw[24:]))
	for _, at := range []int{16, pageSize + 16} {
		copy(b[at:], []byte{0, 0, 0, 0})
	}
	path := filepath.Join(dir, "magic.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "verify", "--db", path); r.code != 1 || !strings.Contains(r.stderr, "damaged") {
		t.Errorf("verify of a ledger whose meta pages lost their magic: %s", r)
	}
	if s := runIn(t, strings.NewReader(""), "serve", "--db", path, "--skills", "../../fixtures/skills"); s.code == 0 || !strings.Contains(s.stderr, "damaged") {
		t.Errorf("serve on a ledger whose meta pages lost their magic: %s", s)
	}
}

// usedBytes is how much of ledger file raw its newest commit uses: the
// high-water page of the meta page with the higher txid, in bytes. (Meta
// page: a 16-byte page header, then magic, version, page size, flags (4
// bytes each), root bucket (16), freelist page (8), high-water page (8),
// txid (8).) The file past it is slack bbolt grew into.
func usedBytes(t testing.TB, raw []byte) int {
	t.Helper()
	pageSize := int(binary.LittleEndian.Uint32(raw[24:]))
	var used, txid uint64
	for slot := range 2 {
		m := raw[slot*pageSize:]
		if tx := binary.LittleEndian.Uint64(m[64:]); tx >= txid {
			used, txid = binary.LittleEndian.Uint64(m[56:])*uint64(pageSize), tx
		}
	}
	if used == 0 || used > uint64(len(raw)) {
		t.Fatalf("meta page says the ledger uses %d of its %d bytes", used, len(raw))
	}
	return int(used)
}

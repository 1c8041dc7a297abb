package commands

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/logbook-dev/logbook/projections"
	bolt "go.etcd.io/bbolt"
)

// TestFileUsage reports what BenchmarkBytesPerThought reports of its own
// ledger for any closed ledger file, one written through the binary (by
// bench/peers, say): its size, and each bucket's and the knowledge index's
// leaves' bytes in use against the pages they take, per thought.
//
//	LOGBOOK_USAGE_FILE=path [LOGBOOK_USAGE_THOUGHTS=n] go test ./commands -run TestFileUsage -v
//
// n, the thoughts the file holds, defaults to half its events (a thought
// and its tool.called). The file must not be open elsewhere: bbolt reads
// its freelist only when opening it for writing (nothing is written).
func TestFileUsage(t *testing.T) {
	path := os.Getenv("LOGBOOK_USAGE_FILE")
	if path == "" {
		t.Skip("LOGBOOK_USAGE_FILE names no ledger file")
	}
	n := 0
	if env := os.Getenv("LOGBOOK_USAGE_THOUGHTS"); env != "" {
		v, err := strconv.Atoi(env)
		if err != nil || v <= 0 {
			t.Fatalf("LOGBOOK_USAGE_THOUGHTS=%q: want a count like 100000", env)
		}
		n = v
	} else {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(func(tx *bolt.Tx) error {
			if ev := tx.Bucket([]byte("events")); ev != nil {
				n = max(1, ev.Stats().KeyN/2)
			}
			return nil
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	fileUsage(t, path, n, path)
}

// fileUsage logs the size of the closed ledger file at path and every
// bucket's pages per thought (n thoughts), the knowledge index's leaves by
// key prefix too, and returns the size.
func fileUsage(tb testing.TB, path string, n int, when string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil) // not read-only: that would skip the freelist
	if err != nil {
		tb.Fatal(err)
	}
	type row struct {
		name                    string
		pages, used             int
		branchPages, branchUsed int
	}
	var rows []row
	var used int64 // the high-water mark: pages ever allocated
	var ixRoot uint64
	ps := db.Info().PageSize
	add := func(name string, bk *bolt.Bucket) {
		s := bk.Stats()
		pages := (s.BranchPageN + s.BranchOverflowN + s.LeafPageN + s.LeafOverflowN) * ps
		rows = append(rows, row{name, pages, s.BranchInuse + s.LeafInuse, (s.BranchPageN + s.BranchOverflowN) * ps, s.BranchInuse})
	}
	err = db.View(func(tx *bolt.Tx) error {
		used = tx.Size()
		if sp := tx.Bucket([]byte("spaces")); sp != nil {
			if ix := sp.Bucket([]byte("knowledge_index")); ix != nil {
				ixRoot = uint64(ix.Root())
			}
		}
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			switch string(name) {
			case "spaces", "merkle":
				subs := 0
				err := bk.ForEachBucket(func(k []byte) error {
					label := string(name) + "/" + string(k)
					if string(name) == "merkle" {
						label = fmt.Sprintf("merkle/level %d", k[0])
					}
					add(label, bk.Bucket(k))
					subs++
					return nil
				})
				if err != nil || subs > 0 {
					return err
				}
				// format 3's merkle bucket holds its nodes itself
			}
			add(string(name), bk)
			return nil
		})
	})
	st := db.Stats()
	db.Close()
	if err != nil {
		tb.Fatal(err)
	}
	slices.SortFunc(rows, func(a, c row) int { return c.pages - a.pages })
	per := func(v int) float64 { return float64(v) / float64(n) }
	tb.Logf("%s: file %d bytes, %.0f B/thought (pages used %.0f B/thought, of which free %.0f)", when, fi.Size(), per(int(fi.Size())),
		per(int(used)), per(st.FreePageN*ps))
	for _, r := range rows {
		if r.pages == 0 {
			continue
		}
		tb.Logf("  %-28s %8.1f %8.1f %5.1f%%   branches %6.1f %6.1f", r.name, per(r.pages), per(r.used), 100*float64(r.used)/float64(r.pages),
			per(r.branchPages), per(r.branchUsed))
	}
	if ixRoot != 0 {
		m, err := leavesByPrefix(path, ixRoot, ps)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range prefixRows(m, ps, n) {
			tb.Log(r)
		}
	}
	return fi.Size()
}

// leafFill is what a walk of a bucket's leaf pages found for the leaves
// whose first key starts with one byte: how many pages (overflow pages
// counted) and how many of their bytes hold the page header, elements,
// keys and values.
type leafFill struct {
	pages, used int
}

// branchPages is the key of leavesByPrefix's sum of the branch pages (a
// byte no key of the knowledge index starts with).
const branchPages = 0

// leavesByPrefix walks the tree whose root page is root in the bbolt file
// at path (page size ps) and sums its leaf pages by the first byte of their
// first key, and its branch pages under branchPages. It reads the file's
// bytes as bbolt lays them out (a 16-byte page header: id, flags, count,
// overflow; 16-byte elements), since bbolt tells a bucket's totals only.
func leavesByPrefix(path string, root uint64, ps int) (map[byte]*leafFill, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[byte]*leafFill{}
	var walk func(id uint64, depth int) error
	walk = func(id uint64, depth int) error {
		off := int(id) * ps
		if depth > 64 || off+16 > len(data) {
			return fmt.Errorf("page %d: out of the file or too deep", id)
		}
		p := data[off:]
		flags := binary.LittleEndian.Uint16(p[8:])
		count := int(binary.LittleEndian.Uint16(p[10:]))
		overflow := int(binary.LittleEndian.Uint32(p[12:]))
		switch flags {
		case 0x01: // branch
			br := out[branchPages]
			if br == nil {
				br = &leafFill{}
				out[branchPages] = br
			}
			br.pages += 1 + overflow
			br.used += 16 + 16*count
			for i := range count {
				e := p[16+16*i:]
				br.used += int(binary.LittleEndian.Uint32(e[4:])) // the key
				if err := walk(binary.LittleEndian.Uint64(e[8:]), depth+1); err != nil {
					return err
				}
			}
		case 0x02: // leaf
			used := 16
			var first byte
			for i := range count {
				e := p[16+16*i:]
				pos, ks, vs := int(binary.LittleEndian.Uint32(e[4:])), int(binary.LittleEndian.Uint32(e[8:])), int(binary.LittleEndian.Uint32(e[12:]))
				if i == 0 && ks > 0 {
					first = p[16+16*i+pos]
				}
				used += 16 + ks + vs
			}
			f := out[first]
			if f == nil {
				f = &leafFill{}
				out[first] = f
			}
			f.pages += 1 + overflow
			f.used += used
		default:
			return fmt.Errorf("page %d: flags %#x", id, flags)
		}
		return nil
	}
	return out, walk(root, 0)
}

// prefixRows formats leavesByPrefix's sums per thought, largest first.
func prefixRows(m map[byte]*leafFill, ps, n int) []string {
	keys := slices.Collect(func(yield func(byte) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortFunc(keys, func(a, b byte) int { return m[b].pages - m[a].pages })
	var rows []string
	for _, k := range keys {
		f := m[k]
		label := fmt.Sprintf("leaves from %q", k)
		if k == branchPages {
			label = "branches"
		}
		rows = append(rows, fmt.Sprintf("    %-16s %6d pages %8.1f B/thought in use %8.1f %5.1f%%", label, f.pages,
			float64(f.pages*ps)/float64(n), float64(f.used)/float64(n), 100*float64(f.used)/float64(f.pages*ps)))
	}
	return rows
}

// closedLeaves closes h's ledger, sums the knowledge index's leaf pages by
// key prefix (leavesByPrefix), and opens the ledger again.
func closedLeaves(tb testing.TB, h *harness) map[byte]*leafFill {
	tb.Helper()
	h.l.Close()
	var root uint64
	var ps int
	db, err := bolt.Open(h.path, 0o600, &bolt.Options{ReadOnly: true})
	if err == nil {
		ps = db.Info().PageSize
		err = db.View(func(tx *bolt.Tx) error {
			if sp := tx.Bucket([]byte("spaces")); sp != nil {
				if ix := sp.Bucket([]byte("knowledge_index")); ix != nil {
					root = uint64(ix.Root())
				}
			}
			if root == 0 {
				return fmt.Errorf("no knowledge_index space, or one inline")
			}
			return nil
		})
		db.Close()
	}
	var m map[byte]*leafFill
	if err == nil {
		m, err = leavesByPrefix(h.path, root, ps)
	}
	if err != nil {
		tb.Fatal(err)
	}
	h.reopen(h.opts)
	return m
}

// TestKnowledgeDocTablePacked records thoughts one call (one commit) at a
// time, as one agent does, and checks that the knowledge index's document
// table ("d" keys, written in key order) takes no more pages live than a
// rebuild packs it into. Its 256-document blocks (1.3 KB, the last one
// growing with every thought) kept two to a page live, 64% full: 12 pages
// against a rebuild's 8 for 6,000 thoughts.
func TestKnowledgeDocTablePacked(t *testing.T) {
	if testing.Short() {
		t.Skip("6,000 calls")
	}
	h := newHarness(t, Options{Agent: "fill"})
	task := h.call("task_create", map[string]any{"title": "fill", "project": "p"}, "OK")["task_id"].(string)
	for i := range 6000 {
		h.call("thought_record", map[string]any{"task_id": task, "type": "analysis", "content": benchThoughtText(i)}, "OK")
	}
	live := closedLeaves(t, h)['d']
	if _, err := Rebuild(h.l, projections.RebuildOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	rebuilt := closedLeaves(t, h)['d']
	if live == nil || rebuilt == nil {
		t.Fatalf("no document table leaves: live %v, rebuilt %v", live, rebuilt)
	}
	t.Logf("document table: live %d pages (%d bytes in use), rebuilt %d pages (%d bytes)", live.pages, live.used, rebuilt.pages, rebuilt.used)
	if live.pages*10 > rebuilt.pages*11+10 {
		t.Errorf("document table: %d pages live, %d rebuilt: want at most 10%% more live", live.pages, rebuilt.pages)
	}
}

// TestKnowledgeIndexBranchesPacked records thoughts one call at a time and
// checks the knowledge index's branch pages: its terms are written all over
// the index, and split full (FillPercent 1) each branch page split left a
// page of 3 to 5 children (bbolt moves a node's last three keys to the new
// page) that no later insert filled: 31 branch pages over 311 leaves, 9% of
// their bytes in use, at 20,000 thoughts.
func TestKnowledgeIndexBranchesPacked(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 calls")
	}
	h := newHarness(t, Options{Agent: "fill"})
	h.tampered = true // calls made past h.call; the fill is what is checked
	task := h.call("task_create", map[string]any{"title": "fill", "project": "p"}, "OK")["task_id"].(string)
	recordThoughts(t, h, task, 20000, 1, benchThoughtText)
	m := closedLeaves(t, h)
	br, leaves := m[branchPages], 0
	for k, f := range m {
		if k != branchPages {
			leaves += f.pages
		}
	}
	if br == nil {
		t.Fatalf("no branch pages over %d leaves", leaves)
	}
	t.Logf("knowledge index: %d leaf pages, %d branch pages (%d bytes in use)", leaves, br.pages, br.used)
	// A branch page holds about a hundred children: a packed tree has one
	// for each hundred leaves, and the root.
	if want := leaves/25 + 2; br.pages > want {
		t.Errorf("%d branch pages over %d leaves: want at most %d", br.pages, leaves, want)
	}
}

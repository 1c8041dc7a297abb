package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	bolt "go.etcd.io/bbolt"
)

// Tampering, the way someone with the file would do it: bytes edited in
// place, or keys rewritten with bbolt directly (bucket layout: events,
// merkle (format 3, which these tests make: the nodes of levels 4 and up,
// keyed by the seq completing each and its level; before, merkle/<level>
// keyed by index), meta "head", spaces/<name>). Test code only: the product
// reaches bbolt through ledger alone.

func be(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// editBolt runs fn in a bbolt write transaction on the file.
func editBolt(t testing.TB, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// rawEvent returns the stored bytes of event seq.
func rawEvent(t testing.TB, path string, seq uint64) []byte {
	t.Helper()
	var raw []byte
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.View(func(tx *boltstore.Tx) error {
		r, err := tx.Event(seq)
		raw = bytes.Clone(r.Raw)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return raw
}

// flipEventByte changes one byte of event seq's payload wherever it lies
// in the file, with no tool but a file editor: in its page and in any
// stale copy a freed page still holds.
func flipEventByte(t testing.TB, path string, seq uint64) {
	t.Helper()
	raw := rawEvent(t, path, seq)
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for from := 0; ; found++ {
		at := bytes.Index(file[from:], raw)
		if at < 0 {
			break
		}
		at += from
		file[at+len(raw)-40] ^= 0x01 // inside the payload, before the prev hash
		from = at + len(raw)
	}
	if found == 0 {
		t.Fatalf("event %d is not in the file", seq)
	}
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
}

// putEventKey stores a copy of event seq's bytes under key k of the events
// bucket.
func putEventKey(t testing.TB, path string, k []byte, seq uint64) {
	t.Helper()
	editBolt(t, path, func(tx *bolt.Tx) error {
		ev := tx.Bucket([]byte("events"))
		return ev.Put(k, bytes.Clone(ev.Get(be(seq))))
	})
}

// swapEvents exchanges the stored bytes of events a and b.
func swapEvents(t testing.TB, path string, a, b uint64) {
	t.Helper()
	editBolt(t, path, func(tx *bolt.Tx) error {
		ev := tx.Bucket([]byte("events"))
		ra, rb := bytes.Clone(ev.Get(be(a))), bytes.Clone(ev.Get(be(b)))
		return errorsJoin(ev.Put(be(a), rb), ev.Put(be(b), ra))
	})
}

// truncateTail deletes the last k events and the Merkle nodes they
// completed; with fixHead the recorded head is moved back too, so the rest
// is a perfectly consistent, shorter log.
func truncateTail(t testing.TB, path string, k uint64, fixHead bool) {
	t.Helper()
	head := headOf(t, path)
	keep := head - k
	var keepHash []byte
	if keep > 0 {
		h := ledger.LeafHash(rawEvent(t, path, keep))
		keepHash = h[:]
	}
	editBolt(t, path, func(tx *bolt.Tx) error {
		ev := tx.Bucket([]byte("events"))
		for seq := keep + 1; seq <= head; seq++ {
			if err := ev.Delete(be(seq)); err != nil {
				return err
			}
		}
		if !fixHead {
			return nil
		}
		for level := uint(0); head>>level > 0; level++ {
			for i := keep >> level; i < head>>level; i++ {
				b, k := nodeIn(tx, level, i)
				if b == nil {
					continue // formats 2 and 3 store no levels below 4
				}
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("head"), append(be(keep), keepHash...))
	})
}

// nodeIn returns the bucket and key of the Merkle node (level, index): in
// a format-3 file the merkle bucket itself, keyed by the seq that
// completes the node and its level (no level below 4: a nil bucket);
// before, the level's sub-bucket (nil if not stored), keyed by index.
func nodeIn(tx *bolt.Tx, level uint, index uint64) (*bolt.Bucket, []byte) {
	merkle := tx.Bucket([]byte("merkle"))
	if format3(tx) {
		if level < 4 {
			return nil, nil
		}
		return merkle, append(be((index+1)<<level), byte(level))
	}
	return merkle.Bucket([]byte{byte(level)}), be(index)
}

// format3 reports whether the file is of format 3 or later: every stored
// Merkle node in the merkle bucket itself.
func format3(tx *bolt.Tx) bool {
	return binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("format"))) >= 3
}

// corruptNode flips a bit of the stored Merkle node (level, index).
func corruptNode(t testing.TB, path string, level uint, index uint64) {
	t.Helper()
	editBolt(t, path, func(tx *bolt.Tx) error {
		b, k := nodeIn(tx, level, index)
		if b == nil {
			t.Fatalf("no level %d stored", level)
		}
		h := bytes.Clone(b.Get(k))
		if len(h) != 32 {
			t.Fatalf("no node %d/%d", level, index)
		}
		h[7] ^= 0x10
		return b.Put(k, h)
	})
}

// editTaskTitle replaces old by new (same length) in the stored projection
// of task number n.
func editTaskTitle(t testing.TB, path string, n uint64, old, new string) {
	t.Helper()
	if len(old) != len(new) {
		t.Fatal("same length, so the record still decodes")
	}
	editBolt(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("spaces")).Bucket([]byte("tasks"))
		v := bytes.Clone(b.Get(be(n)))
		if !bytes.Contains(v, []byte(old)) {
			t.Fatalf("task %d has no %q", n, old)
		}
		return b.Put(be(n), bytes.Replace(v, []byte(old), []byte(new), 1))
	})
}

// rewriteFrom rewrites the payload of event seq (a tool.called result
// digest) and re-chains everything after it: new prev links, every Merkle
// node recomputed, the head moved. Every hash in the file is consistent
// again; only a root published before the rewrite can tell.
func rewriteFrom(t testing.TB, path string, seq uint64) {
	t.Helper()
	head := headOf(t, path)
	editBolt(t, path, func(tx *bolt.Tx) error {
		ev := tx.Bucket([]byte("events"))
		prev := ledger.LeafHash(ev.Get(be(seq - 1)))
		for s := seq; s <= head; s++ {
			e, err := ledger.DecodeEvent(ev.Get(be(s)))
			if err != nil {
				return err
			}
			if s == seq {
				// Same length, so the envelope's layout is unchanged.
				i := bytes.Index(e.Payload, []byte("OK"))
				if i < 0 {
					t.Fatalf("event %d has no OK to rewrite", seq)
				}
				e.Payload = bytes.Clone(e.Payload)
				copy(e.Payload[i:], "NO")
			}
			e.Prev = prev
			raw, err := e.Encode()
			if err != nil {
				return err
			}
			if err := ev.Put(be(s), raw); err != nil {
				return err
			}
			prev = ledger.LeafHash(raw)
		}
		// Every node from scratch, as an append would have stored them.
		if err := tx.DeleteBucket([]byte("merkle")); err != nil {
			return err
		}
		if _, err := tx.CreateBucket([]byte("merkle")); err != nil {
			return err
		}
		nodes := map[[2]uint64]ledger.Hash{}
		get := func(level uint, i uint64) (ledger.Hash, error) { return nodes[[2]uint64{uint64(level), i}], nil }
		for s := uint64(1); s <= head; s++ {
			ns, err := ledger.AppendNodes(s-1, ledger.LeafHash(ev.Get(be(s))), get)
			if err != nil {
				return err
			}
			for _, n := range ns {
				nodes[[2]uint64{uint64(n.Level), n.Index}] = n.Hash
				if !format3(tx) {
					// A sub-bucket per level (format 2 reads none below 4).
					if _, err := tx.Bucket([]byte("merkle")).CreateBucketIfNotExists([]byte{byte(n.Level)}); err != nil {
						return err
					}
				}
				b, k := nodeIn(tx, n.Level, n.Index)
				if b == nil {
					continue // format 3 stores no level below 4
				}
				if err := b.Put(k, n.Hash[:]); err != nil {
					return err
				}
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("head"), append(be(head), prev[:]...))
	})
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// loopBranch makes a child pointer of a branch page of a bucket's tree
// point back at the tree's root, as one changed byte of the file can. The
// page is found as editBranch finds it, and its element elem (-1: its last)
// is changed. A lookup of a key in that element's range then goes round the
// loop until its stack overflows, and a walk gives the same keys again for
// ever.
func loopBranch(t testing.TB, path string, bucket []string, depth, elem int) {
	editBranch(t, path, bucket, depth, func(page []byte, count int, root uint64) {
		if elem < 0 {
			elem = count - 1
		}
		binary.LittleEndian.PutUint64(page[16+16*elem+8:], root)
	})
}

// bumpBranchKey adds one to the last byte of the key of element elem of a
// branch page found as editBranch finds it: a lookup of the key the child
// starts with then goes to the child before it, and misses.
func bumpBranchKey(t testing.TB, path string, bucket []string, depth, elem int) {
	editBranch(t, path, bucket, depth, func(page []byte, count int, root uint64) {
		e := 16 + 16*elem
		pos, ksize := int(binary.LittleEndian.Uint32(page[e:])), int(binary.LittleEndian.Uint32(page[e+4:]))
		page[e+pos+ksize-1]++
	})
}

// editBranch calls edit with a branch page of a bucket's tree, its element
// count and the tree's root page, and writes the page back. The bucket is a
// top-level bucket or a projection space ("spaces", name); the page is
// found by going down the first children depth times from the root.
func editBranch(t testing.TB, path string, bucket []string, depth int, edit func(page []byte, count int, root uint64)) {
	t.Helper()
	roots, pageSize := treeRoots(t, path)
	root := roots[strings.Join(bucket, "/")]
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, pageSize)
	// Page header: id (8 bytes), flags (2; 0x01 branch), count (2),
	// overflow (4); then 16-byte elements: pos, key size, child page id.
	id := root
	for level := 0; ; level++ {
		if _, err := f.ReadAt(page, int64(id)*int64(pageSize)); err != nil {
			t.Fatal(err)
		}
		flags, count := binary.LittleEndian.Uint16(page[8:]), int(binary.LittleEndian.Uint16(page[10:]))
		if flags != 0x01 || count < 2 {
			t.Fatalf("%v: page %d at depth %d is not a branch of 2 elements or more (flags %#x, count %d)", bucket, id, level, flags, count)
		}
		if level == depth {
			edit(page, count, root)
			break
		}
		id = binary.LittleEndian.Uint64(page[16+8:])
	}
	if _, err := f.WriteAt(page, int64(id)*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
}

// setSpaceRoot points the bucket header of projection space name, in its
// leaf page of the spaces bucket's tree, at page to(...), as changing the header's bytes
// in place would. to gets the file, its page size and the root pages of
// the top-level buckets and of the spaces ("spaces/tasks").
func setSpaceRoot(t testing.TB, path, name string, to func(f *os.File, pageSize int, roots map[string]uint64) uint64) {
	t.Helper()
	roots, pageSize := treeRoots(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Down the spaces bucket's tree to the leaf that holds name: in a
	// branch page (16-byte elements: pos, key size, child page id), the
	// child of the last key not after it.
	leaf := roots["spaces"]
	page := make([]byte, pageSize)
	for {
		if _, err := f.ReadAt(page, int64(leaf)*int64(pageSize)); err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint16(page[8:]) != 0x01 {
			break
		}
		child := binary.LittleEndian.Uint64(page[16+8:])
		for i := range int(binary.LittleEndian.Uint16(page[10:])) {
			e := 16 + 16*i
			pos, ksize := int(binary.LittleEndian.Uint32(page[e:])), int(binary.LittleEndian.Uint32(page[e+4:]))
			if string(page[e+pos:e+pos+ksize]) > name {
				break
			}
			child = binary.LittleEndian.Uint64(page[e+8:])
		}
		leaf = child
	}
	// A leaf page's 16-byte elements: flags (4; 1 a bucket), pos, key
	// size, value size; a bucket's value starts with its root page id.
	for i := range int(binary.LittleEndian.Uint16(page[10:])) {
		e := 16 + 16*i
		pos, ksize := int(binary.LittleEndian.Uint32(page[e+4:])), int(binary.LittleEndian.Uint32(page[e+8:]))
		if string(page[e+pos:e+pos+ksize]) == name {
			binary.LittleEndian.PutUint64(page[e+pos+ksize:], to(f, pageSize, roots))
			if _, err := f.WriteAt(page, int64(leaf)*int64(pageSize)); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no space %q in page %d of the spaces bucket's tree", name, leaf)
}

// treeRoots returns the root pages of the file's top-level buckets and of
// the projection spaces ("spaces/tasks"), and its page size.
func treeRoots(t testing.TB, path string) (map[string]uint64, int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	roots := map[string]uint64{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			roots[string(name)] = uint64(b.Root())
			if string(name) != "spaces" {
				return nil
			}
			return b.ForEachBucket(func(space []byte) error {
				roots["spaces/"+string(space)] = uint64(b.Bucket(space).Root())
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return roots, db.Info().PageSize
}

// firstLeaf is the leftmost leaf page of the tree rooted at page root.
func firstLeaf(t testing.TB, f *os.File, pageSize int, root uint64) uint64 {
	t.Helper()
	page := make([]byte, 16+16)
	for id := root; ; id = binary.LittleEndian.Uint64(page[16+8:]) {
		if _, err := f.ReadAt(page, int64(id)*int64(pageSize)); err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint16(page[8:]) == 0x02 {
			return id
		}
	}
}

// editFreelist rewrites the page ids that the freelist of the file's newest
// meta page lists, as editing its bytes in place would: edit gets them, the
// freelist's page id, the file and its page size, and returns the new
// list, which must fit the freelist's page. (Meta page: page header (16 bytes), then magic,
// version, page size, flags (4 each), root bucket (16), freelist page id
// (8), high-water page (8), txid (8). Freelist page: a header whose count
// is the number of ids, then the ids, 8 bytes each.)
func editFreelist(t testing.TB, path string, edit func(ids []uint64, freelist uint64, f *os.File, pageSize int) []uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	meta := make([]byte, 80)
	if _, err := f.ReadAt(meta, 0); err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.LittleEndian.Uint32(meta[24:]))
	var free, txid uint64
	for slot := range 2 {
		if _, err := f.ReadAt(meta, int64(slot*pageSize)); err != nil {
			t.Fatal(err)
		}
		if tx := binary.LittleEndian.Uint64(meta[64:]); tx >= txid {
			free, txid = binary.LittleEndian.Uint64(meta[48:]), tx
		}
	}
	page := make([]byte, pageSize)
	if _, err := f.ReadAt(page, int64(free)*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	if flags, overflow := binary.LittleEndian.Uint16(page[8:]), binary.LittleEndian.Uint32(page[12:]); flags != 0x10 || overflow != 0 {
		t.Fatalf("page %d is not a one-page freelist (flags %#x, overflow %d)", free, flags, overflow)
	}
	n := int(binary.LittleEndian.Uint16(page[10:]))
	var ids []uint64
	for i := range n {
		ids = append(ids, binary.LittleEndian.Uint64(page[16+8*i:]))
	}
	ids = edit(ids, free, f, pageSize)
	if len(ids) >= 0xFFFF || 16+8*len(ids) > pageSize {
		t.Fatalf("%d ids do not fit one freelist page", len(ids))
	}
	binary.LittleEndian.PutUint16(page[10:], uint16(len(ids)))
	for i, id := range ids {
		binary.LittleEndian.PutUint64(page[16+8*i:], id)
	}
	if _, err := f.WriteAt(page, int64(free)*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildRefusesBrokenChain: rebuild folded a log whose bytes were
// changed (one byte of an event's payload, which verify calls content
// changed) and exited 0, the changed title now in the projections (attack
// review). Every event a rebuild folds must link to the one before it, and
// the last to the recorded head: else it is refused as damage (exit 1),
// and the projections are left as they were.
func TestRebuildRefusesBrokenChain(t *testing.T) {
	healthy := healthyLedger(t, 3)
	head := headOf(t, healthy)
	for _, seq := range []uint64{2, 9, head} {
		path := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, healthy, path)
		before := run(t, "tasks", "--db", path)
		flipEventByte(t, path, seq)
		r := run(t, "rebuild", "--db", path)
		if r.code != 1 || !strings.Contains(r.stderr, "hash chain is broken") {
			t.Errorf("event %d changed: rebuild exit %d, want 1 saying the chain is broken: %s", seq, r.code, r.stderr)
		}
		if after := run(t, "tasks", "--db", path); after.stdout != before.stdout || after.code != 0 {
			t.Errorf("event %d changed: a refused rebuild changed the projections:\n%s\nthen\n%s%s", seq, before.stdout, after.stdout, after.stderr)
		}
	}
}

// TestCatchUpRefusesBrokenChain: a running process folds into its
// projections the events other processes appended (projections.CatchUp);
// like a rebuild, it must fold only a log whose hashes hold. Here the
// projections stand three events back and the last event they applied was
// changed since: the next call is refused as damage, and nothing is folded.
func TestCatchUpRefusesBrokenChain(t *testing.T) {
	path := healthyLedger(t, 3)
	head := headOf(t, path)
	editBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("spaces")).Bucket([]byte("meta")).Put([]byte("applied"), be(head-3))
	})
	flipEventByte(t, path, head-3)
	// serve catches up as it starts: it must refuse to.
	if r := run(t, "serve", "--db", path); r.code == 0 || !strings.Contains(r.stderr, "hash chain is broken") {
		t.Errorf("serve on a broken chain past its projections: exit %d, stderr %s", r.code, r.stderr)
	}
	r := run(t, "verify", "--db", path)
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("seq %d", head-3)) {
		t.Errorf("verify after the refused call: exit %d %s", r.code, r.stderr)
	}
	var applied uint64
	editBolt(t, path, func(tx *bolt.Tx) error {
		applied = binary.BigEndian.Uint64(tx.Bucket([]byte("spaces")).Bucket([]byte("meta")).Get([]byte("applied")))
		return nil
	})
	if applied != head-3 {
		t.Errorf("the projections applied up to %d, want %d: the refused catch-up folded", applied, head-3)
	}
}

// TestRebuildRefusesSharedPages: a branch of a projection's tree pointing
// at a leaf of the events tree (a file damaged so) is found by verify;
// every writer — rebuild, which drops the projections and so frees their
// pages, and serve, whose commits free the pages they change — refuses
// the file at open — exit 1, damaged, nothing written — rather than free a
// page the events tree still uses, after which no command could read the
// file (the freelist would list a page in use). snapshot still copies it.
func TestRebuildRefusesSharedPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, sharedHealthyLedger(t, 2000), path)
	roots, pageSize := treeRoots(t, path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	leaf := firstLeaf(t, f, pageSize, roots["events"])
	f.Close()
	editBranch(t, path, []string{"spaces", "tasks"}, 0, func(page []byte, count int, root uint64) {
		binary.LittleEndian.PutUint64(page[16+16*(count-1)+8:], leaf)
	})
	r := run(t, "verify", "--db", path)
	if r.code != 1 || !strings.Contains(r.stderr, "which another pointer reaches too") {
		t.Fatalf("verify of a projection branch pointing into the events tree: %s", r)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r = run(t, "rebuild", "--db", path)
	if r.code != 1 || !strings.Contains(r.stderr, "ledger file is damaged") {
		t.Errorf("rebuild of it: %s, want exit 1, damaged", r)
	}
	srv := startE2E(t, e2eConfig{DB: path, Agent: "writer"})
	if code := srv.waitExit(e2eTimeout); code == 0 || !strings.Contains(srv.stderr.String(), "both point at page") {
		t.Errorf("serve on it: exit %d: %s", code, srv.stderr.String())
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("rebuild and serve refused the file but changed it")
	}
	out := filepath.Join(t.TempDir(), "copy.db")
	wantExit(t, run(t, "snapshot", "--db", path, "--out", out), 0, "snapshot of it")
	wantExit(t, run(t, "verify", "--db", out), 0, "verify of the snapshot")
}

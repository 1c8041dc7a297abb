package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	bolt "go.etcd.io/bbolt"
)

// Tampering, the way someone with the file would do it: bytes edited in
// place, or keys rewritten with bbolt directly (bucket layout: events,
// merkle/<level> (levels 4 and up in the format-2 files these tests make),
// meta "head", spaces/<name>). Test code only: the product
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

// flipEventByte changes one byte of event seq's payload where it lies in
// the file, with no tool but a file editor.
func flipEventByte(t testing.TB, path string, seq uint64) {
	t.Helper()
	raw := rawEvent(t, path, seq)
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(file, raw)
	if at < 0 || bytes.Contains(file[at+1:], raw) {
		t.Fatalf("event %d is not stored exactly once in the file", seq)
	}
	off := at + len(raw) - 40 // inside the payload, before the prev hash
	file[off] ^= 0x01
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
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
		merkle := tx.Bucket([]byte("merkle"))
		for level := 0; head>>level > 0; level++ {
			b := merkle.Bucket([]byte{byte(level)})
			if b == nil {
				continue // format 2 stores no levels below 4
			}
			for i := keep >> level; i < head>>level; i++ {
				if err := b.Delete(be(i)); err != nil {
					return err
				}
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("head"), append(be(keep), keepHash...))
	})
}

// corruptNode flips a bit of the stored Merkle node (level, index).
func corruptNode(t testing.TB, path string, level uint, index uint64) {
	t.Helper()
	editBolt(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("merkle")).Bucket([]byte{byte(level)})
		h := bytes.Clone(b.Get(be(index)))
		if len(h) != 32 {
			t.Fatalf("no node %d/%d", level, index)
		}
		h[7] ^= 0x10
		return b.Put(be(index), h)
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
		merkle, err := tx.CreateBucket([]byte("merkle"))
		if err != nil {
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
				b, err := merkle.CreateBucketIfNotExists([]byte{byte(n.Level)})
				if err != nil {
					return err
				}
				if err := b.Put(be(n.Index), n.Hash[:]); err != nil {
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

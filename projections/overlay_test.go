package projections

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestOverlayScan: an overlay's Scan is the space's as the overlay's puts
// and deletes change it, in key order either way, for any prefix, stopping
// where fn stops — and nothing reaches the space.
func TestOverlayScan(t *testing.T) {
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "l.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stored := map[string]string{"a1": "s", "a3": "s", "a5": "s", "a7": "s", "b1": "s"}
	err = l.Update(func(tx *boltstore.Tx) error {
		sp, err := tx.Space("overlay_test")
		if err != nil {
			return err
		}
		for k, v := range stored {
			if err := sp.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = l.View(func(tx *boltstore.Tx) error {
		sp, err := tx.Space("overlay_test")
		if err != nil {
			return err
		}
		w := newWriteBuffer()
		w.sp, w.keep = sp, true
		w.Put([]byte("a0"), []byte("o")) // before every stored key
		w.Put([]byte("a3"), []byte("o")) // over a stored one
		w.Delete([]byte("a5"))           // a stored one deleted
		w.Put([]byte("a6"), []byte("o")) // between stored ones
		w.Put([]byte("a9"), []byte("o")) // after every stored key of the prefix
		w.Delete([]byte("a8"))           // deleting what is not there
		w.Put([]byte("c1"), []byte("o")) // another prefix
		want := []string{"a0=o", "a1=s", "a3=o", "a6=o", "a7=s", "a9=o"}
		for _, reverse := range []bool{false, true} {
			exp := slices.Clone(want)
			if reverse {
				slices.Reverse(exp)
			}
			for stop := 1; stop <= len(exp)+1; stop++ {
				var got []string
				err := w.Scan([]byte("a"), reverse, func(k, v []byte) (bool, error) {
					got = append(got, string(k)+"="+string(v))
					return len(got) < stop, nil
				})
				if err != nil {
					return err
				}
				if n := min(stop, len(exp)); !slices.Equal(got, exp[:n]) {
					t.Errorf("reverse %v, stop after %d: %v, want %v", reverse, stop, got, exp[:n])
				}
			}
		}
		if err := w.flush(); err == nil {
			t.Error("an overlay was written to its space")
		}
		if v := sp.Get([]byte("a5")); string(v) != "s" {
			t.Errorf("the space changed under the overlay: a5 = %q", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteBufferSlabs: values put in a write buffer are copies, kept
// whole across the slabs they are copied into (the first small, each next
// larger, values over a quarter of the largest on their own), whatever the
// caller does with its slice afterwards, and flush writes each to the space.
func TestWriteBufferSlabs(t *testing.T) {
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "l.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sizes := []int{0, 1, firstSlab - 1, 2, firstSlab, 3 * firstSlab, slabSize / 4, slabSize/4 + 1, 5, slabSize, 7}
	for range 40 {
		sizes = append(sizes, 1000) // many slabs' worth, up to the largest size
	}
	value := func(i, n int) []byte {
		v := make([]byte, n)
		for j := range v {
			v[j] = byte(i*31 + j)
		}
		return v
	}
	key := func(i int) []byte { return []byte{'k', byte(i >> 8), byte(i)} }
	err = l.Update(func(tx *boltstore.Tx) error {
		sp, err := tx.Space("slab_test")
		if err != nil {
			return err
		}
		w := newWriteBuffer()
		w.sp = sp
		buf := make([]byte, slabSize)
		for i, n := range sizes {
			v := append(buf[:0], value(i, n)...)
			if err := w.Put(key(i), v); err != nil {
				return err
			}
			clear(v) // the caller's slice, reused
		}
		for i, n := range sizes {
			if got := w.Get(key(i)); !slices.Equal(got, value(i, n)) || got == nil {
				t.Errorf("value %d (%d bytes) reads back as %d bytes, not the value put", i, n, len(got))
			}
		}
		if cap(w.slab) > slabSize {
			t.Errorf("a slab of %d bytes, the largest is %d", cap(w.slab), slabSize)
		}
		return w.flush()
	})
	if err != nil {
		t.Fatal(err)
	}
	err = l.View(func(tx *boltstore.Tx) error {
		sp, err := tx.Space("slab_test")
		if err != nil {
			return err
		}
		for i, n := range sizes {
			if got := sp.Get(key(i)); !slices.Equal(got, value(i, n)) || got == nil {
				t.Errorf("value %d (%d bytes) stored as %d bytes, not the value put", i, n, len(got))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

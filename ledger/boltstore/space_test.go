package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestSpaceGetAgreesWithBolt: Get, which seeks with a cursor it keeps,
// answers as bbolt's Bucket.Get does for every key — present, absent,
// past the last, put empty, deleted — between puts and deletes in the
// same transaction and after they are committed.
func TestSpaceGetAgreesWithBolt(t *testing.T) {
	l := openTest(t)
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return fmt.Appendf(nil, "k%05d", rng.IntN(3000)) }
	check := func(sp *Space, k []byte) {
		t.Helper()
		got, want := sp.Get(k), sp.b.Get(k)
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("Get(%s) = %q (nil %v), bbolt's Get = %q (nil %v)", k, got, got == nil, want, want == nil)
		}
	}
	for round := range 3 {
		err := l.Update(func(tx *Tx) error {
			sp, err := tx.Space("test")
			if err != nil {
				return err
			}
			for i := range 5000 {
				k := key()
				switch rng.IntN(4) {
				case 0:
					err = sp.Put(k, bytes.Repeat([]byte{byte(i)}, rng.IntN(300)))
				case 1:
					err = sp.Put(k, nil)
				case 2:
					err = sp.Delete(k)
				}
				if err != nil {
					return err
				}
				check(sp, k)
				check(sp, key())
			}
			check(sp, []byte("zzz"))
			check(sp, []byte("a"))
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	l.View(func(tx *Tx) error {
		sp, _ := tx.Space("test")
		for range 3000 {
			check(sp, key())
		}
		return nil
	})
}

// TestSpaceLookupsAfterSwap: a transaction keeps the spaces it looked up
// (Tx.Space), so dropping or copying spaces in it must make it look again:
// the spaces it asks for after DropSpaces are new ones, after CopySpaces
// the copied ones.
func TestSpaceLookupsAfterSwap(t *testing.T) {
	l := openTest(t)
	scratch, err := OpenScratch(t.TempDir(), "s-", "")
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	put := func(s *Store, v string) {
		t.Helper()
		if err := s.Update(func(tx *Tx) error {
			sp, err := tx.Space("s")
			if err != nil {
				return err
			}
			return sp.Put([]byte("k"), []byte(v))
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(l, "live")
	put(scratch, "copied")
	get := func(tx *Tx) string {
		sp, err := tx.Space("s")
		if err != nil {
			t.Fatal(err)
		}
		return string(sp.Get([]byte("k")))
	}
	if err := scratch.View(func(stx *Tx) error {
		return l.Update(func(tx *Tx) error {
			if got := get(tx); got != "live" {
				t.Errorf("before the drop: %q", got)
			}
			if err := tx.DropSpaces(); err != nil {
				return err
			}
			if got := get(tx); got != "" {
				t.Errorf("after the drop: %q", got)
			}
			if err := tx.DropSpaces(); err != nil { // the space just looked up, created
				return err
			}
			if _, err := tx.CopySpaces(stx, "s", 1<<20); err != nil {
				return err
			}
			if got := get(tx); got != "copied" {
				t.Errorf("after the copy: %q", got)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSpaceWalkRefusesBucket: a space holds no bucket, so a walk of one
// (Range, Scan either way) that meets a key made a bucket — a damaged
// page's flag — says ErrDamaged rather than give it as a key with an empty
// value, which verify's comparison of the projections took for the empty
// value the refold holds there and passed the file. Keys put empty (nil)
// in the same transaction, which bbolt also gives nil, are keys.
func TestSpaceWalkRefusesBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Update(func(tx *Tx) error {
		sp, err := tx.Space("test")
		if err != nil {
			return err
		}
		for _, k := range []string{"a", "b", "c"} {
			if err := sp.Put([]byte(k), nil); err != nil {
				return err
			}
		}
		return walkAll(sp)
	})
	if err != nil {
		t.Fatalf("walks of keys put empty in the transaction: %v", err)
	}
	l.Close()
	editFile(t, path, func(btx *bolt.Tx) error {
		sp := btx.Bucket(bucketSpaces).Bucket([]byte("test"))
		if err := sp.Delete([]byte("b")); err != nil {
			return err
		}
		_, err := sp.CreateBucket([]byte("b"))
		return err
	})
	l = openPath(t, path, Options{})
	l.View(func(tx *Tx) error {
		sp, err := tx.Space("test")
		if err != nil {
			t.Fatal(err)
		}
		for i, walk := range []func() error{
			func() error { return sp.Range(nil, nil, func(k, v []byte) (bool, error) { return true, nil }) },
			func() error { return sp.Scan(nil, false, func(k, v []byte) (bool, error) { return true, nil }) },
			func() error { return sp.Scan(nil, true, func(k, v []byte) (bool, error) { return true, nil }) },
		} {
			if err := walk(); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), `space "test" holds a bucket (key 62)`) {
				t.Errorf("walk %d over a space holding a bucket: %v; want ErrDamaged naming it", i, err)
			}
		}
		return nil
	})
}

// walkAll walks sp every way, keys only.
func walkAll(sp *Space) error {
	each := func(k, v []byte) (bool, error) { return true, nil }
	return errors.Join(sp.Range(nil, nil, each), sp.Scan(nil, false, each), sp.Scan(nil, true, each))
}

package boltstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
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

// TestSpaceLookupsAfterPromotion: a transaction keeps the live spaces it
// looked up (Tx.Space), so a promotion in it must make it look again: the
// spaces it asks for after PromoteStaging are the promoted ones, and a
// staging view never answers with a live space or the other way round.
func TestSpaceLookupsAfterPromotion(t *testing.T) {
	l := openTest(t)
	put := func(sp *Space, err error, v string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := sp.Put([]byte("k"), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Update(func(tx *Tx) error {
		sp, err := tx.Space("s")
		put(sp, err, "live")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(func(tx *Tx) error {
		sp, err := tx.Staging().Space("s")
		put(sp, err, "staged")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(func(tx *Tx) error {
		live, _ := tx.Space("s")
		staged, _ := tx.Staging().Space("s")
		if got := string(live.Get([]byte("k"))); got != "live" {
			t.Errorf("live space before the promotion holds %q", got)
		}
		if got := string(staged.Get([]byte("k"))); got != "staged" {
			t.Errorf("staging space holds %q", got)
		}
		if again, _ := tx.Space("s"); string(again.Get([]byte("k"))) != "live" {
			t.Error("the live space looked up again is not the live one")
		}
		if err := tx.PromoteStaging(); err != nil {
			return err
		}
		after, _ := tx.Space("s")
		if got := string(after.Get([]byte("k"))); got != "staged" {
			t.Errorf("after the promotion, the live space holds %q, want the promoted value", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

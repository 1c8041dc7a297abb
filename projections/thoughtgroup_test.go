package projections

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestThoughtGroups: the thoughts space, sixteen thoughts to an entry,
// answers every number as a map from number to seq would — numbers
// recorded in any order, with gaps, recorded twice (the later seq
// counts), across commits — and Thoughts lists the recorded ones in
// number order. A value that is not a group's seqs is ErrDamaged.
func TestThoughtGroups(t *testing.T) {
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "l.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[uint64]uint64{}
	seq := uint64(0)
	for round := range 4 {
		err := l.Update(func(tx *boltstore.Tx) error {
			f := newFolder(tx, nil, nil, false)
			for range 150 {
				n := uint64(1 + rng.IntN(300))
				if rng.IntN(3) == 0 { // mostly in order, as commands number them
					n = uint64(len(want) + 1)
				}
				seq += uint64(1 + rng.IntN(1<<uint(rng.IntN(30))))
				if _, err := putThought(f, domain.FormatID(domain.ThoughtPrefix, n), seq); err != nil {
					return err
				}
				want[n] = seq
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	err = l.View(func(tx *boltstore.Tx) error {
		for n := range uint64(340) {
			got, ok, err := thoughtSeq(tx, n)
			if err != nil {
				return err
			}
			if w, recorded := want[n]; ok != recorded || got != w {
				t.Errorf("thought %d: seq %d (found %v), want %d (recorded %v)", n, got, ok, w, recorded)
			}
		}
		var listed []uint64
		err := Thoughts(tx, func(th Thought) bool {
			n, _ := domain.ParseID(domain.ThoughtPrefix, th.ThoughtID)
			if th.Seq != want[n] {
				t.Errorf("Thoughts lists %s at seq %d, want %d", th.ThoughtID, th.Seq, want[n])
			}
			listed = append(listed, n)
			return true
		})
		if err != nil {
			return err
		}
		if len(listed) != len(want) {
			t.Errorf("Thoughts listed %d thoughts, %d recorded", len(listed), len(want))
		}
		for i := 1; i < len(listed); i++ {
			if listed[i] <= listed[i-1] {
				t.Fatalf("Thoughts lists %d after %d", listed[i], listed[i-1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]byte{{0x80}, make([]byte, thoughtGroup+1)} {
		if _, _, err := thoughtSlots([]byte{1, 0}, v); !errors.Is(err, boltstore.ErrDamaged) {
			t.Errorf("value %x: %v, want ErrDamaged", v, err)
		}
	}
}

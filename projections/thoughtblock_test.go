package projections

import (
	"errors"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestThoughtBlock: a block of the thoughts space reads back the seqs it
// was written with, whatever they are (gaps, a number recorded again at a
// later seq, seqs falling below the block's base, far apart), in the least
// width; its bytes depend only on its seqs; a value that is not a block is
// ErrDamaged.
func TestThoughtBlock(t *testing.T) {
	var b thoughtBlock
	steps := []struct {
		i     int
		seq   uint64
		width byte
	}{
		{1, 1000, 1}, {2, 1002, 1}, {5, 1300, 2}, // a gap at 3-4, an offset past a byte
		{2, 1400, 2},          // number 2 recorded again
		{63, 7, 2},            // below the base so far
		{10, 1 << 40, 5},      // far apart
		{0, 1<<64 - 1 - 5, 8}, // near the top
	}
	for _, st := range steps {
		b[st.i] = st.seq
		v := encodeThoughts(&b)
		if v[0] != st.width {
			t.Errorf("after %d=%d: width %d, want %d", st.i, st.seq, v[0], st.width)
		}
		got, err := decodeThoughts([]byte{1, 0}, v)
		if err != nil || got != b {
			t.Fatalf("after %d=%d: read back %v (%v), want %v", st.i, st.seq, got, err, b)
		}
		again := got
		if string(encodeThoughts(&again)) != string(v) {
			t.Errorf("after %d=%d: written again differently", st.i, st.seq)
		}
	}
	for _, v := range [][]byte{nil, {0, 1}, {9, 1}, {2, 1, 5}, {1, 0x80}, append([]byte{1, 1}, make([]byte, 65)...)} {
		if _, err := decodeThoughts([]byte{1, 0}, v); !errors.Is(err, boltstore.ErrDamaged) {
			t.Errorf("value % x: %v, want ErrDamaged", v, err)
		}
	}
}

// TestAppendThought: appending the record of the next thought number, as
// putThought does when it can, writes the bytes encoding the whole block
// writes; it declines a record that needs a wider width or a lower base, or
// a number out of turn.
func TestAppendThought(t *testing.T) {
	var b thoughtBlock
	var v []byte
	seq := uint64(100)
	declined := 0
	for i := 1; i < len(b); i++ {
		seq += uint64(1 + i*i*i%700) // gaps growing past a byte's reach
		next, ok := appendRecord(spThoughts, []byte{1, 0}, v, uint64(i), seq)
		b[i] = seq
		want := encodeThoughts(&b)
		if ok && string(next) != string(want) {
			t.Fatalf("thought %d at seq %d: appended % x, encoded % x", i, seq, next, want)
		}
		if !ok {
			declined++
		}
		v = want
	}
	if declined != 2 { // the first (no block yet) and the one that widens the records
		t.Errorf("declined %d appends, want 2", declined)
	}
	if _, ok := appendRecord(spThoughts, []byte{1, 0}, v, 5, seq+1); ok {
		t.Error("a number out of turn appended")
	}
	if _, ok := appendRecord(spThoughts, []byte{1, 0}, encodeThoughts(&thoughtBlock{1: 50}), 2, 49); ok {
		t.Error("a seq below the base appended")
	}
}

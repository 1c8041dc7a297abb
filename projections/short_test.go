package projections

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

// TestShortKeys: short numbers read back, sort as the numbers do, and a
// task's chain keys all start with its prefix and no other task's do, so
// the chain scans (LastThought, TaskThoughts) see exactly their task's
// thoughts, in position order.
func TestShortKeys(t *testing.T) {
	var vals []uint64
	for _, v := range []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, 1 << 24, 1<<32 - 1, 1 << 32, 1 << 56, math.MaxUint64} {
		vals = append(vals, v, v+1, v-1)
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	var prev []byte
	for i, v := range vals {
		k := short(nil, v)
		got, rest, ok := readShort(append(k, 9))
		if !ok || got != v || !bytes.Equal(rest, []byte{9}) {
			t.Errorf("readShort(short(%d)) = %d, %x, %v", v, got, rest, ok)
		}
		if i > 0 && bytes.Compare(prev, k) >= 0 {
			t.Errorf("short(%d) = %x sorts before short(%d) = %x", v, k, vals[i-1], prev)
		}
		prev = k
	}
	for _, bad := range [][]byte{nil, {0}, {9, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {2, 1}} {
		if _, _, ok := readShort(bad); ok {
			t.Errorf("readShort(%x) ok", bad)
		}
	}
	tasks := []uint64{1, 2, 255, 256, 257, 65536}
	positions := []uint64{1, 2, 255, 256, 100000}
	var keys [][]byte
	for _, task := range tasks {
		for _, pos := range positions {
			k := chainKey(task, pos)
			keys = append(keys, k)
			if first, _, err := chainBlock(k, encodeThoughts(&thoughtBlock{1})); err != nil || first != pos&^(1<<thoughtBlockBits-1) {
				t.Errorf("chainBlock(chainKey(%d, %d)) first position %d (%v)", task, pos, first, err)
			}
			for _, other := range tasks {
				if bytes.HasPrefix(k, short(nil, other)) != (other == task) {
					t.Errorf("chainKey(%d, %d) = %x: prefix of task %d %v", task, pos, k, other, other == task)
				}
			}
		}
	}
	if got, want := keyName(spTaskThoughts, chainKey(1, 70)), "T-0001 positions 64…127"; got != want {
		t.Errorf("keyName of a chain block %q, want %q", got, want)
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Error("chain keys do not sort by task, then position")
	}
}

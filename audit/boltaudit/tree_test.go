package boltaudit

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// TestEventTree: the tree from the groups' roots (given as boltstore's
// check gives them, before each group's last leaf) or from the leaves
// alone has the root and frontier of ledger.Frontier over the same leaves
// at every size, and a frontier taken from it appends on as one does.
func TestEventTree(t *testing.T) {
	leaf := func(i uint64) ledger.Hash {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], i)
		return sha256.Sum256(b[:])
	}
	for _, level := range []uint{0, 2, 4} {
		for _, given := range []bool{true, false} {
			var tree eventTree
			var ref ledger.Frontier
			var group []ledger.Hash
			for i := uint64(0); i < 300; i++ {
				h := leaf(i)
				group = append(group, h)
				if given && level > 0 && len(group) == 1<<level {
					tree.group(level, i>>level, ledger.PerfectRoot(group))
					group = group[:0]
				} else if len(group) == 1<<level {
					group = group[:0]
				}
				tree.Append(h)
				ref.Append(h)
				if tree.Size() != ref.Size || tree.Root() != ref.Root() {
					t.Fatalf("level %d given %v, %d leaves: size %d root %x, want %d %x", level, given, i+1, tree.Size(), tree.Root(), ref.Size, ref.Root())
				}
				if i%37 == 0 {
					f := tree.Frontier()
					if f.Size != ref.Size || len(f.Nodes) != len(ref.Nodes) {
						t.Fatalf("level %d, %d leaves: frontier %d/%d nodes, want %d/%d", level, i+1, f.Size, len(f.Nodes), ref.Size, len(ref.Nodes))
					}
					g := ref
					g.Nodes = append([]ledger.Hash(nil), ref.Nodes...)
					for j := i + 1; j < i+40; j++ {
						f.Append(leaf(j))
						g.Append(leaf(j))
					}
					if f.Root() != g.Root() {
						t.Fatalf("level %d, %d leaves: the frontier appends to another root", level, i+1)
					}
				}
			}
			if tree.err != nil {
				t.Fatal(tree.err)
			}
		}
	}
}

// TestEventTreeOutOfStep: a group root given where the leaves do not end
// that group is an error, not a root.
func TestEventTreeOutOfStep(t *testing.T) {
	var tree eventTree
	for i := 0; i < 14; i++ {
		tree.Append(ledger.Hash{byte(i)})
	}
	tree.group(4, 0, ledger.Hash{})
	if tree.err == nil {
		t.Fatal("a group given after 14 leaves of 16 was taken")
	}
	tree = eventTree{}
	for i := 0; i < 15; i++ {
		tree.Append(ledger.Hash{byte(i)})
	}
	tree.group(4, 1, ledger.Hash{})
	if tree.err == nil {
		t.Fatal("group 1 given for the leaves of group 0 was taken")
	}
}

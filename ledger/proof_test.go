package ledger_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/ledger"
)

// tlogInclusion is tlog's verdict on an inclusion claim: the independent
// verifier ours must agree with. ok is false when tlog cannot judge: it
// takes sizes as int64.
func tlogInclusion(leaf ledger.Hash, index, size uint64, proof []ledger.Hash, root ledger.Hash) (err error, ok bool) {
	if index > math.MaxInt64 || size > math.MaxInt64 {
		return nil, false
	}
	return tlog.CheckRecord(toTlog(proof), int64(size), tlog.Hash(root), int64(index), tlog.Hash(leaf)), true
}

// tlogConsistency is tlog's verdict on a consistency claim, ok false when
// tlog cannot judge.
func tlogConsistency(oldSize, newSize uint64, oldRoot, newRoot ledger.Hash, proof []ledger.Hash) (err error, ok bool) {
	if oldSize > math.MaxInt64 || newSize > math.MaxInt64 {
		return nil, false
	}
	return tlog.CheckTree(toTlog(proof), int64(newSize), tlog.Hash(newRoot), int64(oldSize), tlog.Hash(oldRoot)), true
}

func TestProofVerifyInclusion(t *testing.T) {
	f := getFixture(t)
	for size := uint64(1); size <= maxSize; size++ {
		root := f.rfc.mth(0, int(size))
		for index := range size {
			leaf := f.leaves[index]
			proof, err := ledger.InclusionProof(index, size, f.store.source(size))
			if err != nil {
				t.Fatalf("InclusionProof(%d, %d): %v", index, size, err)
			}
			if err := ledger.VerifyInclusion(leaf, index, size, proof, root); err != nil {
				t.Fatalf("VerifyInclusion of our proof for leaf %d of %d: %v", index, size, err)
			}
			if err, _ := tlogInclusion(leaf, index, size, proof, root); err != nil {
				t.Fatalf("tlog rejects our proof for leaf %d of %d: %v", index, size, err)
			}
			tp, err := tlog.ProveRecord(int64(size), int64(index), f.tlogReader())
			if err != nil {
				t.Fatal(err)
			}
			if err := ledger.VerifyInclusion(leaf, index, size, fromTlog(tp), root); err != nil {
				t.Fatalf("VerifyInclusion of tlog's proof for leaf %d of %d: %v", index, size, err)
			}
		}
	}
}

func TestProofVerifyConsistency(t *testing.T) {
	f := getFixture(t)
	for size := uint64(1); size <= maxSize; size++ {
		root := f.rfc.mth(0, int(size))
		for old := uint64(1); old <= size; old++ {
			oldRoot := f.rfc.mth(0, int(old))
			proof, err := ledger.ConsistencyProof(old, size, f.store.source(size))
			if err != nil {
				t.Fatalf("ConsistencyProof(%d, %d): %v", old, size, err)
			}
			if err := ledger.VerifyConsistency(old, size, oldRoot, root, proof); err != nil {
				t.Fatalf("VerifyConsistency of our proof from %d to %d: %v", old, size, err)
			}
			if err, _ := tlogConsistency(old, size, oldRoot, root, proof); err != nil {
				t.Fatalf("tlog rejects our proof from %d to %d: %v", old, size, err)
			}
			tp, err := tlog.ProveTree(int64(size), int64(old), f.tlogReader())
			if err != nil {
				t.Fatal(err)
			}
			if err := ledger.VerifyConsistency(old, size, oldRoot, root, fromTlog(tp)); err != nil {
				t.Fatalf("VerifyConsistency of tlog's proof from %d to %d: %v", old, size, err)
			}
		}
	}
}

// flipped returns a copy of proof with one bit of element i flipped.
func flipped(proof []ledger.Hash, i, bit int) []ledger.Hash {
	p := slices.Clone(proof)
	p[i][bit/8] ^= 1 << (bit % 8)
	return p
}

// otherHash is a hash that is nobody's root or node.
var otherHash = ledger.LeafHash([]byte("nothing in any tree"))

type inclusionClaim struct {
	name        string
	leaf        ledger.Hash
	index, size uint64
	proof       []ledger.Hash
	root        ledger.Hash
}

// brokenInclusion returns claims made from a valid one by breaking one thing.
// Those in mustFail are false whatever the tree; those in maybe change only
// the size, which an inclusion proof binds only through the tree's shape
// (see proof.go), so their verdict is tlog's.
func brokenInclusion(c inclusionClaim) (mustFail, maybe []inclusionClaim) {
	add := func(name string, edit func(*inclusionClaim)) {
		b := c
		b.proof = slices.Clone(c.proof)
		edit(&b)
		b.name = name
		mustFail = append(mustFail, b)
	}
	for i := range c.proof {
		for _, bit := range []int{0, 3, 255} {
			add(fmt.Sprintf("proof[%d] bit %d flipped", i, bit), func(b *inclusionClaim) { b.proof = flipped(c.proof, i, bit) })
		}
	}
	if len(c.proof) > 0 {
		add("truncated", func(b *inclusionClaim) { b.proof = b.proof[:len(b.proof)-1] })
		add("first element dropped", func(b *inclusionClaim) { b.proof = b.proof[1:] })
	}
	if len(c.proof) > 1 {
		add("elements swapped", func(b *inclusionClaim) { b.proof[0], b.proof[1] = b.proof[1], b.proof[0] })
	}
	add("extra element", func(b *inclusionClaim) { b.proof = append(b.proof, otherHash) })
	add("root appended", func(b *inclusionClaim) { b.proof = append(b.proof, c.root) })
	add("root prepended", func(b *inclusionClaim) { b.proof = append([]ledger.Hash{c.root}, b.proof...) })
	add("wrong root", func(b *inclusionClaim) { b.root = otherHash })
	add("empty root", func(b *inclusionClaim) { b.root = ledger.EmptyRoot })
	add("root bit flipped", func(b *inclusionClaim) { b.root[31] ^= 0x80 })
	add("wrong leaf", func(b *inclusionClaim) { b.leaf = otherHash })
	add("leaf bit flipped", func(b *inclusionClaim) { b.leaf[0] ^= 1 })
	if c.size > 1 {
		add("leaf is root", func(b *inclusionClaim) { b.leaf = c.root })
	}
	if c.index > 0 {
		add("index - 1", func(b *inclusionClaim) { b.index-- })
	}
	add("index + 1", func(b *inclusionClaim) { b.index++ })
	add("index ^ 2", func(b *inclusionClaim) { b.index ^= 2 })
	add("index = size", func(b *inclusionClaim) { b.index = b.size })
	add("index max", func(b *inclusionClaim) { b.index = math.MaxUint64 })
	// Doubling a size always adds a level above the leaf's path.
	add("size * 2", func(b *inclusionClaim) { b.size *= 2 })
	add("size 0", func(b *inclusionClaim) { b.size = 0 })
	add("size max", func(b *inclusionClaim) { b.size = math.MaxUint64 })

	for _, s := range []struct {
		name string
		size uint64
	}{{"size - 1", c.size - 1}, {"size + 1", c.size + 1}, {"size / 2", c.size / 2}} {
		b := c
		b.name, b.size = s.name, s.size
		maybe = append(maybe, b)
	}
	return mustFail, maybe
}

func checkBrokenInclusion(t *testing.T, c inclusionClaim) {
	t.Helper()
	mustFail, maybe := brokenInclusion(c)
	for _, b := range mustFail {
		err := ledger.VerifyInclusion(b.leaf, b.index, b.size, b.proof, b.root)
		if err == nil {
			t.Errorf("leaf %d of %d, %s: verified", c.index, c.size, b.name)
		} else if !errors.Is(err, ledger.ErrProofInvalid) {
			t.Errorf("leaf %d of %d, %s: error %q does not wrap ErrProofInvalid", c.index, c.size, b.name, err)
		}
	}
	for _, b := range maybe {
		got := ledger.VerifyInclusion(b.leaf, b.index, b.size, b.proof, b.root)
		want, _ := tlogInclusion(b.leaf, b.index, b.size, b.proof, b.root)
		if (got == nil) != (want == nil) {
			t.Errorf("leaf %d of %d, %s: VerifyInclusion says %v, tlog says %v", c.index, c.size, b.name, got, want)
		}
	}
}

func TestProofBrokenInclusion(t *testing.T) {
	_, leaves := rfcReference(t)
	for _, tc := range rfcInclusion {
		c := inclusionClaim{
			leaf: leaves[tc.index], index: tc.index, size: tc.size,
			proof: mustHashes(t, tc.proof), root: mustHash(t, rfcRoots[tc.size]),
		}
		if err := ledger.VerifyInclusion(c.leaf, c.index, c.size, c.proof, c.root); err != nil {
			t.Fatalf("reference proof for leaf %d of %d: %v", c.index, c.size, err)
		}
		checkBrokenInclusion(t, c)
		// transparency-dev/merkle asserts these fail for its vectors.
		if err := ledger.VerifyInclusion(c.leaf, c.index, c.size/2, c.proof, c.root); err == nil {
			t.Errorf("leaf %d of %d: verified with size / 2", c.index, c.size)
		}
	}

	// Every leaf of every tree up to 64 leaves, each corruption.
	f := getFixture(t)
	for size := uint64(1); size <= 64; size++ {
		for index := range size {
			proof, err := ledger.InclusionProof(index, size, f.store.source(size))
			if err != nil {
				t.Fatal(err)
			}
			checkBrokenInclusion(t, inclusionClaim{
				leaf: f.leaves[index], index: index, size: size, proof: proof, root: f.rfc.mth(0, int(size)),
			})
		}
	}
}

func TestProofInclusionEdges(t *testing.T) {
	leaf := ledger.LeafHash([]byte("x"))
	for _, tc := range []struct {
		name        string
		leaf        ledger.Hash
		index, size uint64
		proof       []ledger.Hash
		root        ledger.Hash
		wantOK      bool
	}{
		{"one leaf is its own root", leaf, 0, 1, nil, leaf, true},
		{"one leaf, other root", leaf, 0, 1, nil, otherHash, false},
		{"one leaf, needless path", leaf, 0, 1, []ledger.Hash{leaf}, leaf, false},
		{"empty tree", leaf, 0, 0, nil, ledger.EmptyRoot, false},
		{"empty tree, leaf is the empty root", ledger.EmptyRoot, 0, 0, nil, ledger.EmptyRoot, false},
		{"index past size", leaf, 2, 1, nil, leaf, false},
		// Leaf 0 in sizes 5 and 6 has the same shape, so RFC 9162
		// verification cannot tell the sizes apart; the signed tree head
		// binds the size. This pins the RFC's behaviour.
		{"size bound only by shape", leaf, 0, 6, []ledger.Hash{otherHash, otherHash, otherHash},
			ledger.NodeHash(ledger.NodeHash(ledger.NodeHash(leaf, otherHash), otherHash), otherHash), true},
		{"largest size, empty path", leaf, 0, math.MaxUint64, nil, leaf, false},
		{"largest index and size", leaf, math.MaxUint64 - 1, math.MaxUint64, make([]ledger.Hash, 64), leaf, false},
		{"huge path", leaf, 0, 1, make([]ledger.Hash, 1<<16), leaf, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ledger.VerifyInclusion(tc.leaf, tc.index, tc.size, tc.proof, tc.root)
			if (err == nil) != tc.wantOK {
				t.Fatalf("VerifyInclusion = %v, want ok %v", err, tc.wantOK)
			}
			if err != nil && !errors.Is(err, ledger.ErrProofInvalid) {
				t.Errorf("error %q does not wrap ErrProofInvalid", err)
			}
		})
	}
}

type consistencyClaim struct {
	name             string
	oldSize, newSize uint64
	oldRoot, newRoot ledger.Hash
	proof            []ledger.Hash
}

// brokenConsistency is brokenInclusion for consistency proofs: mustFail
// breaks a hash, the proof's length or the sizes' order; maybe changes a
// size within 0 < old <= new, judged by tlog.
func brokenConsistency(c consistencyClaim) (mustFail, maybe []consistencyClaim) {
	add := func(name string, edit func(*consistencyClaim)) {
		b := c
		b.proof = slices.Clone(c.proof)
		edit(&b)
		b.name = name
		mustFail = append(mustFail, b)
	}
	for i := range c.proof {
		for _, bit := range []int{0, 4, 255} {
			add(fmt.Sprintf("proof[%d] bit %d flipped", i, bit), func(b *consistencyClaim) { b.proof = flipped(c.proof, i, bit) })
		}
	}
	if len(c.proof) > 0 {
		add("truncated", func(b *consistencyClaim) { b.proof = b.proof[:len(b.proof)-1] })
		add("first element dropped", func(b *consistencyClaim) { b.proof = b.proof[1:] })
		add("empty proof", func(b *consistencyClaim) { b.proof = nil })
		add("first element repeated", func(b *consistencyClaim) { b.proof = append([]ledger.Hash{c.proof[0]}, b.proof...) })
	}
	if len(c.proof) > 1 {
		add("elements swapped", func(b *consistencyClaim) { b.proof[0], b.proof[1] = b.proof[1], b.proof[0] })
	}
	add("extra element", func(b *consistencyClaim) { b.proof = append(b.proof, otherHash) })
	add("old root appended", func(b *consistencyClaim) { b.proof = append(b.proof, c.oldRoot) })
	add("new root appended", func(b *consistencyClaim) { b.proof = append(b.proof, c.newRoot) })
	add("old root prepended", func(b *consistencyClaim) { b.proof = append([]ledger.Hash{c.oldRoot}, b.proof...) })
	add("new root prepended", func(b *consistencyClaim) { b.proof = append([]ledger.Hash{c.newRoot}, b.proof...) })
	add("wrong old root", func(b *consistencyClaim) { b.oldRoot = otherHash })
	add("wrong new root", func(b *consistencyClaim) { b.newRoot = otherHash })
	add("old root bit flipped", func(b *consistencyClaim) { b.oldRoot[7] ^= 4 })
	add("new root bit flipped", func(b *consistencyClaim) { b.newRoot[7] ^= 4 })
	if c.oldRoot != c.newRoot {
		add("roots swapped", func(b *consistencyClaim) { b.oldRoot, b.newRoot = c.newRoot, c.oldRoot })
	}
	add("old = 0", func(b *consistencyClaim) { b.oldSize = 0 })
	add("old = new = 0", func(b *consistencyClaim) { b.oldSize, b.newSize = 0, 0 })
	add("old > new", func(b *consistencyClaim) { b.oldSize = c.newSize + 1 })
	add("new size * 2", func(b *consistencyClaim) { b.newSize *= 2 })
	if c.oldSize != c.newSize {
		add("sizes swapped", func(b *consistencyClaim) { b.oldSize, b.newSize = c.newSize, c.oldSize })
		add("sizes max", func(b *consistencyClaim) { b.oldSize, b.newSize = math.MaxUint64, math.MaxUint64 })
	}

	for _, s := range []struct {
		name             string
		oldSize, newSize uint64
	}{
		{"old - 1", c.oldSize - 1, c.newSize},
		{"old + 1", c.oldSize + 1, c.newSize},
		{"old ^ 2", c.oldSize ^ 2, c.newSize},
		{"new - 1", c.oldSize, c.newSize - 1},
		{"new + 1", c.oldSize, c.newSize + 1},
		{"new / 2", c.oldSize, c.newSize / 2},
	} {
		if s.oldSize == 0 || s.oldSize > s.newSize {
			continue
		}
		b := c
		b.name, b.oldSize, b.newSize = s.name, s.oldSize, s.newSize
		maybe = append(maybe, b)
	}
	return mustFail, maybe
}

func checkBrokenConsistency(t *testing.T, c consistencyClaim) {
	t.Helper()
	mustFail, maybe := brokenConsistency(c)
	for _, b := range mustFail {
		err := ledger.VerifyConsistency(b.oldSize, b.newSize, b.oldRoot, b.newRoot, b.proof)
		if err == nil {
			t.Errorf("sizes %d to %d, %s: verified", c.oldSize, c.newSize, b.name)
		} else if !errors.Is(err, ledger.ErrProofInvalid) {
			t.Errorf("sizes %d to %d, %s: error %q does not wrap ErrProofInvalid", c.oldSize, c.newSize, b.name, err)
		}
	}
	for _, b := range maybe {
		got := ledger.VerifyConsistency(b.oldSize, b.newSize, b.oldRoot, b.newRoot, b.proof)
		want, _ := tlogConsistency(b.oldSize, b.newSize, b.oldRoot, b.newRoot, b.proof)
		if (got == nil) != (want == nil) {
			t.Errorf("sizes %d to %d, %s: VerifyConsistency says %v, tlog says %v", c.oldSize, c.newSize, b.name, got, want)
		}
	}
}

func TestProofBrokenConsistency(t *testing.T) {
	for _, tc := range rfcConsistency {
		c := consistencyClaim{
			oldSize: tc.old, newSize: tc.new,
			oldRoot: mustHash(t, rfcRoots[tc.old]), newRoot: mustHash(t, rfcRoots[tc.new]),
			proof: mustHashes(t, tc.proof),
		}
		if err := ledger.VerifyConsistency(c.oldSize, c.newSize, c.oldRoot, c.newRoot, c.proof); err != nil {
			t.Fatalf("reference proof from %d to %d: %v", c.oldSize, c.newSize, err)
		}
		checkBrokenConsistency(t, c)
		if c.oldSize == c.newSize {
			continue
		}
		// transparency-dev/merkle asserts these fail for its vectors.
		for _, s := range [][2]uint64{
			{c.oldSize - 1, c.newSize}, {c.oldSize + 1, c.newSize}, {c.oldSize ^ 2, c.newSize}, {c.oldSize, c.newSize / 2},
		} {
			if err := ledger.VerifyConsistency(s[0], s[1], c.oldRoot, c.newRoot, c.proof); err == nil {
				t.Errorf("proof from %d to %d verified as from %d to %d", c.oldSize, c.newSize, s[0], s[1])
			}
		}
	}

	f := getFixture(t)
	for size := uint64(1); size <= 64; size++ {
		for old := uint64(1); old <= size; old++ {
			proof, err := ledger.ConsistencyProof(old, size, f.store.source(size))
			if err != nil {
				t.Fatal(err)
			}
			checkBrokenConsistency(t, consistencyClaim{
				oldSize: old, newSize: size,
				oldRoot: f.rfc.mth(0, int(old)), newRoot: f.rfc.mth(0, int(size)),
				proof: proof,
			})
		}
	}
}

func TestProofConsistencyEdges(t *testing.T) {
	a, b := ledger.LeafHash([]byte("a")), ledger.LeafHash([]byte("b"))
	for _, tc := range []struct {
		name             string
		oldSize, newSize uint64
		oldRoot, newRoot ledger.Hash
		proof            []ledger.Hash
		wantOK           bool
	}{
		{"same size, same root", 5, 5, a, a, nil, true},
		{"same size, other root", 5, 5, a, b, nil, false},
		{"same size, needless proof", 5, 5, a, a, []ledger.Hash{a}, false},
		{"both empty", 0, 0, ledger.EmptyRoot, ledger.EmptyRoot, nil, false},
		{"from empty", 0, 1, ledger.EmptyRoot, a, nil, false},
		{"shrinking", 2, 1, ledger.NodeHash(a, b), a, nil, false},
		{"one to two", 1, 2, a, ledger.NodeHash(a, b), []ledger.Hash{b}, true},
		{"one to two, empty proof", 1, 2, a, ledger.NodeHash(a, b), nil, false},
		{"largest sizes", math.MaxUint64 - 1, math.MaxUint64, a, b, make([]ledger.Hash, 64), false},
		{"largest sizes, empty proof", 1, math.MaxUint64, a, b, nil, false},
		{"huge proof", 1, 2, a, b, make([]ledger.Hash, 1<<16), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ledger.VerifyConsistency(tc.oldSize, tc.newSize, tc.oldRoot, tc.newRoot, tc.proof)
			if (err == nil) != tc.wantOK {
				t.Fatalf("VerifyConsistency = %v, want ok %v", err, tc.wantOK)
			}
			if err != nil && !errors.Is(err, ledger.ErrProofInvalid) {
				t.Errorf("error %q does not wrap ErrProofInvalid", err)
			}
		})
	}
}

// hashesFrom cuts b into hashes, the last one zero-padded.
func hashesFrom(b []byte) []ledger.Hash {
	var hs []ledger.Hash
	for len(b) > 0 {
		var h ledger.Hash
		n := copy(h[:], b)
		hs = append(hs, h)
		b = b[n:]
	}
	return hs
}

// mutate XORs noise over the hashes of a claim laid end to end (the first
// and last given separately, the proof between) and resizes the proof by
// grow elements, new ones taken from noise. It reports whether any hash
// changed.
func mutate(first ledger.Hash, proof []ledger.Hash, last ledger.Hash, noise []byte, grow int8) (ledger.Hash, []ledger.Hash, ledger.Hash, bool) {
	all := append(append([]ledger.Hash{first}, proof...), last)
	for i, x := range noise {
		if i/32 >= len(all) {
			break
		}
		all[i/32][i%32] ^= x
	}
	newFirst, newProof, newLast := all[0], all[1:len(all)-1], all[len(all)-1]
	switch {
	case grow < 0:
		newProof = newProof[:max(0, len(newProof)+int(grow))]
	case grow > 0:
		extra := hashesFrom(noise)
		for i := range int(grow % 8) {
			var h ledger.Hash
			if i < len(extra) {
				h = extra[i]
			}
			newProof = append(newProof, h)
		}
	}
	changed := newFirst != first || newLast != last || !slices.Equal(newProof, proof)
	return newFirst, newProof, newLast, changed
}

// FuzzVerifyInclusion feeds VerifyInclusion arbitrary input, which must not
// panic, and valid proofs from the fixture mutated by the fuzzer. Every
// verdict on a mutated claim must be tlog's; with the index and size kept,
// it must verify exactly when no hash changed. A changed index or size can
// legitimately verify, since a proof binds the size only through the tree's
// shape and a leaf's proof can be another tree's (leaf 1 of 2 and leaf 2 of 3
// both have the path [leaf 0]).
func FuzzVerifyInclusion(f *testing.F) {
	f.Add(uint64(0), uint64(1), uint16(7), uint16(3), int8(0), int8(0), int8(0), []byte{})
	f.Add(uint64(5), uint64(8), uint16(299), uint16(150), int8(1), int8(0), int8(0), []byte{0, 1})
	f.Add(uint64(1<<63), uint64(math.MaxUint64), uint16(5), uint16(4), int8(0), int8(1), int8(-1), make([]byte, 64))
	f.Add(uint64(3), uint64(4), uint16(64), uint16(63), int8(0), int8(0), int8(3), []byte("a proof that is far too long for anything at all"))
	f.Fuzz(func(t *testing.T, index, size uint64, n, i uint16, dIndex, dSize, grow int8, noise []byte) {
		// Arbitrary input: any verdict, no panic, the documented error.
		hs := hashesFrom(noise)
		var leaf, root ledger.Hash
		if len(hs) > 0 {
			leaf, hs = hs[0], hs[1:]
		}
		if len(hs) > 0 {
			root, hs = hs[0], hs[1:]
		}
		if err := ledger.VerifyInclusion(leaf, index, size, hs, root); err != nil && !errors.Is(err, ledger.ErrProofInvalid) {
			t.Fatalf("error %q does not wrap ErrProofInvalid", err)
		}

		// A valid proof, mutated.
		fx := getFixture(t)
		tsize := 1 + uint64(n)%maxSize
		tindex := uint64(i) % tsize
		proof, err := ledger.InclusionProof(tindex, tsize, fx.store.source(tsize))
		if err != nil {
			t.Fatal(err)
		}
		tleaf, troot := fx.leaves[tindex], fx.rfc.mth(0, int(tsize))
		mLeaf, mProof, mRoot, changed := mutate(tleaf, proof, troot, noise, grow)
		mIndex, mSize := tindex+uint64(int64(dIndex)), tsize+uint64(int64(dSize))
		got := ledger.VerifyInclusion(mLeaf, mIndex, mSize, mProof, mRoot)
		if want, ok := tlogInclusion(mLeaf, mIndex, mSize, mProof, mRoot); ok && (got == nil) != (want == nil) {
			t.Fatalf("leaf %d of %d claimed as %d of %d: VerifyInclusion says %v, tlog says %v",
				tindex, tsize, mIndex, mSize, got, want)
		}
		if mIndex != tindex || mSize != tsize {
			// tlog's verdict stands. Past int64 it has none, but sizes
			// that close to 2^64 (reached only by wrapping below zero)
			// need 57 or more hashes, and no mutation makes that many.
			if mIndex > math.MaxInt64 || mSize > math.MaxInt64 {
				if got == nil {
					t.Fatalf("leaf %d of %d verifies as %d of %d", tindex, tsize, mIndex, mSize)
				}
			}
			return
		}
		// A one-leaf tree's root is its leaf: a mutation that keeps them
		// equal is a new valid claim, not a broken one. Any other change
		// would need a SHA-256 preimage to verify.
		if tsize == 1 && mLeaf == mRoot && len(mProof) == 0 {
			changed = false
		}
		if changed && got == nil {
			t.Fatalf("leaf %d of %d: mutated proof verifies", tindex, tsize)
		}
		if !changed && got != nil {
			t.Fatalf("leaf %d of %d: valid proof fails: %v", tindex, tsize, got)
		}
	})
}

// FuzzVerifyConsistency is FuzzVerifyInclusion for consistency proofs.
func FuzzVerifyConsistency(f *testing.F) {
	f.Add(uint64(1), uint64(1), uint16(7), uint16(3), int8(0), int8(0), int8(0), []byte{})
	f.Add(uint64(6), uint64(8), uint16(299), uint16(150), int8(1), int8(0), int8(0), []byte{0, 1})
	f.Add(uint64(0), uint64(math.MaxUint64), uint16(5), uint16(4), int8(0), int8(-1), int8(-1), make([]byte, 64))
	f.Add(uint64(math.MaxUint64-1), uint64(math.MaxUint64), uint16(64), uint16(63), int8(-1), int8(0), int8(3), []byte("a proof that is far too long for anything at all"))
	f.Fuzz(func(t *testing.T, oldSize, newSize uint64, n, m uint16, dOld, dNew, grow int8, noise []byte) {
		hs := hashesFrom(noise)
		var oldRoot, newRoot ledger.Hash
		if len(hs) > 0 {
			oldRoot, hs = hs[0], hs[1:]
		}
		if len(hs) > 0 {
			newRoot, hs = hs[0], hs[1:]
		}
		if err := ledger.VerifyConsistency(oldSize, newSize, oldRoot, newRoot, hs); err != nil && !errors.Is(err, ledger.ErrProofInvalid) {
			t.Fatalf("error %q does not wrap ErrProofInvalid", err)
		}

		fx := getFixture(t)
		tnew := 1 + uint64(n)%maxSize
		told := 1 + uint64(m)%tnew
		proof, err := ledger.ConsistencyProof(told, tnew, fx.store.source(tnew))
		if err != nil {
			t.Fatal(err)
		}
		tOldRoot, tNewRoot := fx.rfc.mth(0, int(told)), fx.rfc.mth(0, int(tnew))
		mOldRoot, mProof, mNewRoot, changed := mutate(tOldRoot, proof, tNewRoot, noise, grow)
		mOld, mNew := told+uint64(int64(dOld)), tnew+uint64(int64(dNew))
		got := ledger.VerifyConsistency(mOld, mNew, mOldRoot, mNewRoot, mProof)
		if want, ok := tlogConsistency(mOld, mNew, mOldRoot, mNewRoot, mProof); ok && (got == nil) != (want == nil) {
			t.Fatalf("sizes %d to %d claimed as %d to %d: VerifyConsistency says %v, tlog says %v",
				told, tnew, mOld, mNew, got, want)
		}
		if mOld != told || mNew != tnew {
			// tlog's verdict stands. Past int64 it has none, but sizes
			// that close to 2^64 (reached only by wrapping below zero)
			// need 50 or more hashes unless they are equal, and no
			// mutation makes that many: only equal sizes with equal
			// roots and no proof can verify.
			if got == nil && (mOld > math.MaxInt64 || mNew > math.MaxInt64) &&
				(mOld != mNew || mOldRoot != mNewRoot || len(mProof) != 0) {
				t.Fatalf("sizes %d to %d verify as %d to %d", told, tnew, mOld, mNew)
			}
			return
		}
		// Equal sizes take equal roots and no proof: a mutation that keeps
		// it so is a new valid claim, not a broken one.
		if told == tnew && mOldRoot == mNewRoot && len(mProof) == 0 {
			changed = false
		}
		if changed && got == nil {
			t.Fatalf("sizes %d to %d: mutated proof verifies", told, tnew)
		}
		if !changed && got != nil {
			t.Fatalf("sizes %d to %d: valid proof fails: %v", told, tnew, got)
		}
	})
}

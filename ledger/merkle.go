package ledger

import (
	"fmt"
	"math/bits"
	"slices"
)

// The Merkle tree is RFC 9162 §2.1's: leaves are indexed 0..size-1, and
// MTH(D[0:n]) splits at the largest power of two below n. The ledger keeps
// every completed aligned perfect subtree (a store may hash its lowest
// levels from the leaves when read instead): node (level L, index i) is the
// root of the perfect subtree over leaves [i<<L, (i+1)<<L), level 0 being the
// leaf hashes. A node exists once all of its leaves do, and never changes
// after that. Every function here reads the tree only through a NodeSource,
// so the math is tested without a database.

// NodeSource returns the stored node (level, index): the root of the perfect
// subtree over leaves [index<<level, (index+1)<<level). It returns an error if
// that node is absent; the functions here pass the error on, wrapped.
type NodeSource func(level uint, index uint64) (Hash, error)

// Node is one stored node: the root of the perfect subtree over leaves
// [Index<<Level, (Index+1)<<Level).
type Node struct {
	Level uint
	Index uint64
	Hash  Hash
}

// read is get with the node named in the error.
func (get NodeSource) read(level uint, index uint64) (Hash, error) {
	h, err := get(level, index)
	if err != nil {
		return Hash{}, fmt.Errorf("read Merkle tree node (level %d, index %d): %w", level, index, err)
	}
	return h, nil
}

// AppendNodes returns the nodes that become complete when the leaf with hash
// leaf is appended at index, which must be the tree's current size: the leaf
// itself at level 0, then each parent it completes, level by level upwards.
// Left siblings are read from get, one per trailing one bit of index, so
// there are at most 64 reads. On error it returns nil and the error.
func AppendNodes(index uint64, leaf Hash, get NodeSource) ([]Node, error) {
	return AppendNode(0, index, leaf, get)
}

// AppendNode returns the nodes that become complete when node (level,
// index), with hash h, is completed: that node, then each parent it
// completes, level by level upwards, reading left siblings (at level and
// above) from get. A store that keeps only the levels from some level up
// calls it with each node of that level as it completes. On error it
// returns nil and the error.
func AppendNode(level uint, index uint64, h Hash, get NodeSource) ([]Node, error) {
	nodes := make([]Node, 1, 1+bits.TrailingZeros64(^index))
	nodes[0] = Node{Level: level, Index: index, Hash: h}
	// Node (level, i) is completed by its last leaf exactly when i is odd
	// at every level below: a right child, whose left sibling is stored.
	for i := index; i&1 == 1; level, i = level+1, i>>1 {
		left, err := get.read(level, i-1)
		if err != nil {
			return nil, fmt.Errorf("append node %d/%d to the Merkle tree: %w", nodes[0].Level, index, err)
		}
		h = NodeHash(left, h)
		nodes = append(nodes, Node{Level: level + 1, Index: i >> 1, Hash: h})
	}
	return nodes, nil
}

// PerfectRoot returns the root of the perfect tree over leaves, whose number
// must be a power of two (one leaf is its own root). It folds in place:
// leaves is overwritten.
func PerfectRoot(leaves []Hash) Hash {
	if n := len(leaves); n == 0 || n&(n-1) != 0 {
		panic(fmt.Sprintf("ledger.PerfectRoot: %d leaves, not a power of two", n))
	}
	for n := len(leaves); n > 1; n /= 2 {
		for i := 0; i < n/2; i++ {
			leaves[i] = NodeHash(leaves[2*i], leaves[2*i+1])
		}
	}
	return leaves[0]
}

// Root returns MTH(D[0:size]), RFC 9162 §2.1.1's root of the tree of the
// first size leaves; size 0 gives EmptyRoot. It reads one node per one bit
// of size, at most 64.
func Root(size uint64, get NodeSource) (Hash, error) {
	return RangeRoot(0, size, get)
}

// RangeRoot returns MTH(D[begin:end]), the RFC 9162 root of the tree built
// over just the leaves of the half-open range [begin, end) — the root any
// implementation computes when given only those leaves. An empty range gives
// EmptyRoot; begin > end is an error. Every leaf in the range must be stored.
//
// Cost. Let n = end-begin and let 2^a be the largest power of two that
// divides begin and is at most n (2^a = the largest power of two <= n when
// begin is 0). The range's own tree coincides with stored aligned nodes
// exactly on its perfect subtrees of size <= 2^a, so RangeRoot reads the
// n>>a full blocks of 2^a leaves and one node per one bit of n mod 2^a, and
// hashes about as many: O(log n) when begin is a multiple of the largest
// power of two below n (every subtree of an RFC tree, and every prefix, is
// such a range), O(n/2^a + log n) otherwise, up to n reads when begin is odd.
// No fewer reads can do: a stored node that is not a subtree of the range's
// tree hashes a different shape and says nothing about the range's root.
// Memory is O(log n) whatever the range.
func RangeRoot(begin, end uint64, get NodeSource) (Hash, error) {
	if begin > end {
		return Hash{}, fmt.Errorf("root of leaf range [%d, %d): begin is after end", begin, end)
	}
	n := end - begin
	if n == 0 {
		return EmptyRoot, nil
	}
	// a is capped at log2(n) so that a block of 2^a leaves fits in the
	// range; begin == 0 has 64 trailing zeros and takes the cap.
	a := uint(bits.TrailingZeros64(begin))
	if top := uint(bits.Len64(n)) - 1; a > top {
		a = top
	}
	blocks := n >> a
	tailBegin := begin + blocks<<a
	tail, err := alignedRoot(tailBegin, end, get)
	if err != nil {
		return Hash{}, fmt.Errorf("root of leaf range [%d, %d): %w", begin, end, err)
	}
	// Above level a the range's tree is the RFC tree over its blocks with
	// the tail as one more leaf: the splits, counted in blocks, are the
	// same powers of two.
	if blocks == 1 {
		// The common case, any aligned range: no stack needed.
		h, err := get.read(a, begin>>a)
		if err != nil {
			return Hash{}, fmt.Errorf("root of leaf range [%d, %d): %w", begin, end, err)
		}
		if tailBegin == end {
			return h, nil
		}
		return NodeHash(h, tail), nil
	}
	f := Frontier{Nodes: make([]Hash, 0, bits.Len64(blocks)+1)}
	for i := range blocks {
		h, err := get.read(a, begin>>a+i)
		if err != nil {
			return Hash{}, fmt.Errorf("root of leaf range [%d, %d): %w", begin, end, err)
		}
		f.Append(h)
	}
	if tailBegin != end {
		f.Append(tail)
	}
	return f.Root(), nil
}

// alignedRoot returns MTH(D[begin:end]) when begin is a multiple of the
// largest power of two <= end-begin, or of a larger one: then the range's
// right border is made of stored nodes, one per one bit of end-begin, and the
// root folds them right to left. It returns EmptyRoot for an empty range.
func alignedRoot(begin, end uint64, get NodeSource) (Hash, error) {
	rest := end - begin
	if rest == 0 {
		return EmptyRoot, nil
	}
	var root Hash
	for first := true; rest != 0; first = false {
		level := uint(bits.TrailingZeros64(rest))
		rest &^= 1 << level
		h, err := get.read(level, (begin+rest)>>level)
		if err != nil {
			return Hash{}, err
		}
		if first {
			root = h
		} else {
			root = NodeHash(h, root)
		}
	}
	return root, nil
}

// split returns RFC 9162's k for a tree of n > 1 leaves, the largest power of
// two smaller than n, as its base-2 logarithm.
func split(n uint64) uint {
	return uint(bits.Len64(n-1)) - 1
}

// InclusionProof returns RFC 9162 §2.1.3.1's inclusion proof (audit path)
// PATH(index, D[0:size]) for the leaf at index in the tree of the first size
// leaves, ordered from the leaf's sibling up to the root's child. It is an
// error unless index < size. It reads O(log size) nodes: one per level, plus
// up to 64 for the single sibling that is not a perfect subtree.
func InclusionProof(index, size uint64, get NodeSource) ([]Hash, error) {
	if index >= size {
		return nil, fmt.Errorf("inclusion proof for leaf %d of %d: no such leaf", index, size)
	}
	// Walk down from the root; the path lists the siblings bottom-up.
	path := make([]Hash, 0, bits.Len64(size-1))
	begin, end := uint64(0), size
	for end-begin > 1 {
		k := split(end - begin)
		mid := begin + 1<<k
		var sib Hash
		var err error
		if index < mid {
			sib, err = alignedRoot(mid, end, get)
			end = mid
		} else {
			sib, err = get.read(k, begin>>k)
			begin = mid
		}
		if err != nil {
			return nil, fmt.Errorf("inclusion proof for leaf %d of %d: %w", index, size, err)
		}
		path = append(path, sib)
	}
	slices.Reverse(path)
	return path, nil
}

// ConsistencyProof returns RFC 9162 §2.1.4.1's consistency proof
// PROOF(old, D[0:new]) that the tree of the first old leaves is a prefix of
// the tree of the first new leaves. It is an error unless 0 < old <= new; for
// old == new the proof is empty (RFC 9162 defines only old < new, and an
// empty proof between equal roots is what every implementation accepts). It
// reads O(log new) nodes.
func ConsistencyProof(old, new uint64, get NodeSource) ([]Hash, error) {
	if old == 0 || old > new {
		return nil, fmt.Errorf("consistency proof from size %d to %d: want 0 < old <= new", old, new)
	}
	// SUBPROOF(m, D[begin:end], whole) walked down from the root; the
	// siblings found on the way come out innermost first.
	sibs := make([]Hash, 0, TreeDepth(new))
	begin, end, m, whole := uint64(0), new, old, true
	for m != end-begin {
		k := split(end - begin)
		mid := begin + 1<<k
		var sib Hash
		var err error
		if m <= 1<<k {
			sib, err = alignedRoot(mid, end, get)
			end = mid
		} else {
			sib, err = get.read(k, begin>>k)
			begin, m, whole = mid, m-1<<k, false
		}
		if err != nil {
			return nil, fmt.Errorf("consistency proof from size %d to %d: %w", old, new, err)
		}
		sibs = append(sibs, sib)
	}
	proof := make([]Hash, 0, len(sibs)+1)
	if !whole {
		// The old tree's last subtree in common: reached through a left
		// branch, so it is perfect and aligned, one stored node.
		h, err := alignedRoot(begin, end, get)
		if err != nil {
			return nil, fmt.Errorf("consistency proof from size %d to %d: %w", old, new, err)
		}
		proof = append(proof, h)
	}
	for i := len(sibs) - 1; i >= 0; i-- {
		proof = append(proof, sibs[i])
	}
	return proof, nil
}

// TreeDepth returns the depth of the RFC 9162 tree of size leaves: the number
// of hashes on the longest leaf-to-root path, 0 for zero or one leaf and
// ceil(log2(size)) otherwise.
func TreeDepth(size uint64) int {
	if size == 0 {
		return 0
	}
	return bits.Len64(size - 1)
}

// Frontier is an RFC 9162 tree built incrementally over a stream of leaf
// hashes, kept as its right border: the perfect subtrees that the binary
// expansion of Size splits the leaves into, largest (leftmost) first. It
// holds O(log Size) hashes and needs no storage, for small trees with their
// own roots such as audit sessions. The zero value is the empty tree.
//
// Invariant: len(Nodes) == bits.OnesCount64(Size), and Nodes[j] is the root
// of the j'th subtree. Append keeps it; a Frontier decoded from elsewhere
// must have it, or Append may panic and Root is meaningless.
type Frontier struct {
	Size  uint64
	Nodes []Hash
}

// Append adds the leaf with hash leaf as leaf number f.Size.
func (f *Frontier) Append(leaf Hash) {
	h := leaf
	// Each trailing one bit of Size is a perfect subtree as large as the
	// one just completed: merge them, as AppendNodes does.
	for n := f.Size; n&1 == 1; n >>= 1 {
		last := len(f.Nodes) - 1
		h = NodeHash(f.Nodes[last], h)
		f.Nodes = f.Nodes[:last]
	}
	f.Nodes = append(f.Nodes, h)
	f.Size++
}

// Root returns MTH over all the leaves appended, EmptyRoot if none.
func (f Frontier) Root() Hash {
	if len(f.Nodes) == 0 {
		return EmptyRoot
	}
	root := f.Nodes[len(f.Nodes)-1]
	for j := len(f.Nodes) - 2; j >= 0; j-- {
		root = NodeHash(f.Nodes[j], root)
	}
	return root
}

// Depth returns TreeDepth(f.Size).
func (f Frontier) Depth() int { return TreeDepth(f.Size) }

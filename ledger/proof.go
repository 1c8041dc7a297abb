package ledger

import (
	"errors"
	"fmt"
	"math/bits"
)

// ErrProofInvalid is wrapped by every error VerifyInclusion and
// VerifyConsistency return: the proof does not show what it was offered for.
var ErrProofInvalid = errors.New("invalid Merkle proof")

// The verifiers are RFC 9162's algorithms step by step. They take sizes and
// hashes from anyone, so they check every length before hashing, do work
// bounded by the expected proof length (at most 65 hashes), and never
// panic. Note that a proof binds a tree size only through the shape of the
// tree: RFC 9162 verification of the same path can succeed for another size
// whose tree has the same shape around the leaf (leaf 0 in sizes 5 and 6,
// say). What binds a size to a root is the signed tree head that carries
// both.

// VerifyInclusion checks, by RFC 9162 §2.1.3.2, that proof is a valid
// inclusion proof for the leaf with hash leaf at index in the tree of size
// leaves whose root is root. It returns nil if so, and otherwise an error
// wrapping ErrProofInvalid that says what did not match: index >= size, a
// proof of the wrong length, or a root that does not come out.
func VerifyInclusion(leaf Hash, index, size uint64, proof []Hash, root Hash) error {
	if index >= size {
		return fmt.Errorf("verify inclusion of leaf %d in tree of size %d: no such leaf: %w", index, size, ErrProofInvalid)
	}
	if want := inclusionLen(index, size); len(proof) != want {
		return fmt.Errorf("verify inclusion of leaf %d in tree of size %d: proof has %d hashes, want %d: %w",
			index, size, len(proof), want, ErrProofInvalid)
	}
	// RFC 9162 steps 2 to 5. Its checks on sn (step 4a: a path too long;
	// step 5: too short) cannot fail once the length is right, and the
	// length check above is what makes them so.
	if r := climb(index, size-1, leaf, proof, nil); r != root {
		return fmt.Errorf("verify inclusion of leaf %d in tree of size %d: proof gives root %s, want %s: %w",
			index, size, r, root, ErrProofInvalid)
	}
	return nil
}

// VerifyConsistency checks, by RFC 9162 §2.1.4.2, that proof is a valid
// consistency proof that the tree of oldSize leaves with root oldRoot is a
// prefix of the tree of newSize leaves with root newRoot. It requires
// 0 < oldSize <= newSize; for oldSize == newSize, which RFC 9162 leaves out,
// the proof must be empty and the roots equal. It returns nil if the proof
// holds, and otherwise an error wrapping ErrProofInvalid that says what did
// not match.
func VerifyConsistency(oldSize, newSize uint64, oldRoot, newRoot Hash, proof []Hash) error {
	if oldSize == 0 || oldSize > newSize {
		return fmt.Errorf("verify consistency of size %d with %d: want 0 < old size <= new size: %w",
			oldSize, newSize, ErrProofInvalid)
	}
	if want := consistencyLen(oldSize, newSize); len(proof) != want {
		return fmt.Errorf("verify consistency of size %d with %d: proof has %d hashes, want %d: %w",
			oldSize, newSize, len(proof), want, ErrProofInvalid)
	}
	if oldSize == newSize {
		if oldRoot != newRoot {
			return fmt.Errorf("verify consistency of size %d with itself: roots %s and %s differ: %w",
				oldSize, oldRoot, newRoot, ErrProofInvalid)
		}
		return nil
	}
	// Step 2: a power-of-two old tree is a node of the new one, and the
	// verifier knows its hash, so the prover leaves it out.
	path := proof
	if oldSize&(oldSize-1) == 0 {
		path = make([]Hash, 0, len(proof)+1)
		path = append(path, oldRoot)
		path = append(path, proof...)
	}
	// Steps 3 to 7, less the checks on sn (a path too long or too short),
	// which the length check above makes sure cannot fail.
	fn, sn := oldSize-1, newSize-1
	for fn&1 == 1 {
		fn, sn = fn>>1, sn>>1
	}
	fr := path[0]
	sr := climb(fn, sn, path[0], path[1:], &fr)
	if fr != oldRoot {
		return fmt.Errorf("verify consistency of size %d with %d: proof gives old root %s, want %s: %w",
			oldSize, newSize, fr, oldRoot, ErrProofInvalid)
	}
	if sr != newRoot {
		return fmt.Errorf("verify consistency of size %d with %d: proof gives new root %s, want %s: %w",
			oldSize, newSize, sr, newRoot, ErrProofInvalid)
	}
	return nil
}

// climb is the loop RFC 9162's two verifications share (§2.1.3.2 steps 4
// and 5, §2.1.4.2 steps 6 and 7): from node fn of a level whose last node
// is sn, it hashes each hash of path into r, as the left sibling where fn
// is a right child or on the tree's right border, else as the right one,
// and returns r. With left not nil, it also hashes the left siblings alone
// into *left (the old root of a consistency proof).
func climb(fn, sn uint64, r Hash, path []Hash, left *Hash) Hash {
	for _, p := range path {
		if fn&1 == 1 || fn == sn {
			r = NodeHash(p, r)
			if left != nil {
				*left = NodeHash(p, *left)
			}
			// Skip the levels where the node has no sibling: it is on
			// the tree's right border and its parent is itself.
			for fn&1 == 0 && fn != 0 {
				fn, sn = fn>>1, sn>>1
			}
		} else {
			r = NodeHash(r, p)
		}
		fn, sn = fn>>1, sn>>1
	}
	return r
}

// inclusionLen is the length of the inclusion proof for index < size: one
// hash per level below the point where the leaf's path leaves the tree's
// right border, plus one per left sibling on that border.
func inclusionLen(index, size uint64) int {
	inner := bits.Len64(index ^ (size - 1))
	return inner + bits.OnesCount64(index>>inner)
}

// consistencyLen is the length of the consistency proof for
// 0 < oldSize <= newSize: the inclusion proof of the old tree's last leaf,
// less the levels inside the old tree's last perfect subtree, plus that
// subtree's root unless it is the whole old tree.
func consistencyLen(oldSize, newSize uint64) int {
	if oldSize == newSize {
		return 0
	}
	inner := bits.Len64((oldSize - 1) ^ (newSize - 1))
	border := bits.OnesCount64((oldSize - 1) >> inner)
	// The old tree's last perfect subtree has 2^shift leaves, and shift
	// < inner because the sizes differ above it.
	shift := bits.TrailingZeros64(oldSize)
	n := inner - shift + border
	if oldSize != 1<<shift {
		n++
	}
	return n
}

package boltaudit

import (
	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// ProveInclusion is the proof that event seq is in the tree of the first
// size events, read in tx. It needs 1 <= seq <= size <= the head.
func ProveInclusion(tx *boltstore.Tx, seq, size uint64) (*audit.Proof, error) {
	root, err := tx.Root(size)
	if err != nil {
		return nil, err
	}
	r, err := tx.Event(seq)
	if err != nil {
		return nil, err
	}
	path, err := tx.InclusionProof(seq, size)
	if err != nil {
		return nil, err
	}
	return audit.NewInclusionProof(seq, r.Raw, size, root, path), nil
}

// ProveConsistency is the proof that the tree of the first old events is a
// prefix of the tree of the first size, read in tx. It needs
// 1 <= old <= size <= the head.
func ProveConsistency(tx *boltstore.Tx, old, size uint64) (*audit.Proof, error) {
	root, err := tx.Root(size)
	if err != nil {
		return nil, err
	}
	oldRoot, err := tx.Root(old)
	if err != nil {
		return nil, err
	}
	path, err := tx.ConsistencyProof(old, size)
	if err != nil {
		return nil, err
	}
	return audit.NewConsistencyProof(old, oldRoot, size, root, path), nil
}

package boltaudit

import (
	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// Prove is the proof of kind, read in tx: with audit.ProofInclusion, that
// event m is in the tree of the first n events; with
// audit.ProofConsistency, that the tree of the first m events is a prefix
// of it. It needs 1 <= m <= n <= the head.
func Prove(tx *boltstore.Tx, kind string, m, n uint64) (*audit.Proof, error) {
	root, err := tx.Root(n)
	if err != nil {
		return nil, err
	}
	if kind == audit.ProofInclusion {
		r, err := tx.Event(m)
		if err != nil {
			return nil, err
		}
		path, err := tx.InclusionProof(m, n)
		if err != nil {
			return nil, err
		}
		return audit.NewInclusionProof(m, r.Raw, n, root, path), nil
	}
	oldRoot, err := tx.Root(m)
	if err != nil {
		return nil, err
	}
	path, err := tx.ConsistencyProof(m, n)
	if err != nil {
		return nil, err
	}
	return audit.NewConsistencyProof(m, oldRoot, n, root, path), nil
}

package boltaudit

import (
	"encoding/base64"
	"fmt"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// ProofRequest names a proof. With Kind audit.ProofInclusion: that event
// Seq is in the tree of the first Size events; with audit.ProofConsistency:
// that the tree of the first Old events is a prefix of it. The tree is the
// whole ledger (its head) unless SizeKnown.
type ProofRequest struct {
	Kind      string
	Seq, Old  uint64
	Size      uint64
	SizeKnown bool
}

// Prove is the proof req names, read in tx. A request the ledger cannot
// answer — a field of the other kind of proof, a seq or size of 0, or one
// beyond the tree or the head — is an *audit.OptionError.
func Prove(tx *boltstore.Tx, req ProofRequest) (*audit.Proof, error) {
	head := tx.Head().Seq
	n := head
	if req.SizeKnown {
		n = req.Size
	}
	inclusion := req.Kind == audit.ProofInclusion
	switch {
	case !inclusion && req.Kind != audit.ProofConsistency:
		return nil, audit.BadOption("kind", "%q: want %s or %s", req.Kind, audit.ProofInclusion, audit.ProofConsistency)
	case inclusion && req.Old != 0:
		return nil, audit.BadOption("old", "is for consistency proofs")
	case !inclusion && req.Seq != 0:
		return nil, audit.BadOption("seq", "is for inclusion proofs")
	case inclusion && req.Seq == 0:
		return nil, audit.BadOption("seq", "is required (seqs start at 1)")
	case !inclusion && req.Old == 0:
		return nil, audit.BadOption("old", "is required (at least 1)")
	case n > head && inclusion:
		return nil, beyondHead("size", n, head)
	case n > head:
		return nil, beyondHead("new", n, head)
	case inclusion && req.Seq > n:
		return nil, audit.BadOption("seq", "%d is beyond the tree size %d", req.Seq, n)
	case !inclusion && req.Old > n:
		return nil, audit.BadOption("old", "%d is beyond the new size %d", req.Old, n)
	}
	root, err := tx.Root(n)
	if err != nil {
		return nil, err
	}
	if inclusion {
		if err := fromBytes(tx, 1, n, 0, root, ledger.Hash{}); err != nil {
			return nil, err
		}
		// Its proof holds the event in base64: one check-proof would not
		// read (audit.MaxProofBytes) is not made — only a file written by
		// another program can hold such an event — nor held in memory.
		var size int
		if err := tx.ScanRaw(req.Seq, req.Seq+1, func(_ uint64, raw []byte) error { size = len(raw); return nil }); err != nil {
			return nil, err
		}
		if base64.StdEncoding.EncodedLen(size) > maxProofEvent {
			return nil, fmt.Errorf("event %d is %d bytes: its proof would be larger than the %d bytes check-proof reads (the event in base64 at most %d)", req.Seq, size, audit.MaxProofBytes, maxProofEvent)
		}
		r, err := tx.Event(req.Seq)
		if err != nil {
			return nil, err
		}
		path, err := tx.InclusionProof(req.Seq, n)
		if err != nil {
			return nil, err
		}
		return checked(audit.NewInclusionProof(req.Seq, r.Raw, n, root, path), audit.Trusted{Root: root, Size: n, SizeKnown: true})
	}
	oldRoot, err := tx.Root(req.Old)
	if err != nil {
		return nil, err
	}
	if err := fromBytes(tx, 1, n, req.Old, root, oldRoot); err != nil {
		return nil, err
	}
	path, err := tx.ConsistencyProof(req.Old, n)
	if err != nil {
		return nil, err
	}
	return checked(audit.NewConsistencyProof(req.Old, oldRoot, n, root, path),
		audit.Trusted{Root: root, Size: n, SizeKnown: true, OldRoot: oldRoot, OldRootKnown: true, OldSize: req.Old, OldSizeKnown: true})
}

// checked is p if it holds against t, the roots of the events' bytes: a
// proof whose path, read from the file's stored nodes, does not hold is
// not written; the file is damaged (a stored node no longer what its
// children hash to).
func checked(p *audit.Proof, t audit.Trusted) (*audit.Proof, error) {
	if _, err := p.Check(t); err != nil {
		return nil, fmt.Errorf("%w: the proof its stored Merkle nodes give does not hold (%w); logbook verify says where", boltstore.ErrDamaged, err)
	}
	return p, nil
}

// maxProofEvent bounds an inclusion proof's event, in base64: the proof
// file, with its hashes, within audit.MaxProofBytes. A var: tests lower it.
var maxProofEvent = audit.MaxProofBytes - 64<<10

// beyondHead is the *audit.OptionError of an option asking for n events of
// a ledger of head.
func beyondHead(option string, n, head uint64) error {
	return audit.BadOption(option, "%d is beyond the head %d", n, head)
}

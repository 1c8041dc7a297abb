package audit

import (
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
)

// Kind names what an audit found wrong. The values are public API: verify
// and check-proof print them, and scripts key on them.
type Kind string

// Problems in the log itself, each at a seq: the chain and tree problems
// ledger reports, under the same words.
const (
	EventMalformed = Kind(ledger.ProblemMalformed)
	SeqMismatch    = Kind(ledger.ProblemSeq)
	EventMissing   = Kind(ledger.ProblemGap)
	ContentChanged = Kind(ledger.ProblemContent)
	LinkBroken     = Kind(ledger.ProblemLink)
	NodeWrong      = Kind(ledger.ProblemNode)
	HeadMismatch   = Kind(ledger.ProblemHead)
)

// Problems an auditor finds beyond the chain, also each at a seq.
const (
	// LogTruncated: the ledger has fewer events than a checkpoint signed.
	LogTruncated Kind = "log truncated"
	// CheckpointMismatch: the first events no longer hash to the signed root.
	CheckpointMismatch Kind = "checkpoint mismatch"
	// CheckpointInconsistent: no valid consistency proof from the
	// checkpoint to the ledger's root.
	CheckpointInconsistent Kind = "checkpoint inconsistent"
	// ProjectionDiffers: a stored projection key differs from a refold of
	// the log.
	ProjectionDiffers Kind = "projection differs from the log"
	// ProjectionFoldFailed: an event of a verified log does not fold.
	ProjectionFoldFailed Kind = "projection fold failed"
)

// Problems with a file handed to the auditor rather than with the log.
const (
	// CheckpointSignature: the checkpoint is not signed by the verifier key.
	CheckpointSignature Kind = "checkpoint signature"
	// CheckpointMalformed: a signed checkpoint whose body is not origin,
	// size and root lines.
	CheckpointMalformed Kind = "malformed checkpoint"
	// ProofMalformed: not a proof file as Proof.Encode writes it.
	ProofMalformed Kind = "malformed proof"
	// ProofInvalid: a well-formed proof that does not prove its statement
	// against the trusted root and size.
	ProofInvalid Kind = "invalid proof"
	// FileDamaged: the ledger file cannot be read as a ledger's bbolt file
	// (its pages, trees or freelist), or its stored Merkle nodes no longer
	// cover its events' bytes: nothing is at a seq of the log.
	FileDamaged Kind = "ledger file damaged"
)

// InLog reports whether problems of this kind are at a position of the log
// (Problem.Seq is meaningful), rather than in a proof or checkpoint file.
func (k Kind) InLog() bool {
	switch k {
	case CheckpointSignature, CheckpointMalformed, ProofMalformed, ProofInvalid, FileDamaged:
		return false
	}
	return true
}

// Problem is one thing an audit found wrong. It is the only error type the
// checks of this package and of boltaudit return for a ledger, proof or
// checkpoint that does not hold; any other error is I/O or usage.
type Problem struct {
	// Seq is the first bad position, for kinds in the log.
	Seq  uint64 `json:"seq"`
	Kind Kind   `json:"problem"`
	// Detail says what did not match. For kinds outside the log it is the
	// whole message.
	Detail string `json:"detail,omitempty"`
	// Want and Got are the hashes expected and found, when a hash differed.
	Want *ledger.Hash `json:"want,omitempty"`
	Got  *ledger.Hash `json:"got,omitempty"`
	// Err is the cause, if any: a *ledger.IntegrityError for the chain and
	// tree kinds, an error wrapping ledger.ErrProofInvalid for a proof that
	// does not verify.
	Err error `json:"-"`
}

// Error is "seq N: kind: detail" for problems in the log, and the detail
// (or the kind, if none) for problems with a file.
func (p *Problem) Error() string {
	if !p.Kind.InLog() {
		if p.Detail == "" {
			return string(p.Kind)
		}
		return p.Detail
	}
	s := fmt.Sprintf("seq %d: %s", p.Seq, p.Kind)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

func (p *Problem) Unwrap() error { return p.Err }

// FromIntegrity is the problem ledger's chain or tree check reported.
func FromIntegrity(ie *ledger.IntegrityError) *Problem {
	p := &Problem{Kind: Kind(ie.Problem), Seq: ie.Seq, Detail: ie.Detail, Err: ie}
	if ie.Want != ie.Got {
		want, got := ie.Want, ie.Got
		p.Want, p.Got = &want, &got
	}
	return p
}

// AsProblem returns the Problem err is or wraps, converting a
// *ledger.IntegrityError; nil if err is neither.
func AsProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var ie *ledger.IntegrityError
	if errors.As(err, &ie) {
		return FromIntegrity(ie)
	}
	return nil
}

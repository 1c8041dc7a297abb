package audit

import (
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
)

// Report is the outcome of verifying a ledger, the same on success and on
// failure (then OK is false and Problem says the first thing wrong). Its
// JSON is `logbook verify --json`.
type Report struct {
	OK          bool              `json:"ok"`
	Size        uint64            `json:"size"`          // events verified: seq 1..size
	Head        ledger.Hash       `json:"head"`          // hash of event size
	Root        ledger.Hash       `json:"root,omitzero"` // RFC 9162 root of the first size events; absent when the chain failed before it was computed
	Nodes       uint64            `json:"nodes"`         // stored Merkle nodes above the leaves re-hashed
	Problem     *Problem          `json:"error,omitempty"`
	Projections *ProjectionReport `json:"projections,omitempty"`
	Checkpoint  *CheckpointReport `json:"checkpoint,omitempty"`
	Timing      Timing            `json:"timing"`
}

// ProjectionReport is what the refold-and-compare of the projections found.
type ProjectionReport struct {
	Checked       bool   `json:"checked"` // refolded from the log and compared
	AppliedSeq    uint64 `json:"applied_seq"`
	StoredVersion uint64 `json:"stored_version"`
	BinaryVersion uint64 `json:"binary_version"`
	ComparedKeys  uint64 `json:"compared_keys,omitempty"`
	// Fingerprint is the xxhash-64 of the projections refolded from the log
	// up to AppliedSeq (hex): two auditors verifying copies at the same seq
	// get the same value.
	Fingerprint string `json:"fingerprint,omitempty"`
	Differences uint64 `json:"differences,omitempty"` // keys that differ, on failure
	Note        string `json:"note,omitempty"`        // why they were not compared
}

// CheckpointReport is the checkpoint a ledger was checked against.
type CheckpointReport struct {
	Origin     string      `json:"origin"`
	Size       uint64      `json:"size"`
	Root       ledger.Hash `json:"root"`
	Consistent bool        `json:"consistent"` // the ledger extends it
}

// Timing is how long the parts of a verification took.
type Timing struct {
	ChainMS               float64 `json:"chain_ms"`
	ChainEventsPerS       float64 `json:"chain_events_per_s"`
	ProjectionsMS         float64 `json:"projections_ms,omitempty"`
	ProjectionsEventsPerS float64 `json:"projections_events_per_s,omitempty"`
	LockHeldMS            float64 `json:"lock_held_ms,omitempty"` // the longest read transaction of the projection comparison
	TotalMS               float64 `json:"total_ms"`
}

// Fail ends the report with p.
func (r *Report) Fail(p *Problem) *Report {
	r.OK, r.Problem = false, p
	return r
}

// CheckSize is the LogTruncated problem if a verified log of size events is
// shorter than c, and nil otherwise.
func (c Checkpoint) CheckSize(size uint64) *Problem {
	if c.Size <= size {
		return nil
	}
	return &Problem{Kind: LogTruncated, Seq: size + 1,
		Detail: fmt.Sprintf("the ledger has %d events, the checkpoint of %s signed %d", size, c.Origin, c.Size)}
}

// CheckExtends proves a verified log of size events with root root extends
// c: fromEvents, the root of its first c.Size events recomputed from the
// events' bytes as they are now, must be the signed root, and proof (called
// only then, for c.Size > 0) must give a valid RFC 9162 consistency proof
// from c to the log. A failure is a CheckpointMismatch or
// CheckpointInconsistent problem; an error of proof counts as the latter,
// since the log cannot show it extends c.
func (c Checkpoint) CheckExtends(fromEvents ledger.Hash, size uint64, root ledger.Hash, proof func() ([]ledger.Hash, error)) *Problem {
	if fromEvents != c.Root {
		want, got := c.Root, fromEvents
		return &Problem{Kind: CheckpointMismatch, Seq: c.Size, Want: &want, Got: &got,
			Detail: fmt.Sprintf("the first %d events no longer hash to the root signed in the checkpoint of %s: the log was rewritten at or before seq %d", c.Size, c.Origin, c.Size)}
	}
	if c.Size == 0 {
		return nil
	}
	path, err := proof()
	if err == nil {
		err = ledger.VerifyConsistency(c.Size, size, c.Root, root, path)
	}
	if err != nil {
		return &Problem{Kind: CheckpointInconsistent, Seq: c.Size, Detail: err.Error(), Err: err}
	}
	return nil
}

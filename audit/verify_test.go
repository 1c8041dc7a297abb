package audit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
)

func TestCheckSizeTruncated(t *testing.T) {
	cp := audit.Checkpoint{Origin: "o", Size: 8}
	if p := cp.CheckSize(8); p != nil {
		t.Errorf("size 8 against a checkpoint of 8: %v", p)
	}
	p := cp.CheckSize(5)
	if p == nil || p.Kind != audit.LogTruncated || p.Seq != 6 {
		t.Fatalf("size 5 against a checkpoint of 8: %v", p)
	}
	if want := "seq 6: log truncated: the ledger has 5 events, the checkpoint of o signed 8"; p.Error() != want {
		t.Errorf("%q, want %q", p.Error(), want)
	}
}

func TestCheckExtends(t *testing.T) {
	l := newMemLog(9)
	root9 := l.root(t, 9)
	proof := func(old uint64) func() ([]ledger.Hash, error) {
		return func() ([]ledger.Hash, error) { return ledger.ConsistencyProof(old, 9, l.node) }
	}
	cp := audit.Checkpoint{Origin: "o", Size: 5, Root: l.root(t, 5)}
	if p := cp.CheckExtends(l.root(t, 5), 9, root9, proof(5)); p != nil {
		t.Errorf("a log that extends the checkpoint: %v", p)
	}
	empty := audit.Checkpoint{Origin: "o", Root: ledger.EmptyRoot}
	if p := empty.CheckExtends(ledger.EmptyRoot, 9, root9, nil); p != nil {
		t.Errorf("the empty checkpoint: %v", p)
	}

	// The first 5 events now hash to another root: rewritten.
	p := cp.CheckExtends(l.root(t, 4), 9, root9, proof(5))
	if p == nil || p.Kind != audit.CheckpointMismatch || p.Seq != 5 || *p.Want != cp.Root || *p.Got != l.root(t, 4) {
		t.Fatalf("rewritten log: %v", p)
	}

	// The roots agree but the stored tree gives no valid proof.
	p = cp.CheckExtends(cp.Root, 9, root9, proof(4))
	if p == nil || p.Kind != audit.CheckpointInconsistent || !errors.Is(p, ledger.ErrProofInvalid) {
		t.Fatalf("a wrong consistency proof: %v", p)
	}
	p = cp.CheckExtends(cp.Root, 9, root9, func() ([]ledger.Hash, error) { return nil, errors.New("node missing") })
	if p == nil || p.Kind != audit.CheckpointInconsistent || !strings.Contains(p.Error(), "node missing") {
		t.Fatalf("no consistency proof: %v", p)
	}
}

func TestProblemOfIntegrityError(t *testing.T) {
	ie := &ledger.IntegrityError{Seq: 4, Problem: ledger.ProblemLink, Want: ledger.EmptyRoot, Detail: "d"}
	p := audit.AsProblem(ie)
	if p == nil || p.Kind != audit.LinkBroken || p.Seq != 4 || *p.Want != ledger.EmptyRoot || *p.Got != (ledger.Hash{}) {
		t.Fatalf("AsProblem(%v) = %+v", ie, p)
	}
	if want := "seq 4: link broken: d"; p.Error() != want {
		t.Errorf("%q, want %q", p.Error(), want)
	}
	var got *ledger.IntegrityError
	if !errors.As(p, &got) || got != ie {
		t.Error("the ledger's error is not the problem's cause")
	}
	same := &ledger.IntegrityError{Seq: 2, Problem: ledger.ProblemGap}
	if p := audit.FromIntegrity(same); p.Want != nil || p.Got != nil || p.Error() != "seq 2: missing event" {
		t.Errorf("no hashes: %+v %q", p, p.Error())
	}
	if audit.AsProblem(errors.New("i/o")) != nil {
		t.Error("an I/O error taken for a problem")
	}
	wrapped := &audit.Problem{Kind: audit.ProjectionDiffers, Seq: 3}
	if audit.AsProblem(errors.Join(errors.New("x"), wrapped)) != wrapped {
		t.Error("a wrapped problem not found")
	}
}

// Every kind is in the log or not, and the words of the ledger's kinds are
// the ledger's own.
func TestKinds(t *testing.T) {
	for k, inLog := range map[audit.Kind]bool{
		audit.EventMalformed: true, audit.SeqMismatch: true, audit.EventMissing: true, audit.ContentChanged: true,
		audit.LinkBroken: true, audit.NodeWrong: true, audit.HeadMismatch: true, audit.LogTruncated: true,
		audit.CheckpointMismatch: true, audit.CheckpointInconsistent: true, audit.ProjectionDiffers: true,
		audit.ProjectionFoldFailed: true,
		audit.CheckpointSignature:  false, audit.CheckpointMalformed: false, audit.ProofMalformed: false, audit.ProofInvalid: false,
	} {
		if k.InLog() != inLog {
			t.Errorf("%q.InLog() = %v", k, !inLog)
		}
	}
	if audit.ContentChanged != "content changed" || audit.NodeWrong != "merkle node wrong" {
		t.Error("the chain kinds are not the ledger's words")
	}
	p := &audit.Problem{Kind: audit.ProofInvalid}
	if p.Error() != "invalid proof" {
		t.Errorf("a problem with no detail: %q", p.Error())
	}
}

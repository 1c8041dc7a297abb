package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
)

// Proof is a proof file: what `logbook prove` writes and `logbook
// check-proof` reads, an RFC 9162 proof with the statement it proves.
// Hashes are lower-case hex, the event is its stored bytes (base64 in
// JSON). The file is canonical: exactly Encode's output, so any edit that
// is not a valid proof fails DecodeProof.
type Proof struct {
	Type string `json:"type"` // ProofInclusion or ProofConsistency

	// inclusion: the event seq (leaf index seq-1) in the tree of tree_size
	// leaves with root root.
	Seq       uint64 `json:"seq,omitempty"`
	LeafIndex uint64 `json:"leaf_index,omitempty"`
	LeafHash  string `json:"leaf_hash,omitempty"`
	Event     []byte `json:"event,omitempty"`

	// consistency: the tree of old_size leaves with root old_root is a prefix
	// of the tree of tree_size leaves with root root.
	OldSize uint64 `json:"old_size,omitempty"`
	OldRoot string `json:"old_root,omitempty"`

	TreeSize uint64   `json:"tree_size"`
	Root     string   `json:"root"`
	Path     []string `json:"path"` // RFC 9162 audit path or consistency proof, in order
}

// The two proof types.
const (
	ProofInclusion   = "inclusion"
	ProofConsistency = "consistency"
)

// NewInclusionProof is the proof that event seq, whose stored bytes are
// event, is in the tree of size events with root root; path is its RFC 9162
// §2.1.3 audit path. It does not check the path: Check does.
func NewInclusionProof(seq uint64, event []byte, size uint64, root ledger.Hash, path []ledger.Hash) *Proof {
	return &Proof{Type: ProofInclusion, Seq: seq, LeafIndex: seq - 1, LeafHash: ledger.LeafHash(event).String(),
		Event: bytes.Clone(event), TreeSize: size, Root: root.String(), Path: hexHashes(path)}
}

// NewConsistencyProof is the proof that the tree of oldSize events with root
// oldRoot is a prefix of the tree of size events with root root; path is
// the RFC 9162 §2.1.4 consistency proof. It does not check the path.
func NewConsistencyProof(oldSize uint64, oldRoot ledger.Hash, size uint64, root ledger.Hash, path []ledger.Hash) *Proof {
	return &Proof{Type: ProofConsistency, OldSize: oldSize, OldRoot: oldRoot.String(),
		TreeSize: size, Root: root.String(), Path: hexHashes(path)}
}

// Encode is the proof file: indented JSON and a newline.
func (p *Proof) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	return append(b, '\n'), err
}

// DecodeProof parses a proof file strictly: known fields only, hashes in
// lower-case hex, fields consistent with the type, and the canonical
// encoding byte for byte. Every failure is a *Problem of kind
// ProofMalformed.
func DecodeProof(raw []byte) (*Proof, error) {
	var p Proof
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, malformed("%v", err)
	}
	if canon, err := p.Encode(); err != nil || !bytes.Equal(canon, raw) {
		return nil, malformed("not the canonical encoding logbook prove writes (was it edited?)")
	}
	hashes := append([]string{p.Root}, p.Path...)
	switch p.Type {
	case ProofInclusion:
		if p.Seq == 0 || p.LeafIndex != p.Seq-1 || p.OldSize != 0 || p.OldRoot != "" || len(p.Event) == 0 {
			return nil, malformed("an inclusion proof needs seq >= 1, leaf_index = seq-1 and the event, and no old_size/old_root")
		}
		hashes = append(hashes, p.LeafHash)
	case ProofConsistency:
		if p.OldSize == 0 || p.Seq != 0 || p.LeafIndex != 0 || p.LeafHash != "" || p.Event != nil {
			return nil, malformed("a consistency proof needs old_size >= 1, and no seq/leaf/event")
		}
		hashes = append(hashes, p.OldRoot)
	default:
		return nil, malformed("unknown type %q", p.Type)
	}
	for _, h := range hashes {
		if v, err := ledger.ParseHash(h); err != nil || v.String() != h {
			return nil, malformed("%q is not a lower-case hex SHA-256", h)
		}
	}
	return &p, nil
}

func malformed(format string, args ...any) *Problem {
	return &Problem{Kind: ProofMalformed, Detail: "malformed proof: " + fmt.Sprintf(format, args...)}
}

func invalid(err error) *Problem { return &Problem{Kind: ProofInvalid, Detail: err.Error(), Err: err} }

// Trusted is what a proof is checked against: values the auditor obtained
// from somewhere else than the proof (a published checkpoint, a root read
// over another channel). A field whose Known flag is false is not checked.
// RFC 9162 proofs bind a tree size only through the tree's shape, so a
// caller who knows the size should give it.
type Trusted struct {
	Root      ledger.Hash // the root of the tree the proof is for (the new tree, for consistency)
	Size      uint64
	SizeKnown bool

	// Consistency proofs only.
	OldRoot      ledger.Hash
	OldRootKnown bool
	OldSize      uint64
	OldSizeKnown bool
}

// ErrOldForInclusion is returned by Check when an old root or size is
// trusted for an inclusion proof: a mistake of the caller, not of the proof.
var ErrOldForInclusion = errors.New("an old root or size is for consistency proofs")

// Check verifies p, decoded by DecodeProof, against t by RFC 9162 §2.1.3.2
// or §2.1.4.2, and returns what it proved in words. For an inclusion proof
// it also checks that the event's bytes hash to the leaf and decode to an
// event of the proof's seq, so the caller learns what was included. A proof
// that does not hold is a *Problem of kind ProofInvalid.
func (p *Proof) Check(t Trusted) (statement string, err error) {
	if t.SizeKnown && p.TreeSize != t.Size {
		return "", invalid(fmt.Errorf("the proof is for a tree of %d events, the trusted root is of %d", p.TreeSize, t.Size))
	}
	if p.Root != t.Root.String() {
		return "", invalid(fmt.Errorf("the proof is for root %s, not the trusted root %s", p.Root, t.Root))
	}
	path, err := parseHashes(p.Path)
	if err != nil {
		return "", err
	}
	switch p.Type {
	case ProofInclusion:
		if t.OldRootKnown || t.OldSizeKnown {
			return "", ErrOldForInclusion
		}
		leaf, err := parseHash(p.LeafHash)
		if err != nil {
			return "", err
		}
		if err := p.checkEvent(leaf); err != nil {
			return "", invalid(err)
		}
		if err := ledger.VerifyInclusion(leaf, p.LeafIndex, p.TreeSize, path, t.Root); err != nil {
			return "", invalid(err)
		}
		return fmt.Sprintf("event seq %d (hash %s) is in the log of %d events with root %s", p.Seq, p.LeafHash, p.TreeSize, p.Root), nil
	case ProofConsistency:
		oldRoot, err := parseHash(p.OldRoot)
		if err != nil {
			return "", err
		}
		if t.OldRootKnown && oldRoot != t.OldRoot {
			return "", invalid(fmt.Errorf("the proof starts from root %s, not the trusted old root %s", oldRoot, t.OldRoot))
		}
		if t.OldSizeKnown && p.OldSize != t.OldSize {
			return "", invalid(fmt.Errorf("the proof starts from a tree of %d events, the trusted old size is %d", p.OldSize, t.OldSize))
		}
		if err := ledger.VerifyConsistency(p.OldSize, p.TreeSize, oldRoot, t.Root, path); err != nil {
			return "", invalid(err)
		}
		from := "as stated by the proof"
		if t.OldRootKnown {
			from = "trusted"
		}
		return fmt.Sprintf("the log of %d events with root %s (%s) is a prefix of the log of %d events with root %s", p.OldSize, p.OldRoot, from, p.TreeSize, p.Root), nil
	}
	return "", malformed("unknown type %q", p.Type)
}

// checkEvent checks that the proof's event bytes are the leaf and the
// event at the proof's seq.
func (p *Proof) checkEvent(leaf ledger.Hash) error {
	if got := ledger.LeafHash(p.Event); got != leaf {
		return fmt.Errorf("the event's bytes hash to %s, not the proof's leaf %s", got, leaf)
	}
	ev, err := ledger.DecodeEvent(p.Event)
	if err != nil {
		return fmt.Errorf("the proof's event: %w", err)
	}
	if ev.Seq != p.Seq {
		return fmt.Errorf("the proof's event is seq %d, not %d", ev.Seq, p.Seq)
	}
	return nil
}

// parseHash reads a hash of a proof; a bad one is a malformed proof (a Proof
// built by hand rather than by DecodeProof can hold one).
func parseHash(s string) (ledger.Hash, error) {
	h, err := ledger.ParseHash(s)
	if err != nil || h.String() != s {
		return h, malformed("%q is not a lower-case hex SHA-256", s)
	}
	return h, nil
}

func parseHashes(hs []string) ([]ledger.Hash, error) {
	out := make([]ledger.Hash, len(hs))
	for i, s := range hs {
		h, err := parseHash(s)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

func hexHashes(hs []ledger.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

// MaxProofBytes bounds a proof file (ReadFile): its event is at most a
// request's size (4 MiB by default, more if the server was told so), as
// base64, and 64 hashes.
const MaxProofBytes = 64 << 20

// ProofCheck is the outcome of checking a proof file, as logbook
// check-proof --json prints it.
type ProofCheck struct {
	OK        bool   `json:"ok"`
	Type      string `json:"type,omitempty"`
	Statement string `json:"statement,omitempty"` // what the proof proved
	SizeBound bool   `json:"size_bound"`          // the tree size came from a trusted source, not the proof
	Error     string `json:"error,omitempty"`
	Problem   Kind   `json:"problem,omitempty"` // the error's kind: malformed proof, invalid proof, or the checkpoint's
}

// CheckProof decodes the proof file raw (DecodeProof) and checks it against
// t (Proof.Check); the error is theirs, and is also in the outcome.
func CheckProof(raw []byte, t Trusted) (ProofCheck, error) {
	res := ProofCheck{SizeBound: t.SizeKnown}
	p, err := DecodeProof(raw)
	if err == nil {
		res.Type = p.Type
		res.Statement, err = p.Check(t)
	}
	if res.OK = err == nil; err != nil {
		res.Error = err.Error()
		if p := AsProblem(err); p != nil {
			res.Problem = p.Kind
		}
	}
	return res, err
}

package audit_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
)

// newMemLog is a log of n events in memory.
func newMemLog(n int) *memLog {
	l := &memLog{nodes: map[[2]uint64]ledger.Hash{}}
	for range n {
		l.append("tool.called")
	}
	return l
}

func (l *memLog) root(t testing.TB, size uint64) ledger.Hash {
	t.Helper()
	r, err := ledger.Root(size, l.node)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (l *memLog) inclusion(t testing.TB, seq, size uint64) *audit.Proof {
	t.Helper()
	path, err := ledger.InclusionProof(seq-1, size, l.node)
	if err != nil {
		t.Fatal(err)
	}
	return audit.NewInclusionProof(seq, l.events[seq-1], size, l.root(t, size), path)
}

func (l *memLog) consistency(t testing.TB, old, size uint64) *audit.Proof {
	t.Helper()
	path, err := ledger.ConsistencyProof(old, size, l.node)
	if err != nil {
		t.Fatal(err)
	}
	return audit.NewConsistencyProof(old, l.root(t, old), size, l.root(t, size), path)
}

func encode(t testing.TB, p *audit.Proof) []byte {
	t.Helper()
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantKind fails unless err is a *audit.Problem of kind want.
func wantKind(t testing.TB, err error, want audit.Kind, what string) *audit.Problem {
	t.Helper()
	var p *audit.Problem
	if !errors.As(err, &p) {
		t.Fatalf("%s: %v (%T), want a *audit.Problem of kind %q", what, err, err, want)
	}
	if p.Kind != want {
		t.Fatalf("%s: kind %q (%v), want %q", what, p.Kind, p, want)
	}
	return p
}

func TestProofRoundTrip(t *testing.T) {
	l := newMemLog(7)
	for _, p := range []*audit.Proof{l.inclusion(t, 3, 7), l.inclusion(t, 7, 7), l.consistency(t, 3, 7), l.consistency(t, 7, 7)} {
		raw := encode(t, p)
		got, err := audit.DecodeProof(raw)
		if err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		if !bytes.Equal(encode(t, got), raw) {
			t.Errorf("re-encoded proof differs: %s", raw)
		}
		if _, err := got.Check(audit.Trusted{Root: l.root(t, 7), Size: 7, SizeKnown: true}); err != nil {
			t.Errorf("%s proof: %v", got.Type, err)
		}
	}
}

func TestDecodeProofMalformed(t *testing.T) {
	l := newMemLog(5)
	good := encode(t, l.inclusion(t, 2, 5))
	cons := encode(t, l.consistency(t, 2, 5))
	edit := func(raw []byte, old, new string) []byte {
		if !bytes.Contains(raw, []byte(old)) {
			t.Fatalf("no %q in %s", old, raw)
		}
		return bytes.Replace(raw, []byte(old), []byte(new), 1)
	}
	p := l.inclusion(t, 2, 5)
	p.Type = "exclusion"
	noEvent := l.inclusion(t, 2, 5)
	noEvent.Event = nil
	upper := l.inclusion(t, 2, 5)
	upper.Path[0] = strings.ToUpper(upper.Path[0])
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"not JSON", []byte("{"), "malformed proof: "},
		{"unknown field", edit(good, `"type"`, `"kind": 1, "type"`), "malformed proof: "},
		{"not canonical", append(bytes.Clone(good), '\n'), "not the canonical encoding"},
		{"unknown type", encode(t, p), `unknown type "exclusion"`},
		{"inclusion without its event", encode(t, noEvent), "an inclusion proof needs"},
		{"consistency with a seq", edit(cons, `"type": "consistency",`, `"type": "consistency",`+"\n  \"seq\": 2,"), "a consistency proof needs"},
		{"upper-case hash", encode(t, upper), "is not a lower-case hex SHA-256"},
	} {
		_, err := audit.DecodeProof(c.raw)
		p := wantKind(t, err, audit.ProofMalformed, c.name)
		if !strings.HasPrefix(p.Error(), "malformed proof: ") || !strings.Contains(p.Error(), c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, p.Error(), c.want)
		}
	}
}

func TestProofCheckInvalid(t *testing.T) {
	l := newMemLog(6)
	root6 := l.root(t, 6)
	trusted := audit.Trusted{Root: root6, Size: 6, SizeKnown: true}
	flipped := l.inclusion(t, 4, 6)
	h, _ := ledger.ParseHash(flipped.Path[0])
	h[0] ^= 1
	flipped.Path[0] = h.String()
	otherEvent := l.inclusion(t, 4, 6)
	otherEvent.Event = l.events[4] // the bytes of seq 5, so not the leaf
	wrongSeq := l.inclusion(t, 4, 6)
	wrongSeq.Seq, wrongSeq.LeafIndex = 5, 4 // the event claims 4
	for _, c := range []struct {
		name    string
		proof   *audit.Proof
		trusted audit.Trusted
		want    string
	}{
		{"another size", l.inclusion(t, 4, 6), audit.Trusted{Root: root6, Size: 7, SizeKnown: true}, "the trusted root is of 7"},
		{"another root", l.inclusion(t, 4, 5), audit.Trusted{Root: root6}, "not the trusted root"},
		{"a path hash flipped", flipped, trusted, "invalid Merkle proof"},
		{"the event is not the leaf", otherEvent, trusted, "not the proof's leaf"},
		{"the event is of another seq", wrongSeq, trusted, "the proof's event is seq 4, not 5"},
		{"another old root", l.consistency(t, 3, 6), audit.Trusted{Root: root6, OldRoot: l.root(t, 2), OldRootKnown: true}, "not the trusted old root"},
		{"another old size", l.consistency(t, 3, 6), audit.Trusted{Root: root6, OldSize: 2, OldSizeKnown: true}, "the trusted old size is 2"},
	} {
		raw := encode(t, c.proof)
		p, err := audit.DecodeProof(raw)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = p.Check(c.trusted)
		pr := wantKind(t, err, audit.ProofInvalid, c.name)
		if !strings.Contains(pr.Error(), c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, pr.Error(), c.want)
		}
	}
	// A path that does not verify keeps ledger's sentinel as its cause.
	p, _ := audit.DecodeProof(encode(t, flipped))
	if _, err := p.Check(trusted); !errors.Is(err, ledger.ErrProofInvalid) {
		t.Errorf("flipped path: %v does not wrap ledger.ErrProofInvalid", err)
	}
}

func TestProofCheckOldForInclusion(t *testing.T) {
	l := newMemLog(4)
	_, err := l.inclusion(t, 1, 4).Check(audit.Trusted{Root: l.root(t, 4), OldSize: 1, OldSizeKnown: true})
	if !errors.Is(err, audit.ErrOldForInclusion) {
		t.Errorf("old size for an inclusion proof: %v", err)
	}
	var p *audit.Problem
	if errors.As(err, &p) {
		t.Errorf("a caller's mistake reported as a problem of the proof: %v", p)
	}
}

func TestProofStatements(t *testing.T) {
	l := newMemLog(5)
	root := l.root(t, 5)
	got, err := l.consistency(t, 2, 5).Check(audit.Trusted{Root: root, OldRoot: l.root(t, 2), OldRootKnown: true})
	if err != nil || !strings.Contains(got, "(trusted) is a prefix of the log of 5 events") {
		t.Errorf("consistency: %q, %v", got, err)
	}
	got, err = l.consistency(t, 2, 5).Check(audit.Trusted{Root: root})
	if err != nil || !strings.Contains(got, "(as stated by the proof)") {
		t.Errorf("consistency, old root untrusted: %q, %v", got, err)
	}
	got, err = l.inclusion(t, 5, 5).Check(audit.Trusted{Root: root})
	if want := "event seq 5 (hash " + ledger.LeafHash(l.events[4]).String() + ") is in the log of 5 events"; err != nil || !strings.HasPrefix(got, want) {
		t.Errorf("inclusion: %q, %v; want %q", got, err, want)
	}
}

// TestCheckProof: the outcome says what was proven, or why not, and
// whether the size was bound by a trusted source.
func TestCheckProof(t *testing.T) {
	l := newMemLog(7)
	raw := encode(t, l.inclusion(t, 3, 7))
	res, err := audit.CheckProof(raw, audit.Trusted{Root: l.root(t, 7), Size: 7, SizeKnown: true})
	if err != nil || !res.OK || res.Type != audit.ProofInclusion || !res.SizeBound || res.Statement == "" || res.Error != "" {
		t.Errorf("good proof: %+v, %v", res, err)
	}
	res, err = audit.CheckProof(raw, audit.Trusted{Root: l.root(t, 6)})
	if err == nil || res.OK || res.Type != audit.ProofInclusion || res.SizeBound || res.Error != err.Error() {
		t.Errorf("proof against another root: %+v, %v", res, err)
	}
	res, err = audit.CheckProof([]byte("{}"), audit.Trusted{Root: l.root(t, 7)})
	var p *audit.Problem
	if !errors.As(err, &p) || res.OK || res.Type != "" || res.Error == "" {
		t.Errorf("malformed proof: %+v, %v", res, err)
	}
}

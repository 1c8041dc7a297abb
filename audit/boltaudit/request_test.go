package boltaudit_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// view runs fn in a read transaction of the ledger at path.
func view(t *testing.T, path string, fn func(tx *boltstore.Tx)) {
	t.Helper()
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.View(func(tx *boltstore.Tx) error { fn(tx); return nil }); err != nil {
		t.Fatal(err)
	}
}

// wantOption fails unless err is an *audit.OptionError about option.
func wantOption(t *testing.T, what string, err error, option string) {
	t.Helper()
	var oe *audit.OptionError
	if !errors.As(err, &oe) || oe.Option != option {
		t.Errorf("%s: got %v, want an *audit.OptionError about %s", what, err, option)
	}
}

// TestRoot: the root of the whole ledger, of a prefix, and of a range
// starting at 1 (the prefix's tree) are the tree's; a range elsewhere has
// its own leaf count.
func TestRoot(t *testing.T) {
	path := newLedger(t)
	view(t, path, func(tx *boltstore.Tx) {
		for _, c := range []struct {
			o    boltaudit.RootOptions
			want boltaudit.TreeRoot
		}{
			{boltaudit.RootOptions{}, boltaudit.TreeRoot{Size: tasks, LeafCount: tasks, Root: root(t, path, tasks)}},
			{boltaudit.RootOptions{Size: 3, SizeKnown: true}, boltaudit.TreeRoot{Size: 3, LeafCount: 3, Root: root(t, path, 3)}},
			{boltaudit.RootOptions{Range: true, From: 1, To: 4}, boltaudit.TreeRoot{From: 1, To: 4, LeafCount: 4, Root: root(t, path, 4)}},
		} {
			got, err := boltaudit.Root(tx, c.o)
			if err != nil || got != c.want {
				t.Errorf("Root(%+v) = %+v, %v; want %+v", c.o, got, err, c.want)
			}
		}
		r, err := boltaudit.Root(tx, boltaudit.RootOptions{Range: true, From: 2, To: 5})
		if err != nil || r.LeafCount != 4 || r.Root == root(t, path, 4) || r.Size != 0 {
			t.Errorf("range 2..5: %+v, %v", r, err)
		}
	})
}

// TestRootRefuses: options that exclude each other, an empty or backwards
// range, a size of 0 and anything beyond the head are *audit.OptionError.
func TestRootRefuses(t *testing.T) {
	path := newLedger(t)
	view(t, path, func(tx *boltstore.Tx) {
		for _, c := range []struct {
			o      boltaudit.RootOptions
			option string
		}{
			{boltaudit.RootOptions{Size: 2, SizeKnown: true, Range: true, From: 1, To: 2}, "size"},
			{boltaudit.RootOptions{Range: true, From: 0, To: 2}, "from"},
			{boltaudit.RootOptions{Range: true, From: 3}, "to"},
			{boltaudit.RootOptions{Range: true, From: 1, To: tasks + 1}, "to"},
			{boltaudit.RootOptions{SizeKnown: true}, "size"},
			{boltaudit.RootOptions{Size: tasks + 1, SizeKnown: true}, "size"},
		} {
			_, err := boltaudit.Root(tx, c.o)
			wantOption(t, "Root", err, c.option)
		}
	})
}

// TestProveRefuses: what a proof request cannot ask is an
// *audit.OptionError naming the option, never a proof.
func TestProveRefuses(t *testing.T) {
	path := newLedger(t)
	const incl, cons = audit.ProofInclusion, audit.ProofConsistency
	view(t, path, func(tx *boltstore.Tx) {
		for _, c := range []struct {
			req    boltaudit.ProofRequest
			option string
		}{
			{boltaudit.ProofRequest{Kind: "membership", Seq: 1}, "kind"},
			{boltaudit.ProofRequest{Kind: incl}, "seq"},
			{boltaudit.ProofRequest{Kind: incl, Seq: 1, Old: 1}, "old"},
			{boltaudit.ProofRequest{Kind: incl, Seq: tasks + 1}, "seq"},
			{boltaudit.ProofRequest{Kind: incl, Seq: 3, Size: 2, SizeKnown: true}, "seq"},
			{boltaudit.ProofRequest{Kind: incl, Seq: 1, Size: tasks + 1, SizeKnown: true}, "size"},
			{boltaudit.ProofRequest{Kind: cons}, "old"},
			{boltaudit.ProofRequest{Kind: cons, Old: 2, Seq: 1}, "seq"},
			{boltaudit.ProofRequest{Kind: cons, Old: 5, Size: 4, SizeKnown: true}, "old"},
		} {
			p, err := boltaudit.Prove(tx, c.req)
			wantOption(t, "Prove", err, c.option)
			if p != nil {
				t.Errorf("Prove(%+v) returned a proof", c.req)
			}
		}
		// The head when no size is given.
		p, err := boltaudit.Prove(tx, boltaudit.ProofRequest{Kind: incl, Seq: 2})
		if err != nil || p.TreeSize != tasks {
			t.Errorf("inclusion at the head: %+v, %v", p, err)
		}
		// An event whose proof check-proof would not read (past
		// audit.MaxProofBytes; lowered here) is not proved.
		defer boltaudit.SetMaxProofEvent(len(p.Event)*4/3 - 1)()
		if p, err := boltaudit.Prove(tx, boltaudit.ProofRequest{Kind: incl, Seq: 2}); p != nil || err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("inclusion of an event past the proof's limit: %+v, %v", p, err)
		}
	})
}

// TestReplayRefuses: invalid options, and a last seq beyond the head when
// not following, are *audit.OptionError before anything is written.
func TestReplayRefuses(t *testing.T) {
	path := newLedger(t)
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		o      boltaudit.ReplayOptions
		option string
	}{
		{boltaudit.ReplayOptions{Chunk: 1, Interval: time.Second}, "from"},
		{boltaudit.ReplayOptions{From: 5, To: 2, Chunk: 1, Interval: time.Second}, "to"},
		{boltaudit.ReplayOptions{From: 1, Chunk: 1}, "interval"},
		{boltaudit.ReplayOptions{From: 1, Chunk: 1, Interval: -time.Second}, "interval"},
		{boltaudit.ReplayOptions{From: 1, Interval: time.Second}, "chunk"},
		{boltaudit.ReplayOptions{From: 1, To: tasks + 1, Chunk: 1, Interval: time.Second}, "to"},
	} {
		var out bytes.Buffer
		err := boltaudit.Replay(context.Background(), l, &out, c.o)
		wantOption(t, "Replay", err, c.option)
		if out.Len() != 0 {
			t.Errorf("Replay(%+v) wrote %q", c.o, out.String())
		}
	}
}

package boltaudit_test

import (
	"errors"
	"testing"

	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// replay reads path from seq from to the head, two events a transaction.
func replay(t *testing.T, path string, from uint64) ([]uint64, error) {
	t.Helper()
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var seqs []uint64
	rp := boltaudit.NewReplayer(l, from, 2)
	for rp.Next() <= tasks {
		if err := rp.ReadChunk(tasks, func(r ledger.Record) error { seqs = append(seqs, r.Seq); return nil }); err != nil {
			return seqs, err
		}
	}
	return seqs, nil
}

func TestReplay(t *testing.T) {
	path := newLedger(t)
	seqs, err := replay(t, path, 3)
	if err != nil || len(seqs) != tasks-2 || seqs[0] != 3 || seqs[len(seqs)-1] != tasks {
		t.Fatalf("replay from 3: %v, %v", seqs, err)
	}
	// Event 4's bytes edited: event 5 no longer links to it, and the link
	// into the first event read is checked too.
	editTitle(t, path, 4)
	for _, from := range []uint64{1, 5} {
		seqs, err := replay(t, path, from)
		var ie *ledger.IntegrityError
		if !errors.As(err, &ie) || ie.Problem != ledger.ProblemLink || ie.Seq != 5 {
			t.Errorf("replay from %d: %v, want a broken link at seq 5", from, err)
		}
		if len(seqs) > 0 && seqs[len(seqs)-1] >= 5 {
			t.Errorf("replay from %d handed on %v, past the broken link", from, seqs)
		}
	}
}

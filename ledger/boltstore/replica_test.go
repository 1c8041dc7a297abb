package boltstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// memLog is a replicated log in memory, shared by several stores as the
// nodes of a replicated engine share a stream: compare-and-append under a
// lock, read by position.
type memLog struct {
	mu     sync.Mutex
	events [][]byte
}

func (m *memLog) CatchUp(tx *Tx) error {
	m.mu.Lock()
	pending := m.events[tx.Head().Seq:]
	m.mu.Unlock()
	for _, raw := range pending {
		if _, err := tx.Ingest(raw); err != nil {
			return err
		}
	}
	return nil
}

func (m *memLog) Append(head ledger.Head, events [][]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if uint64(len(m.events)) != head.Seq {
		return ErrHeadMoved
	}
	for _, raw := range events {
		m.events = append(m.events, append([]byte(nil), raw...))
	}
	return nil
}

// TestReplicaNodesShareOneChain: three stores, each a node with its own
// file, append concurrently through one replicated log: every append lands
// exactly once, in one unbroken chain, and every node's copy ends identical
// and verifies.
func TestReplicaNodesShareOneChain(t *testing.T) {
	log := &memLog{}
	dir := t.TempDir()
	var nodes []*Store
	for i := range 3 {
		l, err := Open(filepath.Join(dir, fmt.Sprintf("node%d.db", i)), Options{Create: true, Replica: log})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		nodes = append(nodes, l)
	}
	const perNode = 60
	var wg sync.WaitGroup
	for n, l := range nodes {
		for g := range 3 {
			wg.Go(func() {
				for i := range perNode / 3 {
					err := l.Update(func(tx *Tx) error {
						_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: fmt.Sprintf("node%d", n), Subjects: []string{fmt.Sprintf("%d-%d-%d", n, g, i)}, Payload: []byte{0x80}})
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if len(log.events) != 3*perNode {
		t.Fatalf("the log holds %d events, want %d", len(log.events), 3*perNode)
	}
	subjects := map[string]bool{}
	for _, raw := range log.events {
		e, err := ledger.DecodeEvent(raw)
		if err != nil {
			t.Fatal(err)
		}
		if subjects[e.Subjects[0]] {
			t.Errorf("%s appended twice", e.Subjects[0])
		}
		subjects[e.Subjects[0]] = true
	}
	var roots []ledger.Hash
	for i, l := range nodes {
		if err := l.Update(func(*Tx) error { return nil }); err != nil { // catch up
			t.Fatal(err)
		}
		rep, err := l.Verify(context.Background(), VerifyOptions{})
		if err != nil || rep.Size != 3*perNode {
			t.Fatalf("node %d: verify %d events, %v", i, rep.Size, err)
		}
		roots = append(roots, rep.Root)
	}
	if roots[0] != roots[1] || roots[1] != roots[2] {
		t.Errorf("the nodes' roots differ: %v", roots)
	}
}

// TestReplicaCorruptionIsNeverIngested: an event rewritten in the
// replicated log, or one missing from it, is reported by the node that
// ingests it as an integrity error naming the seq, and nothing of it is
// stored.
func TestReplicaCorruptionIsNeverIngested(t *testing.T) {
	for _, damage := range []string{"rewritten", "dropped", "garbage"} {
		t.Run(damage, func(t *testing.T) {
			log := &memLog{}
			dir := t.TempDir()
			writer, err := Open(filepath.Join(dir, "writer.db"), Options{Create: true, Replica: log})
			if err != nil {
				t.Fatal(err)
			}
			defer writer.Close()
			appendN(t, writer, 5)
			switch damage {
			case "rewritten":
				e, _ := ledger.DecodeEvent(log.events[2])
				e.Actor = "mallory"
				log.events[2], _ = e.Encode()
			case "dropped":
				log.events = append(log.events[:2], log.events[3:]...)
			case "garbage":
				log.events[2] = []byte("not an event")
			}
			reader, err := Open(filepath.Join(dir, "reader.db"), Options{Create: true, Replica: log})
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			err = reader.Update(func(*Tx) error { return nil })
			var ie *ledger.IntegrityError
			if !errors.As(err, &ie) {
				t.Fatalf("ingesting a %s event: %v, want an integrity error", damage, err)
			}
			if want := uint64(3); ie.Seq != want && !(damage == "rewritten" && ie.Seq == 4) {
				t.Errorf("integrity error at seq %d (%v), want %d", ie.Seq, ie, want)
			}
			reader.View(func(tx *Tx) error {
				if tx.Head().Seq != 0 {
					t.Errorf("the failed catch-up left %d events stored", tx.Head().Seq)
				}
				return nil
			})
		})
	}
}

// TestNoSyncOnlyForAReplica: skipping the fsync is refused for a ledger
// file that is its own log, and accepted for a copy of a replicated log,
// which then commits and reopens as usual.
func TestNoSyncOnlyForAReplica(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "alone.db"), Options{Create: true, NoSync: true}); err == nil {
		t.Fatal("NoSync without a replica was accepted")
	}
	log := &memLog{}
	path := filepath.Join(dir, "copy.db")
	l, err := Open(path, Options{Create: true, NoSync: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3)
	l.Close()
	l, err = Open(path, Options{NoSync: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep, err := l.Verify(context.Background(), VerifyOptions{}); err != nil || rep.Size != 3 {
		t.Errorf("reopened copy: %d events, %v", rep.Size, err)
	}
}

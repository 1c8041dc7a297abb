package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
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

// Name is the log's name, which a copy's marker keeps.
func (m *memLog) Name() string { return "mem" }

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
// file that is its own log, and for one not held, and accepted for a held
// copy of a replicated log, which then commits and reopens as usual; a
// clean Close leaves no marker.
func TestNoSyncOnlyForAReplica(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "alone.db"), Options{Create: true, Hold: true, NoSync: true}); err == nil {
		t.Fatal("NoSync without a replica was accepted")
	}
	log := &memLog{}
	if _, err := Open(filepath.Join(dir, "unheld.db"), Options{Create: true, NoSync: true, Replica: log}); err == nil {
		t.Fatal("NoSync without Hold was accepted")
	}
	path := filepath.Join(dir, "copy.db")
	l, err := Open(path, Options{Create: true, Hold: true, NoSync: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(unsyncedMarker(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("marker after a clean Close: %v", err)
	}
	l, err = Open(path, Options{Hold: true, NoSync: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep, err := l.Verify(context.Background(), VerifyOptions{}); err != nil || rep.Size != 3 {
		t.Errorf("reopened copy: %d events, %v", rep.Size, err)
	}
}

// setBoot makes the current boot's id id for the test.
func setBoot(t *testing.T, id string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "boot_id")
	if err := os.WriteFile(f, []byte(id+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := bootIDFile
	bootIDFile = f
	t.Cleanup(func() { bootIDFile = old })
}

// crashImage copies the file at path and its marker, as they stand with
// the Store still open, to dir: what a process killed now leaves, or — in
// another boot — what a stopped machine may have left.
func crashImage(t *testing.T, path, dir string) string {
	t.Helper()
	img := filepath.Join(dir, filepath.Base(path))
	for _, p := range []string{path, unsyncedMarker(path)} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// TestNoSyncCopyAfterAMachineRestartIsDamaged: a copy left with unsynced
// commits (a process killed) opens in the same boot, with every commit,
// and its marker is cleared once synced; in another boot (the machine
// stopped) every Open refuses it with ErrDamaged, however whole it looks,
// and deleting it lets the node ingest the log anew, losing nothing.
func TestNoSyncCopyAfterAMachineRestartIsDamaged(t *testing.T) {
	setBoot(t, "boot-1")
	log := &memLog{}
	path := filepath.Join(t.TempDir(), "copy.db")
	l, err := Open(path, Options{Create: true, Hold: true, NoSync: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, 5)
	if b, err := os.ReadFile(unsyncedMarker(path)); err != nil || string(b) != "boot-1\n" {
		t.Fatalf("marker %q, %v", b, err)
	}

	// A killed process: same boot, the page cache holds every commit.
	killed := crashImage(t, path, t.TempDir())
	k, err := Open(killed, Options{Replica: log})
	if err != nil {
		t.Fatalf("open after a killed process: %v", err)
	}
	if rep, err := k.Verify(context.Background(), VerifyOptions{}); err != nil || rep.Size != 5 {
		t.Errorf("after a killed process: %d events, %v", rep.Size, err)
	}
	k.Close()
	if _, err := os.Stat(unsyncedMarker(killed)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("marker left after a synced open: %v", err)
	}

	// A stopped machine: another boot.
	stopped := crashImage(t, path, t.TempDir())
	setBoot(t, "boot-2")
	for _, o := range []Options{{Replica: log}, {ReadOnly: true}, {Hold: true, NoSync: true, Replica: log}} {
		if _, err := Open(stopped, o); !errors.Is(err, ErrDamaged) {
			t.Errorf("open %+v after a machine restart: %v, want ErrDamaged", o, err)
		}
	}
	// The operator deletes it: the node ingests the log anew.
	if err := os.Remove(stopped); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(stopped, Options{Replica: log}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open the deleted copy without Create: %v, want ErrNotExist", err)
	}
	n, err := Open(stopped, Options{Create: true, Hold: true, NoSync: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Update(func(*Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if rep, err := n.Verify(context.Background(), VerifyOptions{}); err != nil || rep.Size != 5 {
		t.Errorf("ingested anew: %d events, %v", rep.Size, err)
	}
	if b, err := os.ReadFile(unsyncedMarker(stopped)); err != nil || string(b) != "boot-2\n" {
		t.Errorf("new file's marker %q, %v", b, err)
	}
}

// racedLog is a memLog where another node appends first at the next
// races Appends, and which counts what each catch-up ingests.
type racedLog struct {
	*memLog
	races    int
	race     func()
	ingested []int // per CatchUp call
}

func (r *racedLog) CatchUp(tx *Tx) error {
	before := tx.Head().Seq
	err := r.memLog.CatchUp(tx)
	r.ingested = append(r.ingested, int(tx.Head().Seq-before))
	return err
}

func (r *racedLog) Append(head ledger.Head, events [][]byte) error {
	if r.races > 0 {
		r.races--
		r.race()
	}
	return r.memLog.Append(head, events)
}

// TestCatchUpKeptOnConflict: a node far behind whose append loses the race
// keeps what its rolled-back transaction ingested (committed alone), so
// its next attempt ingests only what came in since, not all again.
func TestCatchUpKeptOnConflict(t *testing.T) {
	dir := t.TempDir()
	log := &memLog{}
	a, err := Open(filepath.Join(dir, "a.db"), Options{Create: true, Hold: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	appendN(t, a, 100)
	raced := &racedLog{memLog: log}
	b, err := Open(filepath.Join(dir, "b.db"), Options{Create: true, Hold: true, Replica: raced})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	raced.races, raced.race = 2, func() { appendN(t, a, 1) }
	appendN(t, b, 1)
	// The first conflict commits what the log holds (the rolled-back 100
	// and the event A raced with), so the next attempt ingests nothing,
	// and after its conflict only A's next event; rolled back, they would
	// ingest 101, then 102.
	if want := []int{100, 101, 0, 1}; fmt.Sprint(raced.ingested) != fmt.Sprint(want) {
		t.Errorf("ingested per catch-up %v, want %v", raced.ingested, want)
	}
	if rep, err := b.Verify(context.Background(), VerifyOptions{}); err != nil || rep.Size != 103 {
		t.Errorf("node b: %d events, %v", rep.Size, err)
	}
}

// TestScratchNeedsHold: a scratch file (commits not synced, for a
// verifier's refold) is refused unless held, and a held one commits, reads
// back and leaves no unsynced marker (it is never reopened: its owner
// deletes it).
func TestScratchNeedsHold(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "unheld.db"), Options{Create: true, Scratch: true}); err == nil {
		t.Fatal("a scratch file not held was accepted")
	}
	path := filepath.Join(dir, "scratch.db")
	l, err := Open(path, Options{Create: true, Hold: true, Scratch: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3)
	var head uint64
	l.View(func(tx *Tx) error { head = tx.Head().Seq; return nil })
	if err := l.Close(); err != nil || head != 3 {
		t.Fatalf("head %d, close: %v", head, err)
	}
	if _, err := os.Stat(unsyncedMarker(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a scratch file has a marker: %v", err)
	}
}

// brokenCopy is a replicated log whose appends land, after which this
// node's own file fails (its descriptor made a read-only one under bbolt,
// so its writes fail): the commit of the local copy fails once the events
// are durable in the log.
type brokenCopy struct {
	*memLog
	l      *Store
	break_ bool
}

func (b *brokenCopy) Append(head ledger.Head, events [][]byte) error {
	if err := b.memLog.Append(head, events); err != nil {
		return err
	}
	if b.break_ {
		b.break_ = false
		// The file open for this commit (we are inside it).
		ro, err := os.Open(b.l.path)
		if err != nil {
			return err
		}
		defer ro.Close()
		if err := syscall.Dup2(int(ro.Fd()), int(b.l.open.file.Fd())); err != nil {
			return err
		}
	}
	return nil
}

// TestReplicaAppendedIsAnsweredDone: a call whose events the replicated
// log took is answered done even if this node's copy then fails to
// commit — the log alone makes them durable, and a caller told otherwise
// appends them again — and the node's next commit ingests them, once.
func TestReplicaAppendedIsAnsweredDone(t *testing.T) {
	rl := &brokenCopy{memLog: &memLog{}}
	path := filepath.Join(t.TempDir(), "node.db")
	l, err := Open(path, Options{Create: true, Replica: rl})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rl.l = l
	appendOne := func(s string) error {
		return l.Update(func(tx *Tx) error {
			_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "a", Subjects: []string{s}, Payload: []byte{0x80}})
			return err
		})
	}
	if err := appendOne("first"); err != nil {
		t.Fatal(err)
	}
	rl.break_ = true
	if err := appendOne("second"); err != nil {
		t.Fatalf("an append the replicated log took: %v, want done", err)
	}
	if err := appendOne("third"); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := l.View(func(tx *Tx) error {
		return tx.Scan(1, tx.Head().Seq+1, func(r ledger.Record) error { got = append(got, r.Subjects[0]); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[first second third]" || len(rl.events) != 3 {
		t.Fatalf("the file holds %v, the log %d events; want [first second third] in both", got, len(rl.events))
	}
}

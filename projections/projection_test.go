package projections_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// foldLedger is a ledger whose events the test appends and folds itself.
type foldLedger struct {
	t *testing.T
	l *boltstore.Store
}

func newFoldLedger(t *testing.T) *foldLedger {
	t.Helper()
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "ledger.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.Update(projections.Reset); err != nil {
		t.Fatal(err)
	}
	return &foldLedger{t: t, l: l}
}

// add appends one event and, if fold, folds it in the same transaction.
func (f *foldLedger) add(fold bool, typ string, subjects []string, payload any) ledger.Record {
	f.t.Helper()
	var rec ledger.Record
	err := f.l.Update(func(tx *boltstore.Tx) error {
		var err error
		rec, err = appendEvent(tx, typ, events.CurrentVersion(typ), subjects, payload)
		if err != nil {
			return err
		}
		rec.Raw = nil
		if fold {
			return projections.Apply(tx, rec)
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return rec
}

func (f *foldLedger) fingerprint() uint64 {
	f.t.Helper()
	var fp uint64
	if err := f.l.View(func(tx *boltstore.Tx) (err error) { fp, err = projections.Fingerprint(tx); return }); err != nil {
		f.t.Fatal(err)
	}
	return fp
}

func (f *foldLedger) view(fn func(tx *boltstore.Tx) error) {
	f.t.Helper()
	if err := f.l.View(fn); err != nil {
		f.t.Fatal(err)
	}
}

func created(id, project, parent, title string) events.TaskCreated {
	return events.TaskCreated{TaskID: id, Project: project, ParentID: parent, Title: title, Priority: "normal", Assignee: "unassigned", Labels: []string{}}
}

func str(s string) *string { return &s }

// history appends a small history of every event type, folding each.
func (f *foldLedger) history() {
	f.add(true, events.TypeTaskCreated, []string{"T-0001"}, created("T-0001", "p", "", "root"))
	f.add(true, events.TypeTaskCreated, []string{"T-0002"}, created("T-0002", "p", "T-0001", "child"))
	f.add(true, events.TypeSessionStarted, []string{"A-0001", "T-0001"}, events.SessionStarted{SessionID: "A-0001", TaskID: "T-0001", AuditorID: "a", Scope: "deep"})
	f.add(true, events.TypeTaskUpdated, []string{"T-0002"}, events.TaskUpdated{TaskID: "T-0002", Status: str("todo"), PreviousStatus: str("backlog")})
	f.add(true, events.TypeThoughtRecorded, []string{"Θ-0001", "T-0002", "A-0001"}, events.ThoughtRecorded{ThoughtID: "Θ-0001", TaskID: "T-0002", Type: "plan", Content: "c", SessionID: "A-0001", ChainPosition: 1})
	f.add(true, projections.TypeToolCalled, []string{"T-0001"}, projections.ToolCalled{Tool: "task_get", Outcome: "OK"})
	f.add(true, "future.event", []string{"T-0001"}, map[string]any{"x": 1})
	f.add(true, events.TypeSessionFinalized, []string{"A-0001", "T-0001"}, events.SessionFinalized{SessionID: "A-0001", MerkleRoot: "00", LeafCount: 5})
	f.add(true, events.TypeTaskUpdated, []string{"T-0001"}, events.TaskUpdated{TaskID: "T-0001", Title: str("root, renamed")})
}

func TestIDs(t *testing.T) {
	for _, c := range []struct {
		prefix, id string
		n          uint64
		ok         bool
	}{
		{domain.TaskPrefix, "T-0001", 1, true},
		{domain.TaskPrefix, "T-9999", 9999, true},
		{domain.TaskPrefix, "T-12345", 12345, true},
		{domain.ThoughtPrefix, "Θ-0042", 42, true},
		{domain.SessionPrefix, "A-0007", 7, true},
		{domain.TaskPrefix, "T-0000", 0, false},
		{domain.TaskPrefix, "T-1", 0, false},
		{domain.TaskPrefix, "T-01234", 0, false},
		{domain.TaskPrefix, "T-+123", 0, false},
		{domain.TaskPrefix, "T--123", 0, false},
		{domain.TaskPrefix, "A-0001", 0, false},
		{domain.TaskPrefix, "t-0001", 0, false},
		{domain.TaskPrefix, "T-00a1", 0, false},
	} {
		n, ok := domain.ParseID(c.prefix, c.id)
		if n != c.n || ok != c.ok {
			t.Errorf("domain.ParseID(%q, %q) = %d, %v, want %d, %v", c.prefix, c.id, n, ok, c.n, c.ok)
		}
		if ok && domain.FormatID(c.prefix, n) != c.id {
			t.Errorf("domain.FormatID(%q, %d) = %q, want %q", c.prefix, n, domain.FormatID(c.prefix, n), c.id)
		}
	}
	if got := projections.FormatTime(time.Date(2026, 4, 8, 22, 15, 30, 123456789, time.FixedZone("x", 3600))); got != "2026-04-08T21:15:30.123Z" {
		t.Errorf("FormatTime = %s", got)
	}
}

// TestRebuildEqualsLive: folding the log from empty, at once or in chunks,
// gives the projections built event by event.
func TestRebuildEqualsLive(t *testing.T) {
	f := newFoldLedger(t)
	f.history()
	live := f.fingerprint()
	for _, limit := range []uint64{0, 1, 2, 3, 100} {
		rebuild(t, f.l, limit)
		if got := f.fingerprint(); got != live {
			t.Errorf("rebuild in chunks of %d: fingerprint %x, live %x", limit, got, live)
		}
		f.view(func(tx *boltstore.Tx) error {
			v, applied, err := projections.State(tx)
			if v != projections.Version || applied != tx.Head().Seq {
				t.Errorf("state after rebuild: version %d applied %d, head %d", v, applied, tx.Head().Seq)
			}
			return err
		})
	}
}

func TestApplyOrder(t *testing.T) {
	f := newFoldLedger(t)
	f.add(true, events.TypeTaskCreated, []string{"T-0001"}, created("T-0001", "p", "", "a"))
	rec := f.add(false, events.TypeTaskCreated, []string{"T-0002"}, created("T-0002", "p", "", "b"))
	// Committed first: a failing call rolls back the commits left pending
	// (boltstore's pending.go), and their events ingested again are
	// folded up to the head (boltstore.Refold), T-0002's too.
	f.view(func(*boltstore.Tx) error { return nil })
	err := f.l.Update(func(tx *boltstore.Tx) error {
		rec.Seq = 1 // already folded
		return projections.Apply(tx, rec)
	})
	if err == nil {
		t.Errorf("Apply of an already folded seq succeeded")
	}
	// CatchUp folds what Apply was not given.
	err = f.l.Update(func(tx *boltstore.Tx) error {
		n, err := projections.CatchUp(tx, 0)
		if n != 1 {
			t.Errorf("CatchUp folded %d, want 1", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f.view(func(tx *boltstore.Tx) error {
		if _, ok, _ := projections.GetTask(tx, "T-0002"); !ok {
			t.Errorf("T-0002 not folded")
		}
		return nil
	})
}

func TestNeedsRebuild(t *testing.T) {
	f := newFoldLedger(t)
	f.history()
	for _, c := range []struct {
		version uint64
		need    bool
		err     error
	}{
		{projections.Version, false, nil},
		{0, true, nil},
		{projections.Version - 1, true, nil},
		{projections.Version + 1, false, projections.ErrNewerVersion},
	} {
		var need bool
		var err error
		f.l.Update(func(tx *boltstore.Tx) error {
			meta, _ := tx.Space("meta")
			if e := meta.Put([]byte("version"), be(c.version)); e != nil {
				return e
			}
			need, err = projections.NeedsRebuild(tx)
			return nil
		})
		if need != c.need || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("stored version %d: NeedsRebuild = %v, %v; want %v, %v", c.version, need, err, c.need, c.err)
		}
	}
}

func be(v uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[7-i] = byte(v >> (8 * i))
	}
	return b
}

// TestSessionLeafRule: the leaves of a session are its start event, the
// events that change a task in scope (or a thought on it), the tool.called
// events naming one, and the thoughts recorded with its id; never another
// session's start or finalization, nor events of types it does not know.
func TestSessionLeafRule(t *testing.T) {
	f := newFoldLedger(t)
	f.add(true, events.TypeTaskCreated, []string{"T-0001"}, created("T-0001", "p", "", "root"))  // 1
	f.add(true, events.TypeTaskCreated, []string{"T-0002"}, created("T-0002", "p", "", "other")) // 2
	f.add(true, events.TypeSessionStarted, []string{"A-0001", "T-0001"},                         // 3: leaf (own start)
		events.SessionStarted{SessionID: "A-0001", TaskID: "T-0001", AuditorID: "a", Scope: "shallow"})
	f.add(true, events.TypeSessionStarted, []string{"A-0002", "T-0001"}, // 4: another session's start
		events.SessionStarted{SessionID: "A-0002", TaskID: "T-0001", AuditorID: "b", Scope: "shallow"})
	f.add(true, events.TypeTaskUpdated, []string{"T-0001"}, events.TaskUpdated{TaskID: "T-0001", Title: str("x")}) // 5: leaf of both
	f.add(true, projections.TypeToolCalled, []string{"T-0001"}, projections.ToolCalled{Tool: "task_get"})          // 6: leaf of both
	f.add(true, projections.TypeToolCalled, []string{"A-0001"}, projections.ToolCalled{Tool: "merkle_root"})       // 7: names no task
	f.add(true, events.TypeThoughtRecorded, []string{"Θ-0001", "T-0002", "A-0001"},                                // 8: leaf of A-0001 (its id)
		events.ThoughtRecorded{ThoughtID: "Θ-0001", TaskID: "T-0002", Type: "plan", Content: "c", SessionID: "A-0001", ChainPosition: 1})
	f.add(true, "future.event", []string{"T-0001"}, map[string]any{"x": 1}) // 9: unknown type
	f.add(true, events.TypeSessionFinalized, []string{"A-0002", "T-0001"},  // 10: another session's finalization
		events.SessionFinalized{SessionID: "A-0002", MerkleRoot: "00"})
	f.add(true, events.TypeTaskUpdated, []string{"T-0001"}, events.TaskUpdated{TaskID: "T-0001", Title: str("y")}) // 11: leaf of A-0001
	f.add(true, events.TypeSessionFinalized, []string{"A-0001", "T-0001"},                                         // 12: own finalization, no leaf
		events.SessionFinalized{SessionID: "A-0001", MerkleRoot: "00"})
	f.add(true, events.TypeTaskUpdated, []string{"T-0001"}, events.TaskUpdated{TaskID: "T-0001", Title: str("z")}) // 13: after
	want := map[string][]uint64{"A-0001": {3, 5, 6, 8, 11}, "A-0002": {4, 5, 6}}
	f.view(func(tx *boltstore.Tx) error {
		for id, seqs := range want {
			var got []uint64
			var hashes []ledger.Hash
			projections.SessionLeaves(tx, id, func(l projections.Leaf) error {
				got = append(got, l.Seq)
				hashes = append(hashes, l.Hash)
				return nil
			})
			if !reflect.DeepEqual(got, seqs) {
				t.Errorf("%s leaves %v, want %v", id, got, seqs)
			}
			var fr ledger.Frontier
			for i, s := range got {
				r, err := tx.Event(s)
				if err != nil {
					return err
				}
				if r.Hash != hashes[i] {
					t.Errorf("%s leaf %d hash %s, event hash %s", id, s, hashes[i], r.Hash)
				}
				fr.Append(r.Hash)
			}
			s, _, _ := projections.GetSession(tx, id)
			if s.Leaves.Root() != fr.Root() || s.FirstSeq != seqs[0] || s.LastSeq != seqs[len(seqs)-1] {
				t.Errorf("%s: root %s first %d last %d, want %s %d %d", id, s.Leaves.Root(), s.FirstSeq, s.LastSeq, fr.Root(), seqs[0], seqs[len(seqs)-1])
			}
		}
		return nil
	})
}

func TestTaskAsOf(t *testing.T) {
	f := newFoldLedger(t)
	f.add(true, events.TypeTaskCreated, []string{"T-0001"}, created("T-0001", "p", "", "a"))                           // 1
	f.add(true, events.TypeTaskCreated, []string{"T-0002"}, created("T-0002", "p", "", "b"))                           // 2
	f.add(true, events.TypeTaskUpdated, []string{"T-0001"}, events.TaskUpdated{TaskID: "T-0001", Status: str("todo")}) // 3
	f.add(true, events.TypeThoughtRecorded, []string{"Θ-0001", "T-0001"},                                              // 4
		events.ThoughtRecorded{ThoughtID: "Θ-0001", TaskID: "T-0001", Type: "plan", Content: "c", ChainPosition: 1})
	f.add(true, events.TypeTaskUpdated, []string{"T-0001"}, events.TaskUpdated{TaskID: "T-0001", Status: str("blocked"), BlockedReason: str("r")}) // 5
	f.add(true, events.TypeTaskUpdated, []string{"T-0001"}, events.TaskUpdated{TaskID: "T-0001", Status: str("todo"), BlockedReason: str("")})     // 6
	f.view(func(tx *boltstore.Tx) error {
		for _, c := range []struct {
			seq            uint64
			ok             bool
			status, reason string
			last           uint64
		}{
			{0, false, "", "", 0},
			{1, true, "backlog", "", 1},
			{2, true, "backlog", "", 1},
			{3, true, "todo", "", 3},
			{4, true, "todo", "", 3},
			{5, true, "blocked", "r", 5},
			{6, true, "todo", "", 6},
		} {
			got, ok, err := projections.TaskAsOf(tx, "T-0001", c.seq)
			if err != nil {
				return err
			}
			if ok != c.ok || got.Status != c.status || got.BlockedReason != c.reason || got.Seq != c.last {
				t.Errorf("as of %d: ok %v %+v, want %v %s %q seq %d", c.seq, ok, got, c.ok, c.status, c.reason, c.last)
			}
		}
		live, _, _ := projections.GetTask(tx, "T-0001")
		past, _, _ := projections.TaskAsOf(tx, "T-0001", 6)
		live.Thoughts = 0 // a live counter, not part of the past
		if !reflect.DeepEqual(live, past) {
			t.Errorf("as of the head %+v, live %+v", past, live)
		}
		if _, ok, _ := projections.TaskAsOf(tx, "T-0002", 1); ok {
			t.Errorf("T-0002 exists as of seq 1")
		}
		for id, want := range map[string][]uint64{"T-0001": {1, 3, 5, 6}, "T-0002": {2}, "T-0009": nil, "bad": nil} {
			if got, err := projections.TaskEventSeqs(tx, id); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("TaskEventSeqs(%s) = %v, %v; want %v", id, got, err, want)
			}
		}
		// A create is its task's created_seq: task_events keys the updates alone.
		sp, err := tx.Space("task_events")
		if err != nil {
			return err
		}
		var keys int
		sp.Scan(nil, false, func(_, _ []byte) (bool, error) { keys++; return true, nil })
		if keys != 3 {
			t.Errorf("task_events holds %d keys, want the 3 updates", keys)
		}
		return nil
	})
}

// TestThoughtLeavesItsTask: folding a thought writes nothing into its
// task's record (a thought_record rewrote it, to count it, in the largest
// space the call touched); the count is read from the task's chain.
func TestThoughtLeavesItsTask(t *testing.T) {
	f := newFoldLedger(t)
	f.add(true, events.TypeTaskCreated, []string{"T-0001"}, created("T-0001", "p", "", "root"))
	record := func() []byte {
		var v []byte
		f.view(func(tx *boltstore.Tx) error {
			sp, err := tx.Space("tasks")
			if err == nil {
				v = append([]byte(nil), sp.Get([]byte{0, 0, 0, 0, 0, 0, 0, 1})...)
			}
			return err
		})
		if v == nil {
			t.Fatal("no record of T-0001")
		}
		return v
	}
	before := record()
	for i, th := range []string{"Θ-0001", "Θ-0002", "Θ-0003"} {
		f.add(true, events.TypeThoughtRecorded, []string{th, "T-0001"}, events.ThoughtRecorded{ThoughtID: th, TaskID: "T-0001", Type: "plan", Content: "c", ChainPosition: uint64(i + 1)})
	}
	if after := record(); string(after) != string(before) {
		t.Errorf("T-0001's record changed with its thoughts:\n% x\n% x", before, after)
	}
	f.view(func(tx *boltstore.Tx) error {
		task, ok, err := projections.GetTask(tx, "T-0001")
		if err != nil || !ok {
			t.Fatalf("GetTask: %v %v", ok, err)
		}
		if err := projections.CountThoughts(tx, &task); err != nil || task.Thoughts != 3 {
			t.Errorf("CountThoughts: %d, %v; want 3", task.Thoughts, err)
		}
		return nil
	})
}

// A call that fails rolls back the commits left pending before it
// (boltstore's pending.go); their events, ingested again, are folded again
// (boltstore.Refold): a read after it finds the projections at the head,
// holding every task answered.
func TestRefoldAfterRollback(t *testing.T) {
	f := newFoldLedger(t)
	f.add(true, events.TypeTaskCreated, []string{"T-0001"}, created("T-0001", "p", "", "a"))
	f.add(true, events.TypeTaskCreated, []string{"T-0002"}, created("T-0002", "p", "", "b"))
	failAndCheckFolded(t, f, "T-0001", "T-0002")
}

// Projections behind the log when a call fails and rolls back the commits
// left pending: folded up to the head with what is ingested again, as the
// calls answered had found them (every call catches up first).
func TestRefoldAfterRollbackBehind(t *testing.T) {
	f := newFoldLedger(t)
	f.add(true, events.TypeTaskCreated, []string{"T-0001"}, created("T-0001", "p", "", "a"))
	f.add(false, events.TypeTaskCreated, []string{"T-0002"}, created("T-0002", "p", "", "b")) // not folded
	f.view(func(*boltstore.Tx) error { return nil })                                          // committed so, behind
	err := f.l.Update(func(tx *boltstore.Tx) error {
		if _, err := projections.CatchUp(tx, 0); err != nil {
			return err
		}
		_, err := appendEvent(tx, events.TypeTaskCreated, events.CurrentVersion(events.TypeTaskCreated), []string{"T-0003"}, created("T-0003", "p", "", "c"))
		if err != nil {
			return err
		}
		r, err := tx.Event(tx.Head().Seq)
		if err != nil {
			return err
		}
		return projections.Apply(tx, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	failAndCheckFolded(t, f, "T-0001", "T-0002", "T-0003")
}

// failAndCheckFolded makes a call that fails, rolling back the commits
// left pending, then checks the projections are at the head and hold the
// tasks ids.
func failAndCheckFolded(t *testing.T, f *foldLedger, ids ...string) {
	t.Helper()
	failed := errors.New("refused")
	if err := f.l.Update(func(tx *boltstore.Tx) error { return failed }); !errors.Is(err, failed) {
		t.Fatalf("the failing call: %v", err)
	}
	f.view(func(tx *boltstore.Tx) error {
		if _, applied, err := projections.State(tx); err != nil || applied != tx.Head().Seq {
			t.Errorf("projections applied %d (%v), head %d", applied, err, tx.Head().Seq)
		}
		for _, id := range ids {
			if _, ok, err := projections.GetTask(tx, id); !ok || err != nil {
				t.Errorf("%s after the rollback: %v %v", id, ok, err)
			}
		}
		return nil
	})
}

package projections_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/search"
)

// openFolded opens a new ledger with empty projections.
func openFolded(t *testing.T) *boltstore.Store {
	t.Helper()
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "ledger.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.Update(projections.Reset); err != nil {
		t.Fatal(err)
	}
	return l
}

// appendRaw appends an event with the payload version given, folding it live.
// storedForm is payload as commands store it in its version: a
// thought.recorded of version 3 or later without the ids its subjects hold.
func storedForm(version uint16, payload any) any {
	if p, ok := payload.(events.ThoughtRecorded); ok && version >= 3 {
		return p.SubjectIDs()
	}
	return payload
}

// appendEvent appends one event as the tests' actor, its payload in the
// form version stores.
func appendEvent(tx *boltstore.Tx, typ string, version uint16, subjects []string, payload any) (ledger.Record, error) {
	b, err := ledger.EncodePayload(storedForm(version, payload))
	if err != nil {
		return ledger.Record{}, err
	}
	return tx.Append(ledger.Event{Type: typ, Version: version, Actor: "tester", Subjects: subjects, Payload: b})
}

// appendApplied appends one event (appendEvent) and folds it.
func appendApplied(tx *boltstore.Tx, typ string, version uint16, subjects []string, payload any) error {
	r, err := appendEvent(tx, typ, version, subjects, payload)
	if err != nil {
		return err
	}
	return projections.Apply(tx, r)
}

func appendRaw(t *testing.T, l *boltstore.Store, typ string, version uint16, subjects []string, payload any) {
	t.Helper()
	err := l.Update(func(tx *boltstore.Tx) error { return appendApplied(tx, typ, version, subjects, payload) })
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpcastTaskCreated: a version 1 task.created ("sequence") reads as the
// current version ("project_sequence"), live, in time travel and after a
// rebuild; the stored bytes stay version 1.
func TestUpcastTaskCreated(t *testing.T) {
	if v := events.CurrentVersion(events.TypeTaskCreated); v != 2 {
		t.Fatalf("task.created is written as version %d", v)
	}
	l := openFolded(t)
	v1 := map[string]any{"task_id": "T-0001", "project": "p", "sequence": 3, "title": "old", "description": "",
		"priority": "normal", "labels": []string{}, "assignee": "unassigned"}
	appendRaw(t, l, events.TypeTaskCreated, 1, []string{"T-0001"}, v1)
	v2 := events.TaskCreated{TaskID: "T-0002", Project: "p", Sequence: 4, Title: "new", Priority: "normal", Labels: []string{}, Assignee: "unassigned"}
	appendRaw(t, l, events.TypeTaskCreated, 2, []string{"T-0002"}, v2)
	check := func(when string) {
		t.Helper()
		l.View(func(tx *boltstore.Tx) error {
			for id, want := range map[string]uint64{"T-0001": 3, "T-0002": 4} {
				task, ok, err := projections.GetTask(tx, id)
				if err != nil || !ok || task.Sequence != want {
					t.Errorf("%s: %s sequence %d (%v), want %d", when, id, task.Sequence, err, want)
				}
				past, ok, err := projections.TaskAsOf(tx, id, 2)
				if err != nil || !ok || past.Sequence != want {
					t.Errorf("%s: %s as of seq 2: sequence %d (%v), want %d", when, id, past.Sequence, err, want)
				}
			}
			r, _ := tx.Event(1)
			var stored map[string]any
			ledger.DecodePayload(r.Payload, &stored)
			if r.Version != 1 || stored["sequence"] == nil || stored["project_sequence"] != nil {
				t.Errorf("%s: the stored v1 payload changed: v%d %v", when, r.Version, stored)
			}
			r, _ = tx.Event(2)
			ledger.DecodePayload(r.Payload, &stored)
			if _, old := stored["sequence"]; old {
				t.Errorf("%s: a v2 payload carries the v1 field: %v", when, stored)
			}
			return nil
		})
	}
	check("live")
	rebuild(t, l, 0)
	check("rebuilt")
}

// rebuild refolds the whole log of l, limit events per read (0: the
// default), and puts it in place of the projections.
func rebuild(t *testing.T, l *boltstore.Store, limit uint64) {
	t.Helper()
	res, err := projections.Rebuild(l, projections.RebuildOptions{Force: true, Chunk: limit})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Swapped {
		t.Fatal("a forced rebuild swapped nothing")
	}
}

// history appends every kind of event, folding each live.
func history(t *testing.T, l *boltstore.Store, tasks int) {
	t.Helper()
	s := func(v string) *string { return &v }
	for i := 1; i <= tasks; i++ {
		id := domain.FormatID(domain.TaskPrefix, uint64(i))
		parent := ""
		if i > 1 {
			parent = "T-0001"
		}
		appendRaw(t, l, events.TypeTaskCreated, 2, []string{id}, events.TaskCreated{TaskID: id, Project: "p", ParentID: parent, Sequence: uint64(i), Title: "task", Priority: "normal", Labels: []string{}, Assignee: "a"})
		if i == 2 {
			appendRaw(t, l, events.TypeSessionStarted, 1, []string{"A-0001", "T-0001"}, events.SessionStarted{SessionID: "A-0001", TaskID: "T-0001", AuditorID: "a", Scope: "deep"})
		}
		appendRaw(t, l, events.TypeTaskUpdated, 1, []string{id}, events.TaskUpdated{TaskID: id, Status: s("todo")})
		th := domain.FormatID(domain.ThoughtPrefix, uint64(i))
		appendRaw(t, l, events.TypeThoughtRecorded, 1, []string{th, id, "A-0001"}, events.ThoughtRecorded{ThoughtID: th, TaskID: id, Type: "plan", Content: "c", SessionID: "A-0001", ChainPosition: 1})
		appendRaw(t, l, projections.TypeToolCalled, 1, []string{id}, projections.ToolCalled{Tool: "task_get", Outcome: "OK"})
	}
	appendRaw(t, l, events.TypeSessionFinalized, 1, []string{"A-0001", "T-0001"}, events.SessionFinalized{SessionID: "A-0001", MerkleRoot: "00"})
	appendRaw(t, l, events.TypeTaskUpdated, 1, []string{"T-0001"}, events.TaskUpdated{TaskID: "T-0001", Title: s("renamed")})
	// Knowledge the index takes out again, reading it from its event: a
	// superseded learning, a replaced memory version.
	appendRaw(t, l, events.TypeLearningRecorded, 1, []string{"L-0001"}, events.LearningRecorded{LearningID: "L-0001", Project: "p", Pattern: "retry flaky uploads", Context: "rate limits"})
	appendRaw(t, l, events.TypeLearningRecorded, 1, []string{"L-0002"}, events.LearningRecorded{LearningID: "L-0002", Project: "p", Pattern: "retry uploads with back-off", Context: "rate limits"})
	appendRaw(t, l, events.TypeLearningSuperseded, 1, []string{"L-0001", "L-0002"}, events.LearningSuperseded{LearningID: "L-0001", By: "L-0002"})
	for v := uint64(1); v <= 2; v++ {
		id := domain.FormatID(domain.MemoryPrefix, v)
		appendRaw(t, l, events.TypeMemoryWritten, 1, []string{id}, events.MemoryWritten{MemoryID: id, Key: "deploy", Scope: "global", Version: v, Content: fmt.Sprintf("deploy checklist v%d", v)})
	}
}

// refold folds src's log into a new scratch ledger with Fold, in batches of
// batch records, and returns the scratch ledger.
func refold(t *testing.T, src *boltstore.Store, batch int) *boltstore.Store {
	t.Helper()
	return refoldWith(t, src, batch, false)
}

// refoldWith is refold, if prepare with a Refold of each batch Prepared
// ahead (as verify's refold does).
func refoldWith(t *testing.T, src *boltstore.Store, batch int, prepare bool) *boltstore.Store {
	t.Helper()
	scratch := openFolded(t)
	recs, root, event := logOf(src)
	var rf projections.Refold
	for len(recs) > 0 {
		n := min(batch, len(recs))
		fold := func(tx *boltstore.Tx) error { return projections.Fold(tx, recs[:n], root, event) }
		if prepare {
			p := projections.Prepare(recs[:n])
			fold = func(tx *boltstore.Tx) error { return rf.Fold(tx, p, root, event) }
		}
		if err := scratch.Update(fold); err != nil {
			t.Fatal(err)
		}
		recs = recs[n:]
	}
	return scratch
}

// logOf reads src's log for a refold: its records (bytes dropped), and the
// root and event lookups a fold asks for.
func logOf(src *boltstore.Store) ([]ledger.Record, func(uint64) (ledger.Hash, error), func(uint64) (ledger.Record, error)) {
	var recs []ledger.Record
	roots := map[uint64]ledger.Hash{}
	src.View(func(tx *boltstore.Tx) error {
		return tx.Scan(1, tx.Head().Seq+1, func(r ledger.Record) error {
			roots[r.Seq], _ = tx.Root(r.Seq)
			r.Raw = nil
			recs = append(recs, r)
			return nil
		})
	})
	root := func(size uint64) (ledger.Hash, error) { return roots[size], nil }
	all := slices.Clone(recs)
	event := func(seq uint64) (ledger.Record, error) {
		if seq == 0 || seq > uint64(len(all)) {
			return ledger.Record{}, fmt.Errorf("no event %d", seq)
		}
		return all[seq-1], nil
	}
	return recs, root, event
}

// compare runs a Comparison of got against want in steps of step keys.
func compare(t *testing.T, want, got *boltstore.Store, step int) projections.Comparison {
	t.Helper()
	var c projections.Comparison
	for !c.Done() {
		err := want.View(func(wtx *boltstore.Tx) error {
			return got.View(func(gtx *boltstore.Tx) error { return c.Step(wtx, gtx, step) })
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func fingerprintOf(t *testing.T, l *boltstore.Store) (fp uint64) {
	t.Helper()
	l.View(func(tx *boltstore.Tx) (err error) { fp, err = projections.Fingerprint(tx); return })
	return fp
}

// TestFoldEqualsApply: folding a log into another file in batches (as
// verify does) gives exactly the projections folded live, event by event.
func TestFoldEqualsApply(t *testing.T) {
	live := openFolded(t)
	history(t, live, 30)
	for _, batch := range []int{1, 7, 1000} {
		scratch := refold(t, live, batch)
		if a, b := fingerprintOf(t, live), fingerprintOf(t, scratch); a != b {
			t.Errorf("batch %d: fingerprints %x and %x", batch, a, b)
		}
		for _, step := range []int{1, 5, 4096} {
			c := compare(t, scratch, live, step)
			if c.Differences != 0 || c.Keys == 0 {
				t.Errorf("batch %d step %d: %d differences in %d keys: %v", batch, step, c.Differences, c.Keys, c.First)
			}
			if fp, want := c.Fingerprint(), fingerprintOf(t, scratch); fp != want {
				t.Errorf("batch %d step %d: the comparison's fingerprint %x, Fingerprint %x", batch, step, fp, want)
			}
		}
	}
	// Out of order is refused.
	scratch := openFolded(t)
	var r ledger.Record
	live.View(func(tx *boltstore.Tx) (err error) { r, err = tx.Event(2); return })
	err := scratch.Update(func(tx *boltstore.Tx) error {
		return projections.Fold(tx, []ledger.Record{r}, func(uint64) (ledger.Hash, error) { return ledger.Hash{}, nil }, tx.Event)
	})
	if err == nil || !strings.Contains(err.Error(), "fold seq 2") {
		t.Errorf("folding seq 2 first: %v", err)
	}
}

// TestComparisonFindsEdits: an edited, a deleted and an added key are each
// found, the record's seq named where it has one, a task index entry by the
// tasks of its block.
func TestComparisonFindsEdits(t *testing.T) {
	live := openFolded(t)
	history(t, live, 6)
	scratch := refold(t, live, 100)
	for _, c := range []struct {
		name, problem, key string
		edit               func(tx *boltstore.Tx) error
	}{
		{"edited", "value differs", "T-0003", func(tx *boltstore.Tx) error {
			sp, _ := tx.Space("tasks")
			v := append([]byte(nil), sp.Get(key(3))...)
			v[len(v)-1] ^= 1
			return sp.Put(key(3), v)
		}},
		{"deleted", "missing", "T-0002", func(tx *boltstore.Tx) error {
			sp, _ := tx.Space("tasks")
			return sp.Delete(key(2))
		}},
		{"index edited", "value differs", "index of T-0001…T-0063", func(tx *boltstore.Tx) error {
			sp, _ := tx.Space("tasks")
			k := append(key(63), 'i') // the task index's block 0, after its tasks
			v := append([]byte(nil), sp.Get(k)...)
			if len(v) == 0 {
				return fmt.Errorf("no task index entry at %x", k)
			}
			v[len(v)-1] ^= 1
			return sp.Put(k, v)
		}},
		{"added", "unexpected key", "Θ-6336…Θ-6399", func(tx *boltstore.Tx) error {
			sp, _ := tx.Space("thoughts")
			return sp.Put([]byte{1, 99}, []byte{1, 5, 1}) // block 99 (a short number): thought 6336 at seq 5
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			edited := refold(t, live, 100)
			if err := edited.Update(c.edit); err != nil {
				t.Fatal(err)
			}
			for _, step := range []int{1, 3, 4096} {
				cmp := compare(t, scratch, edited, step)
				if cmp.Differences != 1 || cmp.First == nil || cmp.First.Problem != c.problem || cmp.First.Key != c.key {
					t.Fatalf("step %d: %d differences, first %+v", step, cmp.Differences, cmp.First)
				}
				if c.problem != "unexpected key" && !strings.HasPrefix(c.key, "index of") && cmp.First.Seq == 0 {
					t.Errorf("step %d: no seq named: %+v", step, cmp.First)
				}
			}
		})
	}
}

func key(n uint64) []byte {
	b := make([]byte, 8)
	for i := range 8 {
		b[7-i] = byte(n >> (8 * i))
	}
	return b
}

// TestRebuildChunksEqualLive: a rebuild reads, decodes and prepares the log
// a chunk at a time into memory it reuses once a chunk is folded and
// committed; whatever the chunk's size (one event, a few, more than a
// transaction folds at once, the whole log) it gives exactly the
// projections folded live, event by event. The log has what a chunk's
// fold reads of other chunks: tasks updated and thoughts chained across
// chunks, index lumps begun in the chunk before, texts of every length.
// Each transaction of the refold folds TxChunks chunks (the last one
// fewer), however fast they are read, and writes them out once.
func TestRebuildChunksEqualLive(t *testing.T) {
	l := openFolded(t)
	s := func(v string) *string { return &v }
	chain := map[string]uint64{} // a task's thoughts so far
	words := strings.Fields("retry the upload with back-off when the rate limit answers, then check the checksum of every part")
	for i := 1; i <= 120; i++ {
		id := domain.FormatID(domain.TaskPrefix, uint64(i))
		appendRaw(t, l, events.TypeTaskCreated, 2, []string{id}, events.TaskCreated{TaskID: id, Project: fmt.Sprintf("p%d", i%3), Sequence: uint64(i), Title: strings.Join(words[:i%len(words)], " "), Priority: "normal", Labels: []string{"l"}, Assignee: "a"})
		for j := 1; j <= i%4; j++ {
			task := domain.FormatID(domain.TaskPrefix, uint64(1+(i*7+j)%i))
			appendRaw(t, l, events.TypeTaskUpdated, 1, []string{task}, events.TaskUpdated{TaskID: task, Description: s(strings.Repeat(words[j], i%5))})
		}
		th := domain.FormatID(domain.ThoughtPrefix, uint64(i))
		on := domain.FormatID(domain.TaskPrefix, uint64(1+i%min(i, 5)))
		chain[on]++
		appendRaw(t, l, events.TypeThoughtRecorded, 1, []string{th, on}, events.ThoughtRecorded{ThoughtID: th, TaskID: on, Type: "plan",
			Content: strings.Join(words[i%len(words):], " ") + strings.Repeat(" part", i), ChainPosition: chain[on]})
		appendRaw(t, l, projections.TypeToolCalled, 1, []string{on}, projections.ToolCalled{Tool: "thought_record", Outcome: "OK"})
	}
	live := fingerprintOf(t, l)
	var head uint64
	l.View(func(tx *boltstore.Tx) error { head = tx.Head().Seq; return nil })
	var txs []int // the chunks each transaction folded
	defer projections.SetAfterRefoldTx(func(chunks int) { txs = append(txs, chunks) })()
	for _, chunk := range []uint64{1, 3, 17, 64, 0} {
		txs = txs[:0]
		rebuild(t, l, chunk)
		if got := fingerprintOf(t, l); got != live {
			t.Fatalf("rebuilt %d events per chunk: fingerprint %x, live %x", chunk, got, live)
		}
		chunks := 1
		if chunk > 0 {
			chunks = int((head + chunk - 1) / chunk)
		}
		want := slices.Repeat([]int{projections.TxChunks}, chunks/projections.TxChunks)
		if chunks%projections.TxChunks > 0 {
			want = append(want, chunks%projections.TxChunks)
		}
		if !slices.Equal(txs, want) {
			t.Errorf("rebuilt %d events per chunk: transactions folded %v chunks, want %v", chunk, txs, want)
		}
	}
}

// TestRebuildWhileWriting: a rebuild refolds into a scratch file while
// calls keep folding into the live projections, folds in the swap what
// was appended after the scratch file caught up, and ends with the
// projections a rebuild of the same log with nobody writing gives.
func TestRebuildWhileWriting(t *testing.T) {
	l := openFolded(t)
	history(t, l, 150)
	var chunks int
	res, err := projections.Rebuild(l, projections.RebuildOptions{Force: true, Chunk: 50, Progress: func(done, total uint64) {
		chunks++
		// Calls go on during the rebuild, folded live (the last ones
		// after the last chunk was read: the swap folds them).
		history(t, l, 1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if chunks < 3 {
		t.Fatalf("rebuild took %d chunks of 50 events, want several", chunks)
	}
	var head uint64
	if err := l.View(func(tx *boltstore.Tx) error {
		v, applied, err := projections.State(tx)
		head = tx.Head().Seq
		if v != projections.Version || applied != head || res.Applied != head {
			t.Errorf("after the rebuild: version %d, applied %d (reported %d), head %d", v, applied, res.Applied, head)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rebuilt := fingerprintOf(t, l)
	rebuild(t, l, 0)
	if again := fingerprintOf(t, l); again != rebuilt {
		t.Errorf("rebuilt while writing %x, rebuilt alone %x", rebuilt, again)
	}
}

// TestCatchUpLarge: a catch-up long enough to decode beside folding (a
// rebuild) gives exactly the projections folded live.
func TestCatchUpLarge(t *testing.T) {
	l := openFolded(t)
	s := func(v string) *string { return &v }
	err := l.Update(func(tx *boltstore.Tx) error {
		add := func(typ string, subjects []string, payload any) error {
			return appendApplied(tx, typ, events.CurrentVersion(typ), subjects, payload)
		}
		for i := uint64(1); i <= 800; i++ {
			id, th := domain.FormatID(domain.TaskPrefix, i), domain.FormatID(domain.ThoughtPrefix, i)
			if err := errorsJoin(
				add(events.TypeTaskCreated, []string{id}, events.TaskCreated{TaskID: id, Project: "p", Sequence: i, Title: "t", Priority: "normal", Labels: []string{}, Assignee: "a"}),
				add(events.TypeTaskUpdated, []string{id}, events.TaskUpdated{TaskID: id, Status: s("todo")}),
				add(events.TypeThoughtRecorded, []string{th, id}, events.ThoughtRecorded{ThoughtID: th, TaskID: id, Type: "plan", Content: "c", ChainPosition: 1}),
			); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	live := fingerprintOf(t, l)
	// Dropped, then folded again from seq 1 in one catch-up.
	if err := l.Update(func(tx *boltstore.Tx) error {
		if err := tx.DropSpaces(); err != nil {
			return err
		}
		if err := projections.Reset(tx); err != nil {
			return err
		}
		n, err := projections.CatchUp(tx, 0)
		if n != 2400 {
			t.Errorf("caught up %d events, want 2400", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if rebuilt := fingerprintOf(t, l); rebuilt != live {
		t.Errorf("rebuilt %x, live %x", rebuilt, live)
	}
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestFoldReadsOnlyKnowledgeItDidNotFold: a batch fold indexes a lump of
// knowledge from the events it folded itself: it reads back from the log
// only events of earlier batches, where the lump began (a verifier's
// refold reads each in a transaction of its own).
func TestFoldReadsOnlyKnowledgeItDidNotFold(t *testing.T) {
	src := openFolded(t)
	for i := 1; i <= 40; i++ {
		id := domain.FormatID(domain.TaskPrefix, uint64(i))
		appendRaw(t, src, events.TypeTaskCreated, 2, []string{id}, events.TaskCreated{TaskID: id, Project: "p", Sequence: uint64(i), Title: "task", Priority: "normal", Labels: []string{}, Assignee: "a"})
		th := domain.FormatID(domain.ThoughtPrefix, uint64(i))
		appendRaw(t, src, events.TypeThoughtRecorded, 1, []string{th, id}, events.ThoughtRecorded{ThoughtID: th, TaskID: id, Type: "plan", Content: "words to index", ChainPosition: 1})
		appendRaw(t, src, projections.TypeToolCalled, 1, []string{id}, projections.ToolCalled{Tool: "thought_record", Outcome: "OK"})
	}
	var all []ledger.Record
	src.View(func(tx *boltstore.Tx) error {
		return tx.Scan(1, tx.Head().Seq+1, func(r ledger.Record) error {
			r.Raw = nil
			all = append(all, r)
			return nil
		})
	})
	root := func(uint64) (ledger.Hash, error) { return ledger.Hash{}, nil }
	for _, batch := range []int{len(all), 7} {
		var first uint64 // of the batch being folded
		read := 0
		event := func(seq uint64) (ledger.Record, error) {
			if seq >= first {
				t.Errorf("batches of %d: the batch from seq %d read event %d (%s) back from the log", batch, first, seq, all[seq-1].Type)
			}
			read++
			return all[seq-1], nil
		}
		scratch := openFolded(t)
		for recs := all; len(recs) > 0; {
			n := min(batch, len(recs))
			first = recs[0].Seq
			if err := scratch.Update(func(tx *boltstore.Tx) error { return projections.Fold(tx, recs[:n], root, event) }); err != nil {
				t.Fatal(err)
			}
			recs = recs[n:]
		}
		if batch == len(all) && read > 0 {
			t.Errorf("one batch of the whole log read %d events back", read)
		}
		if fingerprintOf(t, scratch) != fingerprintOf(t, src) {
			t.Errorf("batches of %d: the refold differs from the live projections", batch)
		}
	}
}

// TestThoughtRecordedTwiceAcrossLumps: whether the earlier thought of a
// twice-recorded id was indexed in a lump before the later one (taken out
// of the index then) or waits in the same lump (never indexed), the index
// holds the later thought alone, searched live and after a rebuild, with
// the live projections' bytes.
func TestThoughtRecordedTwiceAcrossLumps(t *testing.T) {
	for _, lump := range []uint64{1, 2, 3, 16} {
		t.Run(fmt.Sprint("lump ", lump), func(t *testing.T) {
			defer projections.SetIndexLump(lump)()
			l := openFolded(t)
			appendRaw(t, l, events.TypeTaskCreated, events.CurrentVersion(events.TypeTaskCreated), []string{"T-0001"},
				events.TaskCreated{TaskID: "T-0001", Project: "p", Sequence: 1, Title: "t", Priority: "normal", Labels: []string{}, Assignee: "a"})
			for i, th := range []struct{ id, content string }{
				{"Θ-0001", "walrus migration plan"}, {"Θ-0002", "otter plan"}, {"Θ-0001", "zebra crossing plan"}, {"Θ-0003", "yak plan"},
			} {
				appendRaw(t, l, events.TypeThoughtRecorded, events.CurrentVersion(events.TypeThoughtRecorded), []string{th.id, "T-0001"},
					events.ThoughtRecorded{ThoughtID: th.id, TaskID: "T-0001", Type: "analysis", Content: th.content, ChainPosition: uint64(i + 1)})
			}
			hits := func(query string) (ids []string) {
				t.Helper()
				l.View(func(tx *boltstore.Tx) error {
					found, err := projections.SearchKnowledge(tx, query, search.Filter{})
					if err != nil {
						t.Fatal(err)
					}
					for _, h := range found {
						ids = append(ids, fmt.Sprintf("%s@%d", h.ID, h.Seq))
					}
					return nil
				})
				slices.Sort(ids)
				return ids
			}
			check := func(when string) {
				t.Helper()
				if got := hits("walrus"); len(got) != 0 {
					t.Errorf("%s: the replaced thought still matches: %v", when, got)
				}
				if got, want := hits("plan"), []string{"Θ-0001@4", "Θ-0002@3", "Θ-0003@5"}; !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", when, got, want)
				}
			}
			check("live")
			live := fingerprintOf(t, l)
			rebuild(t, l, 0)
			check("rebuilt")
			if got := fingerprintOf(t, l); got != live {
				t.Errorf("rebuilt fingerprint %x, live %x", got, live)
			}
		})
	}
}

// TestPreparedFoldEqualsFold: a Refold given what Prepare worked out ahead
// (as verify's refold and a rebuild's catch-up are, from another
// goroutine) stores exactly the projections of a fold of the records
// alone, and of the live fold: in batches of any size, at any lump size,
// with thought ids recorded again, out of order, and with words repeated.
// A catch-up long enough to prepare beside folding (a rebuild) gives them
// too.
func TestPreparedFoldEqualsFold(t *testing.T) {
	for _, lump := range []uint64{1, 3, 16} {
		t.Run(fmt.Sprint("lump ", lump), func(t *testing.T) {
			defer projections.SetIndexLump(lump)()
			l := openFolded(t)
			history(t, l, 3)
			err := l.Update(func(tx *boltstore.Tx) error {
				add := func(typ string, subjects []string, payload any) error {
					return appendApplied(tx, typ, events.CurrentVersion(typ), subjects, payload)
				}
				status := "in_progress"
				for i := uint64(10); i < 400; i++ {
					task := domain.FormatID(domain.TaskPrefix, i/3)
					if i%3 == 0 {
						if err := add(events.TypeTaskCreated, []string{task}, events.TaskCreated{TaskID: task, Project: fmt.Sprint("p", i%4),
							Sequence: i, Title: "t", Priority: "normal", Labels: []string{"x"}, Assignee: "a"}); err != nil {
							return err
						}
					}
					// Ids above every earlier one, but now and then one
					// recorded again, or one below the highest.
					th := i
					switch i % 50 {
					case 17:
						th = i - 5
					case 33:
						th = 5000 + i
					}
					id := domain.FormatID(domain.ThoughtPrefix, th)
					err := errorsJoin(
						add(events.TypeThoughtRecorded, []string{id, task}, events.ThoughtRecorded{ThoughtID: id, TaskID: task, Type: "plan",
							Content: fmt.Sprintf("plan plan step%d of the walrus_migration TestCheckout %d", i%7, i), Blockers: []string{"b", fmt.Sprint("waits on ", i%5)},
							ChainPosition: i}),
						add(events.TypeTaskUpdated, []string{task}, events.TaskUpdated{TaskID: task, Status: &status}),
						add(projections.TypeToolCalled, []string{task}, projections.ToolCalled{Tool: "thought_record", Outcome: "OK"}),
					)
					if err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			live := fingerprintOf(t, l)
			for _, batch := range []int{13, 5000} {
				for _, prepare := range []bool{false, true} {
					if got := fingerprintOf(t, refoldWith(t, l, batch, prepare)); got != live {
						t.Errorf("batches of %d, prepared %v: fingerprint %x, live %x", batch, prepare, got, live)
					}
				}
			}
			rebuild(t, l, 0)
			if got := fingerprintOf(t, l); got != live {
				t.Errorf("rebuilt: fingerprint %x, live %x", got, live)
			}
		})
	}
}

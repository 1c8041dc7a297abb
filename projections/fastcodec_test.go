package projections

import (
	"reflect"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
)

func ptr[T any](v T) *T { return &v }

// fastSamples are values of each type with a hand-written reader, as this
// binary writes them: optional fields set and not, strings and lists of
// every header width, integers of every width, negative ones included.
func fastSamples() []any {
	long := strings.Repeat("x", 300)
	huge := strings.Repeat("y", 70_000)
	many := make([]string, 20)
	for i := range many {
		many[i] = strings.Repeat("l", i*3)
	}
	return []any{
		&events.ThoughtRecorded{ThoughtID: "Θ-0001", TaskID: "T-0001", Type: "analysis", Content: "short", ChainPosition: 1},
		&events.ThoughtRecorded{ThoughtID: "Θ-0002", TaskID: "T-0001", Type: "decision", Content: long, SessionID: "A-0001", Branch: "main",
			CommitSHA: "abc1234", TestsRun: []string{"a", long}, Blockers: []string{}, Metadata: `{"k":1}`, PreviousHash: ledger.Digest(strings.Repeat("ab", 32)), ChainPosition: 1 << 40},
		&events.ThoughtRecorded{ThoughtID: "Θ-0003", TaskID: "T-0002", Content: huge, Blockers: many, ChainPosition: 300},
		&events.TaskUpdated{TaskID: "T-0001"},
		&events.TaskUpdated{TaskID: "T-0001", Status: ptr("review"), PreviousStatus: ptr("in_progress"), Progress: ptr(-40), Title: ptr(long),
			Description: ptr(""), Priority: ptr("high"), Assignee: ptr("claude"), Labels: &[]string{}, BlockedReason: ptr("waiting")},
		&events.TaskUpdated{TaskID: "T-0003", Progress: ptr(100_000), Labels: &many},
		&events.TaskCreated{TaskID: "T-0001", Project: "p", Sequence: 1, Title: "t", Description: "d", Priority: "normal", Labels: []string{}, Assignee: "a"},
		&events.TaskCreated{TaskID: "T-0002", Project: long, Sequence: 70_000, Title: long, ParentID: "T-0001", Labels: many, EstimateHours: ptr(2.5)},
		&events.TaskCreated{TaskID: "T-0003", V1Sequence: 4},
	}
}

// zero returns a new zero value of v's type (v a pointer).
func zero(v any) any { return reflect.New(reflect.TypeOf(v).Elem()).Interface() }

// TestFastCodec: what this binary writes, the hand-written readers read
// (they do not give up) into the values the generic reader gives.
func TestFastCodec(t *testing.T) {
	for _, v := range fastSamples() {
		b, err := ledger.EncodePayload(v)
		if err != nil {
			t.Fatal(err)
		}
		fast, generic := zero(v), zero(v)
		if !decodeFast(b, fast) {
			t.Errorf("%T: the fast reader gave up on % x", v, b[:min(len(b), 64)])
			continue
		}
		if err := unmarshalGeneric(b, generic); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, generic) {
			t.Errorf("%T: fast %+v\ngeneric %+v", v, fast, generic)
		}
		if _, ok := v.(*events.ThoughtRecorded); ok {
			checkLean(t, b)
		}
	}
	// A version 1 thought.recorded held its previous hash as hex.
	v1, err := ledger.EncodePayload(map[string]any{"thought_id": "Θ-1", "task_id": "T-1", "previous_hash": strings.Repeat("cd", 32), "chain_position": 2})
	if err != nil {
		t.Fatal(err)
	}
	var fast, generic events.ThoughtRecorded
	if !decodeFast(v1, &fast) || unmarshalGeneric(v1, &generic) != nil || !reflect.DeepEqual(fast, generic) || fast.PreviousHash != ledger.Digest(strings.Repeat("cd", 32)) {
		t.Errorf("a version 1 previous hash: fast %+v, generic %+v", fast, generic)
	}
}

// foldView is what the lean thought.recorded reader keeps of p.
func foldView(p events.ThoughtRecorded) events.ThoughtRecorded {
	return events.ThoughtRecorded{ThoughtID: p.ThoughtID, TaskID: p.TaskID, Content: p.Content, SessionID: p.SessionID,
		Blockers: p.Blockers, ChainPosition: p.ChainPosition}
}

// checkLean: the lean reader takes b exactly when the full one does, and
// then keeps what the full one reads of the fields a fold uses.
func checkLean(t *testing.T, b []byte) {
	t.Helper()
	var full, lean events.ThoughtRecorded
	fullOK, leanOK := decodeFast(b, &full), tryFast(b, (*thoughtFoldPayload)(&lean))
	if fullOK != leanOK {
		t.Fatalf("the full reader takes % x: %v, the lean one: %v", b, fullOK, leanOK)
	}
	if leanOK && !reflect.DeepEqual(lean, foldView(full)) {
		t.Fatalf("lean %+v\nfull %+v", lean, full)
	}
}

// TestFastDecodeGivesUp: forms the hand-written readers do not take
// (another key, a nil string, an integer where a string goes, a key twice,
// an array longer than the fields it knows) are read by the generic
// reader, and a value a reader gave up on midway is left as the generic
// reader alone leaves it.
func TestFastDecodeGivesUp(t *testing.T) {
	cases := []any{
		map[string]any{"thought_id": "Θ-1", "extra": 1},
		map[string]any{"thought_id": nil, "content": "c"},
		map[string]any{"task_id": 7},
		[]any{"Θ-1", "T-1", "analysis", "c", 1, nil, nil, nil, nil, nil, nil, nil, "a 13th element"},
	}
	for _, c := range cases {
		b, err := ledger.EncodePayload(c)
		if err != nil {
			t.Fatal(err)
		}
		fast := &events.ThoughtRecorded{Branch: "kept"}
		if decodeFast(b, fast) {
			t.Errorf("%v: the fast reader took it", c)
		}
		if fast.Branch != "kept" || fast.ThoughtID != "" {
			t.Errorf("%v: a reader that gave up changed the value: %+v", c, fast)
		}
		viaUnmarshal, generic := &events.ThoughtRecorded{}, &events.ThoughtRecorded{}
		errU, errG := unmarshal(b, viaUnmarshal), unmarshalGeneric(b, generic)
		if (errU == nil) != (errG == nil) || !reflect.DeepEqual(viaUnmarshal, generic) {
			t.Errorf("%v: unmarshal = %+v, %v; generic = %+v, %v", c, viaUnmarshal, errU, generic, errG)
		}
	}
	dup := append([]byte{0x82}, []byte("\xa7task_id\xa1a\xa7task_id\xa1b")...)
	if decodeFast(dup, &events.TaskUpdated{}) {
		t.Error("a key twice: the fast reader took it")
	}
}

// FuzzFastDecode: whatever the bytes, a hand-written reader that does not
// give up reads exactly what the generic reader does.
func FuzzFastDecode(f *testing.F) {
	for i, v := range fastSamples() {
		b, err := ledger.EncodePayload(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		samples := fastSamples()
		v := samples[int(kind)%len(samples)]
		checkLean(t, b)
		fast, generic := zero(v), zero(v)
		if !decodeFast(b, fast) {
			return
		}
		if err := unmarshalGeneric(b, generic); err != nil {
			t.Fatalf("%T: the fast reader took % x, the generic one fails: %v", v, b, err)
		}
		if !reflect.DeepEqual(fast, generic) {
			t.Fatalf("%T from % x:\nfast    %+v\ngeneric %+v", v, b, fast, generic)
		}
		// Into a value that already holds one (two copies: the generic
		// reader reuses a slice's array), both set the same fields.
		fast, generic = fastSamples()[int(kind)%len(samples)], fastSamples()[int(kind)%len(samples)]
		if !decodeFast(b, fast) || unmarshalGeneric(b, generic) != nil || !reflect.DeepEqual(fast, generic) {
			t.Fatalf("%T from % x into a sample: the fast and generic readers differ", v, b[:min(len(b), 64)])
		}
	})
}

// TestFastDecodeNilList: a nil where a list of strings goes leaves the
// field as it was, as the generic reader leaves it (FuzzFastDecode checks
// every reader so; this is the form that once set the field nil).
func TestFastDecodeNilList(t *testing.T) {
	cases := []struct {
		payload any
		kind    uint8 // of fastSamples
	}{
		{map[string]any{"thought_id": "Θ-1", "tests_run": nil, "blockers": nil}, 1},
		{map[string]any{"task_id": "T-1", "labels": nil}, 7},
	}
	for _, c := range cases {
		b, err := ledger.EncodePayload(c.payload)
		if err != nil {
			t.Fatal(err)
		}
		fast, generic := fastSamples()[c.kind], fastSamples()[c.kind]
		if !decodeFast(b, fast) {
			t.Fatalf("%v: the fast reader gave up", c.payload)
		}
		if err := unmarshalGeneric(b, generic); err != nil || !reflect.DeepEqual(fast, generic) {
			t.Errorf("%v into sample %d (%T): the fast and generic readers differ (%v)", c.payload, c.kind, fast, err)
		}
	}
}

// TestFastDecodeShortArray: a version 2 (positional) thought.recorded
// array that ends early leaves every field it does not hold zero, whatever
// the value held before, as the generic reader does.
func TestFastDecodeShortArray(t *testing.T) {
	b, err := ledger.EncodePayload([]any{"Θ-1", "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	fast, generic := &events.ThoughtRecorded{Branch: "kept"}, &events.ThoughtRecorded{Branch: "kept"}
	if !decodeFast(b, fast) {
		t.Fatal("the fast reader gave up on a short array")
	}
	if err := unmarshalGeneric(b, generic); err != nil || !reflect.DeepEqual(fast, generic) {
		t.Errorf("fast %+v\ngeneric %+v, %v", fast, generic, err)
	}
}

// TestRecordSeqOnlyOfRecords: the seq a difference is reported at comes from
// the records that carry one; a value of another space is not read as a
// record (a session leaf, a leaf hash beginning 0x91 0x18, read as the
// array [24] and reported a difference at seq 24 that the log never had).
func TestRecordSeqOnlyOfRecords(t *testing.T) {
	leaf := append([]byte{0x91, 0x18}, make([]byte, 30)...)
	for _, space := range []string{spSessionLeaves, spTaskEvents, spChildren, spOpenSessions, spSessionThoughts} {
		if got := recordSeq(space, leaf); got != 0 {
			t.Errorf("recordSeq(%s, a leaf hash) = %d, want 0", space, got)
		}
	}
	task := encodeTask(&Task{TaskState: TaskState{ID: "T-0001", Seq: 77}})
	if got := recordSeq(spTasks, task); got != 77 {
		t.Errorf("recordSeq(tasks, a task of seq 77) = %d", got)
	}
}

package commands

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// eventAt reads the record at seq (Raw copied) and the hash the log
// commits to for it (its stored leaf, or the next event's link).
func (h *harness) eventAt(seq uint64) (ledger.Record, ledger.Hash) {
	h.t.Helper()
	var rec ledger.Record
	var leaf ledger.Hash
	err := h.l.View(func(tx *boltstore.Tx) error {
		var err error
		if rec, err = tx.Event(seq); err != nil {
			return err
		}
		rec.Raw = append([]byte(nil), rec.Raw...)
		leaf, err = tx.Committed(seq)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return rec, leaf
}

// thoughtFixture records five thoughts on two tasks, two of them in the
// session A-0001 on T-0001.
func thoughtFixture(t *testing.T) (*harness, []map[string]any) {
	h := newHarness(t, Options{Agent: "scribe"})
	h.call("task_create", map[string]any{"title": "one", "project": "p"}, "OK")
	h.call("task_create", map[string]any{"title": "two", "project": "p"}, "OK")
	h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "aud"}, "OK")
	var recorded []map[string]any
	for _, a := range []map[string]any{
		{"task_id": "T-0001", "type": "plan", "content": "alpha-one", "session_id": "A-0001"},
		{"task_id": "T-0002", "type": "analysis", "content": "beta-one"},
		{"task_id": "T-0001", "type": "decision", "content": "alpha-two-original"},
		{"task_id": "T-0001", "type": "risk", "content": "alpha-three"},
		{"task_id": "T-0002", "type": "plan", "content": "beta-two", "session_id": "A-0001"},
	} {
		d := h.call("thought_record", a, "OK")
		d["content"] = a["content"]
		recorded = append(recorded, d)
	}
	return h, recorded
}

func TestThoughtChain(t *testing.T) {
	h, th := thoughtFixture(t)
	wantChain := []struct {
		id   string
		pos  float64
		prev any // index into th of the previous thought, or nil
	}{
		{"Θ-0001", 1, nil}, {"Θ-0002", 1, nil}, {"Θ-0003", 2, 0}, {"Θ-0004", 3, 2}, {"Θ-0005", 2, 1},
	}
	for i, w := range wantChain {
		d := th[i]
		if d["thought_id"] != w.id || d["chain_position"] != w.pos || d["recorded_by"] != "scribe" {
			t.Errorf("thought %d = %v, want %s at position %v", i, d, w.id, w.pos)
		}
		var wantPrev any
		if w.prev != nil {
			wantPrev = th[w.prev.(int)]["hash"]
		}
		if d["previous_hash"] != wantPrev {
			t.Errorf("%s previous_hash = %v, want %v", w.id, d["previous_hash"], wantPrev)
		}
		// hash is the hash of the ledger event that recorded the thought.
		rec, leaf := h.eventAt(uint64(d["seq"].(float64)))
		if rec.Type != events.TypeThoughtRecorded || ledger.LeafHash(rec.Raw).String() != d["hash"] || leaf.String() != d["hash"] {
			t.Errorf("%s hash %v: event %d is %s with hash %s, stored leaf %s", w.id, d["hash"], rec.Seq, rec.Type, ledger.LeafHash(rec.Raw), leaf)
		}
		var p events.ThoughtRecorded
		if err := decodeEvent(rec, &p); err != nil {
			t.Fatal(err)
		}
		if p.ThoughtID != w.id || float64(p.ChainPosition) != w.pos || (p.PreviousHash == "") != (wantPrev == nil) {
			t.Errorf("%s payload %+v", w.id, p)
		}
		if d["recorded_at"] != projections.FormatTime(rec.Time) {
			t.Errorf("%s recorded_at %v, event time %v", w.id, d["recorded_at"], rec.Time)
		}
	}
	// task_get's thought_trail is the chain.
	got := h.call("task_get", map[string]any{"task_id": "T-0001", "include_thought_trail": true}, "OK")["thought_trail"]
	if !reflect.DeepEqual(got, []any{"Θ-0001", "Θ-0003", "Θ-0004"}) {
		t.Errorf("thought_trail = %v", got)
	}
}

func TestThoughtList(t *testing.T) {
	h, th := thoughtFixture(t)
	for _, c := range []struct {
		args  map[string]any
		want  []int // indexes into th
		count float64
	}{
		{map[string]any{}, []int{0, 1, 2, 3, 4}, 5},
		{map[string]any{"task_id": "T-0001"}, []int{0, 2, 3}, 3},
		{map[string]any{"task_id": "T-0002"}, []int{1, 4}, 2},
		{map[string]any{"session_id": "A-0001"}, []int{0, 4}, 2},
		{map[string]any{"type": "plan"}, []int{0, 4}, 2},
		{map[string]any{"type": "blockers"}, []int{}, 0},
		{map[string]any{"task_id": "T-0001", "type": "decision"}, []int{2}, 1},
		{map[string]any{"task_id": "T-0002", "session_id": "A-0001"}, []int{4}, 1},
		{map[string]any{"limit": 2}, []int{0, 1}, 5},
		{map[string]any{"task_id": "T-0001", "limit": 1}, []int{0}, 3},
	} {
		d := h.call("thought_record_list", c.args, "OK")
		if d["thought_count"] != c.count {
			t.Errorf("%v: thought_count %v, want %v", c.args, d["thought_count"], c.count)
		}
		if d["task_id"] != c.args["task_id"] || d["session_id"] != c.args["session_id"] {
			t.Errorf("%v: echoes task_id %v session_id %v", c.args, d["task_id"], d["session_id"])
		}
		got := list(t, d["thoughts"])
		if len(got) != len(c.want) {
			t.Errorf("%v: %d thoughts, want %d", c.args, len(got), len(c.want))
			continue
		}
		for i, x := range got {
			row, rec := obj(t, x), th[c.want[i]]
			// Every field thought_record answered (seq included: CONTRACT.md
			// §1), and the content it was given.
			for f := range rec {
				if v, ok := row[f]; !ok || v != rec[f] {
					t.Errorf("%v: row %d %s = %v, recorded %v", c.args, i, f, row[f], rec[f])
				}
			}
		}
	}
	for _, args := range []map[string]any{{"verify_chain": true}, {"task_id": "T-0001", "verify_chain": true}, {"session_id": "A-0001", "verify_chain": true}} {
		d := h.call("thought_record_list", args, "OK")
		if d["chain_valid"] != true || !reflect.DeepEqual(d["invalid_links"], []any{}) {
			t.Errorf("%v on a healthy ledger: chain_valid %v invalid_links %v", args, d["chain_valid"], d["invalid_links"])
		}
	}
}

// TestTamperedThought changes one byte of a stored thought event in the
// bbolt file: the thought and the link of the next one on its task stop
// holding, and the ledger checks report it in their results.
func TestTamperedThought(t *testing.T) {
	h, th := thoughtFixture(t)
	h.call("merkle_finalize", map[string]any{"session_id": "A-0001"}, "OK")
	seq := uint64(th[2]["seq"].(float64))
	h.tamper(seq, flipIn(t, "alpha-two-original", "alpha-two-originaL"))
	rec, _ := h.eventAt(seq)
	tamperedHash := ledger.LeafHash(rec.Raw).String()

	for _, c := range []struct {
		args  map[string]any
		valid bool
		links []any
	}{
		{map[string]any{"task_id": "T-0001", "verify_chain": true}, false, []any{2.0, 3.0}},
		{map[string]any{"task_id": "T-0002", "verify_chain": true}, true, []any{}},
		{map[string]any{"verify_chain": true}, false, []any{2.0, 3.0}},
		{map[string]any{"session_id": "A-0001", "verify_chain": true}, true, []any{}},
		{map[string]any{"task_id": "T-0001", "type": "decision", "verify_chain": true}, false, []any{2.0}},
	} {
		d := h.call("thought_record_list", c.args, "OK")
		if d["chain_valid"] != c.valid || !reflect.DeepEqual(d["invalid_links"], c.links) {
			t.Errorf("%v: chain_valid %v invalid_links %v, want %v %v", c.args, d["chain_valid"], d["invalid_links"], c.valid, c.links)
		}
	}

	head := h.head()
	d := h.call("audit_verify_chain", map[string]any{}, "OK")
	broken := list(t, d["broken_links"])
	if d["chain_valid"] != false || len(broken) != 2 {
		t.Fatalf("audit_verify_chain = %v", d)
	}
	first, second := obj(t, broken[0]), obj(t, broken[1])
	if first["position"] != float64(seq) || first["expected_hash"] != th[2]["hash"] || first["actual_hash"] != tamperedHash {
		t.Errorf("first broken link %v, want position %d expected %v actual %s", first, seq, th[2]["hash"], tamperedHash)
	}
	// The next event still links to the original hash.
	if second["position"] != float64(seq+1) || second["expected_hash"] != tamperedHash || second["actual_hash"] != th[2]["hash"] {
		t.Errorf("second broken link %v, want position %d expected %s actual %v", second, seq+1, tamperedHash, th[2]["hash"])
	}
	if want := float64(100 * (head - 2) / head); d["integrity_score"] != want || d["total_records"] != float64(head) {
		t.Errorf("integrity_score %v total %v, want %v %d", d["integrity_score"], d["total_records"], want, head)
	}

	for _, c := range []struct {
		args   map[string]any
		valid  bool
		merkle any
	}{
		{map[string]any{"task_id": "T-0001"}, false, nil},
		{map[string]any{"task_id": "T-0002"}, true, nil},
		{map[string]any{"session_id": "A-0001"}, false, false},
		{map[string]any{"session_id": "A-0001", "full_trace": true}, false, false},
	} {
		d := h.call("audit_verify_chain", c.args, "OK")
		if d["chain_valid"] != c.valid || d["merkle_valid"] != c.merkle {
			t.Errorf("audit_verify_chain(%v): chain_valid %v merkle_valid %v, want %v %v", c.args, d["chain_valid"], d["merkle_valid"], c.valid, c.merkle)
		}
		if !c.valid {
			if b := obj(t, list(t, d["broken_links"])[0]); b["position"] != float64(seq) {
				t.Errorf("audit_verify_chain(%v): first broken link %v, want position %d", c.args, b, seq)
			}
			if d["integrity_score"].(float64) >= 100 {
				t.Errorf("audit_verify_chain(%v): integrity_score %v", c.args, d["integrity_score"])
			}
		}
		if c.args["full_trace"] == true {
			for _, x := range list(t, d["hashes"]) {
				e := obj(t, x)
				if e["seq"] == float64(seq) && e["hash"] != tamperedHash {
					t.Errorf("full_trace hash of seq %d = %v, want the recomputed %s", seq, e["hash"], tamperedHash)
				}
			}
		}
	}
}

// TestMalformedEvent: an event whose stored bytes no longer parse is a
// broken link in the result, never a failed call.
func TestMalformedEvent(t *testing.T) {
	h, th := thoughtFixture(t)
	h.call("merkle_finalize", map[string]any{"session_id": "A-0001"}, "OK")
	seq := uint64(th[2]["seq"].(float64))
	h.tamper(seq, func(raw []byte) []byte { return raw[:len(raw)/2] })
	for _, args := range []map[string]any{
		{},
		{"full_trace": true},
		{"task_id": "T-0001", "full_trace": true},
		{"session_id": "A-0001"},
	} {
		d := h.call("audit_verify_chain", args, "OK")
		if d["chain_valid"] != false || obj(t, list(t, d["broken_links"])[0])["position"] != float64(seq) {
			t.Errorf("audit_verify_chain(%v) = %v", args, d)
		}
		if args["session_id"] != nil && d["merkle_valid"] != false {
			t.Errorf("audit_verify_chain(%v): merkle_valid %v, want false", args, d["merkle_valid"])
		}
	}
	d := h.call("thought_record_list", map[string]any{"task_id": "T-0001", "verify_chain": true}, "OK")
	if d["chain_valid"] != false || !reflect.DeepEqual(d["invalid_links"], []any{2.0, 3.0}) {
		t.Errorf("thought_record_list verify: %v %v", d["chain_valid"], d["invalid_links"])
	}
}

// TestThoughtChainsToDamagedEvent: a new thought never chains to a thought
// whose event no longer reads (the projection keeps only its seq, so its
// hash is gone): thought_record on that task answers ERR_STORAGE and
// records no thought, while other tasks' chains go on.
func TestThoughtChainsToDamagedEvent(t *testing.T) {
	h, th := thoughtFixture(t)
	seq := uint64(th[4]["seq"].(float64)) // T-0002's last thought
	h.tamper(seq, func(raw []byte) []byte { return raw[:len(raw)/2] })
	before := h.head()
	_, err := h.svc.Do(t.Context(), Call{Name: "thought_record", Command: RecordThought, Args: []byte(`{"task_id":"T-0002","type":"plan","content":"beta-three"}`), Encode: testEncode})
	var se *StorageError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "damaged") {
		t.Errorf("thought_record after a damaged last thought: %v, want ERR_STORAGE naming the damage", err)
	}
	if got := h.head(); got != before {
		t.Errorf("head %d after a refused thought_record, want %d (nothing written)", got, before)
	}
	d := h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "plan", "content": "alpha-four"}, "OK")
	if d["chain_position"] != 4.0 || d["previous_hash"] != th[3]["hash"] {
		t.Errorf("T-0001's next thought: position %v previous %v, want 4 and %v", d["chain_position"], d["previous_hash"], th[3]["hash"])
	}
}

// TestTrailAndPageOfLongChain: on a task of more thoughts than a chain
// block holds, and beside another task's thoughts, task_get's trail (read
// from the projection alone) is the chain's ids in order, as
// thought_record_list lists them, and as of a seq only those recorded by
// then; thought_record_list by task counts every thought of the chain and
// lists the first limit of them, whole, as the list of all of them does.
func TestTrailAndPageOfLongChain(t *testing.T) {
	h := newHarness(t, Options{})
	task := h.call("task_create", map[string]any{"title": "long", "project": "p"}, "OK")["task_id"].(string)
	other := h.call("task_create", map[string]any{"title": "other", "project": "p"}, "OK")["task_id"].(string)
	var ids []string
	var seqs []float64
	for i := range 300 {
		if i%7 == 0 {
			h.call("thought_record", map[string]any{"task_id": other, "type": "plan", "content": "beside"}, "OK")
		}
		d := h.call("thought_record", map[string]any{"task_id": task, "type": "analysis", "content": strings.Repeat("x", i+1)}, "OK")
		ids, seqs = append(ids, d["thought_id"].(string)), append(seqs, d["seq"].(float64))
	}
	trail := func(args map[string]any) []string {
		args["task_id"], args["include_thought_trail"] = task, true
		var got []string
		for _, id := range list(t, h.call("task_get", args, "OK")["thought_trail"]) {
			got = append(got, id.(string))
		}
		return got
	}
	if got := trail(map[string]any{}); !reflect.DeepEqual(got, ids) {
		t.Errorf("trail = %v, want %v", got, ids)
	}
	if got := trail(map[string]any{"as_of_seq": seqs[149]}); !reflect.DeepEqual(got, ids[:150]) {
		t.Errorf("trail as of the 150th thought's seq = %v, want %v", got, ids[:150])
	}
	all := h.call("thought_record_list", map[string]any{"task_id": task, "limit": 500}, "OK")
	for _, limit := range []int{1, 100, 299, 300, 500} {
		page := h.call("thought_record_list", map[string]any{"task_id": task, "limit": limit}, "OK")
		want := list(t, all["thoughts"])[:min(limit, 300)]
		if page["thought_count"] != 300.0 || !reflect.DeepEqual(list(t, page["thoughts"]), want) {
			t.Errorf("limit %d: count %v, %d thoughts; want 300 and the first %d of all", limit, page["thought_count"], len(list(t, page["thoughts"])), len(want))
		}
	}
	for i, th := range list(t, all["thoughts"]) {
		if id := obj(t, th)["thought_id"]; id != ids[i] {
			t.Fatalf("thought %d listed is %v, want %s", i, id, ids[i])
		}
	}
	if got := h.call("thought_record_list", map[string]any{"task_id": task, "type": "plan", "limit": 1}, "OK")["thought_count"]; got != 0.0 {
		t.Errorf("plans on the task: %v, want 0", got)
	}
}

// Without a task, every thought is counted and the first limit listed, in
// ledger order, whichever way the list reads them: only the page's from
// their events (no filter), or every one (a type to match).
func TestListAllThoughtsPage(t *testing.T) {
	h := newHarness(t, Options{Agent: "a"})
	h.call("task_create", map[string]any{"title": "one", "project": "p"}, "OK")
	h.call("task_create", map[string]any{"title": "two", "project": "p"}, "OK")
	for i := range 5 {
		h.call("thought_record", map[string]any{"task_id": fmt.Sprintf("T-%04d", 1+i%2), "type": "analysis", "content": fmt.Sprintf("thought %d", i)}, "OK")
	}
	for _, args := range []map[string]any{{"limit": 2}, {"limit": 2, "type": "analysis"}, {"limit": 10}, {}} {
		d := h.call("thought_record_list", args, "OK")
		want := 5
		if l, ok := args["limit"].(int); ok {
			want = min(l, 5)
		}
		got := list(t, d["thoughts"])
		if d["thought_count"] != 5.0 || len(got) != want {
			t.Fatalf("%v: count %v, %d listed; want 5 and %d", args, d["thought_count"], len(got), want)
		}
		for i, th := range got {
			if m := obj(t, th); m["thought_id"] != fmt.Sprintf("Θ-%04d", i+1) || m["content"] != fmt.Sprintf("thought %d", i) {
				t.Errorf("%v: thought %d is %v", args, i, m)
			}
		}
	}
}

package commands

import (
	"encoding/json"
	"math/bits"
	"reflect"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// refLeaf is a session leaf chosen by CONTRACT.md §5's rule, computed
// from the events and the arguments the test sent, not from projections.
type refLeaf struct {
	Seq   uint64
	Hash  ledger.Hash
	Tasks []string // the tasks the event concerns
}

// refLeaves selects the leaves of session id by the contract's rule over
// the events up to and including upTo:
//
//   - its own start event, always first;
//   - then, until its finalization, the events that change a task in scope
//     or a thought on it (task.created, task.updated, thought.recorded),
//     the tool.called events whose arguments name a task in scope, and the
//     thoughts recorded with its session_id.
//
// In scope is the session's task, and with scope deep its descendants.
func (h *harness) refLeaves(id string, upTo uint64) []refLeaf {
	h.t.Helper()
	parent := map[string]string{}
	var task, scope string
	started := false
	calls := 0
	var leaves []refLeaf
	inScope := func(t string) bool {
		for ; t != ""; t = parent[t] {
			if t == task {
				return true
			}
			if scope != "deep" {
				return false
			}
		}
		return false
	}
	for _, r := range h.events() {
		if r.Seq > upTo {
			break
		}
		var concerned []string // tasks the event concerns
		own := false
		switch r.Type {
		case events.TypeTaskCreated:
			var p events.TaskCreated
			decodeEvent(r, &p)
			parent[p.TaskID] = p.ParentID
			concerned = []string{p.TaskID}
		case events.TypeTaskUpdated:
			var p events.TaskUpdated
			decodeEvent(r, &p)
			concerned = []string{p.TaskID}
		case events.TypeThoughtRecorded:
			var p events.ThoughtRecorded
			decodeEvent(r, &p)
			concerned, own = []string{p.TaskID}, p.SessionID == id
		case events.TypeSessionStarted:
			var p events.SessionStarted
			decodeEvent(r, &p)
			if p.SessionID == id {
				task, scope, started = p.TaskID, p.Scope, true
				leaves = append(leaves, refLeaf{r.Seq, ledger.LeafHash(r.Raw), []string{p.TaskID}})
				continue
			}
		case events.TypeSessionFinalized:
			var p events.SessionFinalized
			decodeEvent(r, &p)
			if p.SessionID == id {
				return leaves
			}
		case projections.TypeToolCalled:
			var args map[string]any
			json.Unmarshal(h.sent[calls].Args, &args)
			calls++
			for _, k := range []string{"task_id", "parent_id"} {
				if s, ok := args[k].(string); ok {
					if _, valid := domain.ParseID(domain.TaskPrefix, s); valid {
						concerned = append(concerned, s)
					}
				}
			}
		}
		if !started {
			continue
		}
		leaf := own
		for _, t := range concerned {
			leaf = leaf || inScope(t)
		}
		if leaf {
			leaves = append(leaves, refLeaf{r.Seq, ledger.LeafHash(r.Raw), concerned})
		}
	}
	return leaves
}

// leafHashes are the hashes of the leaves a finalize for task seals: all of
// them for "", else the session's start event (the first leaf) and the
// leaves that concern task.
func leafHashes(leaves []refLeaf, task string) []ledger.Hash {
	var hs []ledger.Hash
	for i, l := range leaves {
		if i == 0 && task != "" {
			hs = append(hs, l.Hash)
			continue
		}
		for _, t := range l.Tasks {
			if task == "" || t == task {
				hs = append(hs, l.Hash)
				break
			}
		}
	}
	return hs
}

func leafSeqs(leaves []refLeaf) []any {
	seqs := []any{}
	for _, l := range leaves {
		seqs = append(seqs, float64(l.Seq))
	}
	return seqs
}

// wantRoot checks merkle_root of an open session against the rule.
func (h *harness) wantRoot(t *testing.T, step, id string) string {
	t.Helper()
	want := h.refLeaves(id, h.head())
	d := h.call("merkle_root", map[string]any{"session_id": id}, "OK")
	root := naiveRoot(leafHashes(want, "")).String()
	if d["merkle_root"] != root || d["leaf_count"] != float64(len(want)) || d["is_finalized"] != false {
		t.Errorf("%s: merkle_root(%s) = %v over %v leaves, want %s over %d leaves (seqs %v)", step, id, d["merkle_root"], d["leaf_count"], root, len(want), leafSeqs(want))
	}
	return root
}

func TestSessionLeaves(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "root", "project": "p"}, "OK")                         // T-0001
	h.call("task_create", map[string]any{"title": "child", "project": "p", "parent_id": "T-0001"}, "OK") // T-0002
	h.call("task_create", map[string]any{"title": "grand", "project": "p", "parent_id": "T-0002"}, "OK") // T-0003
	h.call("task_create", map[string]any{"title": "other", "project": "p"}, "OK")                        // T-0004
	d := h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "aud"}, "OK")
	if d["session_id"] != "A-0001" || d["scope"] != "shallow" {
		t.Fatalf("start = %v", d)
	}
	d = h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "aud", "scope": "deep", "reason": "r"}, "OK")
	if d["session_id"] != "A-0002" || d["scope"] != "deep" {
		t.Fatalf("start = %v", d)
	}
	roots := map[string][]string{}
	check := func(step string) {
		for _, s := range []string{"A-0001", "A-0002"} {
			roots[s] = append(roots[s], h.wantRoot(t, step, s))
		}
	}
	check("started")
	steps := []struct {
		name, tool string
		args       map[string]any
		code       string
	}{
		{"update root", "task_update", map[string]any{"task_id": "T-0001", "progress": 10}, "OK"},
		{"update child", "task_update", map[string]any{"task_id": "T-0002", "status": "todo"}, "OK"},
		{"thought on grandchild", "thought_record", map[string]any{"task_id": "T-0003", "type": "plan", "content": "g"}, "OK"},
		{"thought elsewhere, in A-0001", "thought_record", map[string]any{"task_id": "T-0004", "type": "plan", "content": "o", "session_id": "A-0001"}, "OK"},
		{"read root", "task_get", map[string]any{"task_id": "T-0001"}, "OK"},
		{"read grandchild", "task_get", map[string]any{"task_id": "T-0003"}, "OK"},
		{"read other", "task_get", map[string]any{"task_id": "T-0004"}, "OK"},
		{"rejected update of root", "task_update", map[string]any{"task_id": "T-0001", "status": "done"}, "ERR_INVALID_TRANSITION"},
		{"new grandchild", "task_create", map[string]any{"title": "g2", "project": "p", "parent_id": "T-0002"}, "OK"},
		{"thought elsewhere, in A-0002", "thought_record", map[string]any{"task_id": "T-0004", "type": "risk", "content": "o2", "session_id": "A-0002"}, "OK"},
		{"unknown task", "task_get", map[string]any{"task_id": "T-0099"}, "ERR_TASK_NOT_FOUND"},
		{"list", "task_list", map[string]any{}, "OK"},
		{"session on the child", "audit_session_start", map[string]any{"task_id": "T-0002", "auditor_id": "other"}, "OK"},
	}
	for _, s := range steps {
		h.call(s.tool, s.args, s.code)
		check(s.name)
	}
	// The root moves exactly when a leaf is added.
	for _, s := range []string{"A-0001", "A-0002"} {
		changes := 0
		for i := 1; i < len(roots[s]); i++ {
			if roots[s][i] != roots[s][i-1] {
				changes++
			}
		}
		if want := map[string]int{"A-0001": 4, "A-0002": 9}[s]; changes != want {
			t.Errorf("%s: root changed %d times over %d steps, want %d", s, changes, len(steps), want)
		}
	}

	// Finalize A-0001.
	size := h.head() + 1
	want := h.refLeaves("A-0001", h.head())
	fin := h.call("merkle_finalize", map[string]any{"session_id": "A-0001"}, "OK")
	finRec, _ := h.eventAt(size)
	all := h.refAll()
	wantFin := map[string]any{
		"session_id": "A-0001", "merkle_root": naiveRoot(leafHashes(want, "")).String(),
		"tree_depth": float64(bits.Len(uint(len(want) - 1))), "leaf_count": float64(len(want)),
		"first_seq": float64(want[0].Seq), "last_seq": float64(want[len(want)-1].Seq),
		"finalized_at": projections.FormatTime(finRec.Time), "frozen": true,
		"ledger_size": float64(size), "ledger_root": naiveRoot(all[:size]).String(),
	}
	if !reflect.DeepEqual(fin, wantFin) {
		t.Errorf("merkle_finalize = %v\nwant %v", fin, wantFin)
	}
	if finRec.Type != events.TypeSessionFinalized {
		t.Errorf("event %d is %s", size, finRec.Type)
	}
	// Every leaf is provably in the ledger of that size, under ledger_root.
	root, _ := ledger.ParseHash(fin["ledger_root"].(string))
	h.l.View(func(tx *boltstore.Tx) error {
		if got, _ := tx.Root(size); got != root {
			t.Errorf("ledger Root(%d) = %s, ledger_root %s", size, got, root)
		}
		for _, l := range want {
			proof, err := tx.InclusionProof(l.Seq, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := ledger.VerifyInclusion(l.Hash, l.Seq-1, size, proof, root); err != nil {
				t.Errorf("leaf %d: %v", l.Seq, err)
			}
		}
		return nil
	})

	// Frozen: more events on its task change nothing.
	frozen := map[string]any{"session_id": "A-0001", "merkle_root": fin["merkle_root"], "leaf_count": fin["leaf_count"],
		"is_finalized": true, "as_of": fin["finalized_at"], "as_of_seq": fin["ledger_size"]}
	for _, s := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"merkle_root", nil, "OK"},
		{"task_update", map[string]any{"task_id": "T-0001", "progress": 20}, "OK"},
		{"thought_record", map[string]any{"task_id": "T-0001", "type": "plan", "content": "late"}, "OK"},
		{"thought_record", map[string]any{"task_id": "T-0001", "type": "plan", "content": "late", "session_id": "A-0001"}, "ERR_ALREADY_FINALIZED"},
		{"merkle_finalize", map[string]any{"session_id": "A-0001"}, "ERR_ALREADY_FINALIZED"},
		{"task_get", map[string]any{"task_id": "T-0001"}, "OK"},
	} {
		if s.args != nil {
			h.call(s.tool, s.args, s.code)
		}
		if got := h.call("merkle_root", map[string]any{"session_id": "A-0001"}, "OK"); !reflect.DeepEqual(got, frozen) {
			t.Errorf("after %s: merkle_root = %v, want the frozen %v", s.tool, got, frozen)
		}
	}
	h.wantRoot(t, "after A-0001 finalized", "A-0002")

	// audit_verify_chain on the finalized session.
	d = h.call("audit_verify_chain", map[string]any{"session_id": "A-0001", "full_trace": true}, "OK")
	var hashes []any
	for _, l := range want {
		hashes = append(hashes, map[string]any{"seq": float64(l.Seq), "hash": l.Hash.String()})
	}
	if d["chain_valid"] != true || d["merkle_valid"] != true || d["integrity_score"] != 100.0 ||
		d["total_records"] != float64(len(want)) || !reflect.DeepEqual(d["hashes"], hashes) {
		t.Errorf("audit_verify_chain(A-0001) = %v", d)
	}
	d = h.call("audit_verify_chain", map[string]any{"session_id": "A-0002"}, "OK")
	if _, ok := d["merkle_valid"]; ok || d["chain_valid"] != true {
		t.Errorf("audit_verify_chain on an open session: %v", d)
	}

	// Finalize A-0002 for one task of its scope only.
	// (T-0004, outside the scope, has a leaf in A-0002: a thought with its
	// id; finalizing for it is TestFinalizeOutOfScopeThought's case.)
	h.call("merkle_finalize", map[string]any{"session_id": "A-0002", "task_id": "T-0099"}, "ERR_TASK_NOT_FOUND")
	want = h.refLeaves("A-0002", h.head())
	fin = h.call("merkle_finalize", map[string]any{"session_id": "A-0002", "task_id": "T-0002"}, "OK")
	only := leafHashes(want, "T-0002")
	onlySeqs := []uint64{want[0].Seq}
	for _, l := range want[1:] {
		for _, tk := range l.Tasks {
			if tk == "T-0002" {
				onlySeqs = append(onlySeqs, l.Seq)
				break
			}
		}
	}
	if fin["merkle_root"] != naiveRoot(only).String() || fin["leaf_count"] != float64(len(only)) ||
		fin["first_seq"] != float64(onlySeqs[0]) || fin["last_seq"] != float64(onlySeqs[len(onlySeqs)-1]) {
		t.Errorf("merkle_finalize(A-0002, T-0002) = %v, want root %s over %d leaves %v", fin, naiveRoot(only), len(only), onlySeqs)
	}
	for _, args := range []map[string]any{{"session_id": "A-0002"}, {"session_id": "A-0002", "task_id": "T-0002"}, {"session_id": "A-0002", "task_id": "T-0003"}} {
		d := h.call("audit_verify_chain", args, "OK")
		if d["merkle_valid"] != true || d["chain_valid"] != true {
			t.Errorf("audit_verify_chain(%v) = %v, want merkle_valid true", args, d)
		}
	}
}

// TestVerifyChainTrace checks full_trace hashes for the whole ledger and
// for a task against the events themselves.
func TestVerifyChainTrace(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "a", "project": "p"}, "OK")
	h.call("task_create", map[string]any{"title": "b", "project": "p", "parent_id": "T-0001"}, "OK")
	h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "plan", "content": "c"}, "OK")
	h.call("task_update", map[string]any{"task_id": "T-0001", "status": "todo"}, "OK")
	h.call("task_update", map[string]any{"task_id": "T-0002", "status": "todo"}, "OK")
	h.call("task_get", map[string]any{"task_id": "T-0001"}, "OK")

	head := h.head()
	d := h.call("audit_verify_chain", map[string]any{"full_trace": true}, "OK")
	var all, task []any
	for _, r := range h.events()[:head] {
		e := map[string]any{"seq": float64(r.Seq), "hash": ledger.LeafHash(r.Raw).String()}
		all = append(all, e)
		var p struct {
			TaskID string `json:"task_id"`
		}
		var th events.ThoughtRecorded // an array of its fields
		switch r.Type {
		case events.TypeTaskCreated, events.TypeTaskUpdated:
			decodeEvent(r, &p)
		case events.TypeThoughtRecorded:
			decodeEvent(r, &th)
			p.TaskID = th.TaskID
		}
		if p.TaskID == "T-0001" {
			task = append(task, e)
		}
	}
	if d["total_records"] != float64(head) || !reflect.DeepEqual(d["hashes"], all) || d["chain_valid"] != true {
		t.Errorf("audit_verify_chain(full_trace) = %v\nwant hashes %v", d, all)
	}
	d = h.call("audit_verify_chain", map[string]any{"task_id": "T-0001", "full_trace": true}, "OK")
	if d["total_records"] != float64(len(task)) || !reflect.DeepEqual(d["hashes"], task) || d["chain_valid"] != true {
		t.Errorf("audit_verify_chain(T-0001, full_trace) = %v\nwant hashes %v", d, task)
	}
}

// refAll is the hash of every event, in order.
func (h *harness) refAll() []ledger.Hash {
	var hs []ledger.Hash
	for _, r := range h.events() {
		hs = append(hs, ledger.LeafHash(r.Raw))
	}
	return append([]ledger.Hash{{}}, hs...)[1:]
}

// TestFinalizeScope: merkle_finalize and audit_verify_chain take a task_id
// with a session only if the task is in the session's scope, finalized or
// not. audit_verify_chain once answered the start event alone (the one
// leaf every task_id selects) for a task outside it.
func TestFinalizeScope(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "root", "project": "p"}, "OK")                         // T-0001
	h.call("task_create", map[string]any{"title": "child", "project": "p", "parent_id": "T-0001"}, "OK") // T-0002
	h.call("task_create", map[string]any{"title": "grand", "project": "p", "parent_id": "T-0002"}, "OK") // T-0003
	h.call("task_create", map[string]any{"title": "other", "project": "q"}, "OK")                        // T-0004
	for _, c := range []struct {
		task, scope, filter, code string
	}{
		{"T-0002", "shallow", "T-0002", "OK"},
		{"T-0002", "shallow", "T-0003", "ERR_INVALID_INPUT"},
		{"T-0002", "shallow", "T-0001", "ERR_INVALID_INPUT"},
		{"T-0002", "deep", "T-0003", "OK"},
		{"T-0002", "deep", "T-0002", "OK"},
		{"T-0002", "deep", "T-0001", "ERR_INVALID_INPUT"},
		{"T-0002", "deep", "T-0004", "ERR_INVALID_INPUT"},
		{"T-0001", "deep", "T-0003", "OK"},
	} {
		id := h.call("audit_session_start", map[string]any{"task_id": c.task, "auditor_id": "a", "scope": c.scope}, "OK")["session_id"]
		h.call("task_update", map[string]any{"task_id": "T-0003", "progress": len(h.sent)}, "OK")
		verify := func(when string) {
			o := h.do("audit_verify_chain", map[string]any{"session_id": id, "task_id": c.filter})
			if o.Code != c.code {
				t.Errorf("%s session on %s, verify %s for %s: %s, want %s", c.scope, c.task, when, c.filter, o.Code, c.code)
			} else if c.code != "OK" {
				if got := issuePaths(o.Err); !reflect.DeepEqual(got, []string{"task_id"}) {
					t.Errorf("verify: issue paths %v", got)
				}
			}
		}
		verify("before finalize")
		o := h.do("merkle_finalize", map[string]any{"session_id": id, "task_id": c.filter})
		if o.Code != c.code {
			t.Errorf("%s session on %s, finalize for %s: %s, want %s", c.scope, c.task, c.filter, o.Code, c.code)
		}
		if c.code != "OK" {
			if got := issuePaths(o.Err); !reflect.DeepEqual(got, []string{"task_id"}) {
				t.Errorf("issue paths %v", got)
			}
			h.call("merkle_finalize", map[string]any{"session_id": id}, "OK")
		}
		verify("after finalize")
	}
}

// TestFinalizeOutOfScopeThought: merkle_finalize's task_id follows
// audit_verify_chain's rule. A thought recorded with a session_id on a task
// outside the session's scope is a leaf of the session concerning that task,
// so finalizing for that task seals the start event and that thought (it was
// refused ERR_INVALID_INPUT, "not in the scope"); a task with no leaf in the
// session and outside the scope is still refused, with nothing written, and
// an unknown one is ERR_TASK_NOT_FOUND.
func TestFinalizeOutOfScopeThought(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "in scope", "project": "p"}, "OK")  // T-0001
	h.call("task_create", map[string]any{"title": "elsewhere", "project": "p"}, "OK") // T-0002
	h.call("task_create", map[string]any{"title": "untouched", "project": "p"}, "OK") // T-0003
	id := h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "a"}, "OK")["session_id"].(string)
	h.call("thought_record", map[string]any{"task_id": "T-0002", "type": "analysis", "content": "looked at it", "session_id": id}, "OK")
	h.call("task_update", map[string]any{"task_id": "T-0001", "progress": 5}, "OK")
	for task, code := range map[string]string{"T-0003": "ERR_INVALID_INPUT", "T-0099": "ERR_TASK_NOT_FOUND"} {
		o := h.do("merkle_finalize", map[string]any{"session_id": id, "task_id": task})
		if o.Code != code {
			t.Errorf("finalize for %s: %s %v, want %s", task, o.Code, o.Reply, code)
		}
	}
	want := leafHashes(h.refLeaves(id, h.head()), "T-0002")
	got := h.call("merkle_finalize", map[string]any{"session_id": id, "task_id": "T-0002"}, "OK")
	if len(want) != 2 || got["leaf_count"] != float64(2) || got["merkle_root"] != naiveRoot(want).String() {
		t.Errorf("finalize for the thought's task: %v, want 2 leaves (the start, the thought), root %s", got, naiveRoot(want))
	}
	v := h.call("audit_verify_chain", map[string]any{"session_id": id}, "OK")
	if v["chain_valid"] != true || v["merkle_valid"] != true {
		t.Errorf("verify after: %v", v)
	}
}

// TestVerifyChainOutOfScopeThought: a thought recorded with a session_id
// on a task outside the session's scope (which thought_record allows) is a
// leaf of the session concerning that task, and audit_verify_chain with
// the session and that task verifies it (and the start event); a task
// with no leaf in the session beyond its start event is refused, as one
// outside the scope was.
func TestVerifyChainOutOfScopeThought(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "in scope", "project": "p"}, "OK")  // T-0001
	h.call("task_create", map[string]any{"title": "elsewhere", "project": "p"}, "OK") // T-0002
	h.call("task_create", map[string]any{"title": "untouched", "project": "p"}, "OK") // T-0003
	id := h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "a"}, "OK")["session_id"]
	h.call("thought_record", map[string]any{"task_id": "T-0002", "type": "analysis", "content": "looked at it", "session_id": id}, "OK")
	for _, when := range []string{"before finalize", "after finalize"} {
		got := h.call("audit_verify_chain", map[string]any{"session_id": id, "task_id": "T-0002"}, "OK")
		if got["chain_valid"] != true || got["total_records"] != float64(2) {
			t.Errorf("%s: verify the thought's task in the session: %v, want valid, 2 records (the start, the thought)", when, got)
		}
		o := h.do("audit_verify_chain", map[string]any{"session_id": id, "task_id": "T-0003"})
		if o.Code != "ERR_INVALID_INPUT" || !reflect.DeepEqual(issuePaths(o.Err), []string{"task_id"}) {
			t.Errorf("%s: verify a task with no leaf in the session: %s %v, want ERR_INVALID_INPUT at task_id", when, o.Code, o.Reply)
		}
		if when == "before finalize" {
			h.call("merkle_finalize", map[string]any{"session_id": id}, "OK")
		}
	}
}

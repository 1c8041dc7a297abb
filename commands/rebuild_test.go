package commands

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	bolt "go.etcd.io/bbolt"
)

// scenario makes n random calls across all tools, valid and invalid, with
// ids drawn from what earlier calls created. It fails on ERR_INTERNAL.
func scenario(t *testing.T, h *harness, seed uint64, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	projects := []string{"alpha", "beta", "gamma"}
	words := []string{"parser", "Ledger", "merkle", "fix", "write", "docs", "agent", "audit", "tree", "proof"}
	priorities := []string{"low", "normal", "high", "critical"}
	types := []string{"plan", "analysis", "decision", "reflection", "discovery", "risk", "blockers"}
	var tasks, sessions []string
	status := map[string]string{} // last known status of each task
	oneOf := func(list []string) string { return list[r.IntN(len(list))] }
	chance := func(p float64) bool { return r.Float64() < p }
	text := func() string {
		var ws []string
		for range 1 + r.IntN(4) {
			ws = append(ws, oneOf(words))
		}
		return strings.Join(ws, " ")
	}
	task := func() string {
		if len(tasks) == 0 || chance(0.05) {
			return "T-0999"
		}
		return oneOf(tasks)
	}
	session := func() string {
		if len(sessions) == 0 || chance(0.05) {
			return "A-0999"
		}
		return oneOf(sessions)
	}
	codes := map[string]int{}
	for i := 0; i < n; i++ {
		var tool string
		args := map[string]any{}
		switch k := r.IntN(16); {
		case k < 3 || len(tasks) < 3:
			tool = "task_create"
			args["title"], args["project"] = text(), oneOf(projects)
			if chance(0.05) {
				args["title"] = "  "
			}
			if chance(0.3) {
				args["parent_id"] = task()
			}
			if chance(0.5) {
				args["priority"] = oneOf(priorities)
			}
			if chance(0.3) {
				args["labels"] = []string{oneOf(words), oneOf(words)}
			}
			if chance(0.3) {
				args["assignee"] = oneOf([]string{"ann", "bob"})
			}
			if chance(0.2) {
				args["estimate_hours"] = float64(r.IntN(40)) / 4
			}
			if chance(0.3) {
				args["description"] = text()
			}
		case k < 6:
			tool = "task_update"
			id := task()
			args["task_id"] = id
			if chance(0.6) {
				st := oneOf(allStates)
				if next := contractTransitions[status[id]]; len(next) > 0 && chance(0.6) {
					st = oneOf(next) // mostly moves the state machine forward
				}
				args["status"] = st
				if st == "blocked" && chance(0.8) {
					args["blocked_reason"] = text()
				}
			}
			if chance(0.25) {
				args["progress"] = r.IntN(101)
			}
			if chance(0.1) {
				args["title"] = oneOf([]string{text(), " "})
			}
			if chance(0.1) {
				args["labels"] = []string{oneOf(words)}
			}
			if chance(0.1) {
				args["priority"] = oneOf(priorities)
			}
			if chance(0.05) {
				args["blocked_reason"] = text()
			}
		case k < 8:
			tool = "thought_record"
			args["task_id"], args["type"], args["content"] = task(), oneOf(types), text()
			if chance(0.05) {
				args["content"] = "\t "
			}
			if chance(0.3) {
				args["session_id"] = session()
			}
			if chance(0.1) {
				args["metadata"] = map[string]any{"n": r.IntN(9)}
			}
		case k == 8:
			tool = "task_get"
			args["task_id"] = task()
			args["include_thought_trail"], args["include_dependents"] = chance(0.5), chance(0.5)
			if chance(0.3) {
				args["as_of_seq"] = r.IntN(int(h.head()) + 3)
			}
		case k == 9:
			tool = "task_list"
			if chance(0.3) {
				args["project"] = oneOf(projects)
			}
			if chance(0.3) {
				args["status"] = []string{oneOf(allStates), oneOf(allStates)}
			}
			if chance(0.2) {
				args["search"] = oneOf(words)
			}
			if chance(0.3) {
				args["sort_by"] = oneOf([]string{"created", "updated", "priority", "progress"})
			}
			if chance(0.3) {
				args["sort_order"] = oneOf([]string{"asc", "desc"})
			}
			if chance(0.2) {
				args["limit"], args["offset"] = 1+r.IntN(5), r.IntN(5)
			}
		case k == 10:
			tool = "task_next_actions"
			if chance(0.5) {
				args["project"] = oneOf(append(projects, "nope"))
			}
			args["include_blocked"] = chance(0.5)
		case k == 11:
			tool = "thought_record_list"
			if chance(0.4) {
				args["task_id"] = task()
			}
			if chance(0.3) {
				args["session_id"] = session()
			}
			if chance(0.2) {
				args["type"] = oneOf(types)
			}
			args["verify_chain"] = chance(0.5)
		case k == 12:
			tool = "audit_session_start"
			args["task_id"], args["auditor_id"] = task(), "aud"
			if chance(0.5) {
				args["scope"] = oneOf([]string{"shallow", "deep"})
			}
		case k == 13:
			tool = "merkle_finalize"
			args["session_id"] = session()
			if chance(0.3) {
				args["task_id"] = task()
			}
		case k == 14:
			tool = oneOf([]string{"merkle_root", "audit_verify_chain"})
			if tool == "merkle_root" || chance(0.5) {
				args["session_id"] = session()
			} else if chance(0.5) {
				args["task_id"] = task()
			}
		default:
			tool = oneOf([]string{"server_ping", "server_health", "skill_list"})
		}
		o := h.do(tool, args)
		codes[o.Code]++
		if o.Code == "ERR_INTERNAL" {
			raw, _ := json.Marshal(args)
			t.Fatalf("call %d %s(%s) = ERR_INTERNAL (%v)", i, tool, raw, o.Err)
		}
		if o.Code == "OK" {
			if id, ok := o.Data["task_id"].(string); ok && tool == "task_create" {
				tasks = append(tasks, id)
			}
			if id, ok := o.Data["task_id"].(string); ok && (tool == "task_create" || tool == "task_update") {
				status[id] = o.Data["status"].(string)
			}
			if id, ok := o.Data["session_id"].(string); ok && tool == "audit_session_start" {
				sessions = append(sessions, id)
			}
		}
	}
	if n >= 200 && (codes["OK"] < n/3 || len(codes) < 8) {
		t.Errorf("outcomes %v: want a mix of successes and failures", codes)
	}
	t.Logf("seed %d: %d tasks, %d sessions, outcomes %v", seed, len(tasks), len(sessions), codes)
}

// readPass asks every read tool about everything in the ledger, in an
// order that keeps the answers independent of the events the pass itself
// appends (merkle roots first, before task_get calls add leaves to open
// sessions), and returns the replies with the fields that depend on the
// wall clock, the call's own duration or the file path masked.
func readPass(t *testing.T, h *harness) []string {
	t.Helper()
	var tasks, sessions []string
	h.l.View(func(tx *boltstore.Tx) error {
		projections.Tasks(tx, func(tk projections.Task) bool { tasks = append(tasks, tk.ID); return true })
		for n := uint64(1); ; n++ {
			id := domain.FormatID(domain.SessionPrefix, n)
			if _, ok, _ := projections.GetSession(tx, id); !ok {
				break
			}
			sessions = append(sessions, id)
		}
		return nil
	})
	type q struct {
		tool string
		args map[string]any
	}
	var qs []q
	qs = append(qs, q{"server_ping", nil}, q{"skill_list", nil})
	for _, s := range sessions {
		qs = append(qs, q{"merkle_root", map[string]any{"session_id": s}},
			q{"audit_verify_chain", map[string]any{"session_id": s, "full_trace": true}},
			q{"thought_record_list", map[string]any{"session_id": s, "verify_chain": true}})
	}
	qs = append(qs, q{"thought_record_list", map[string]any{"verify_chain": true, "limit": 500}},
		q{"task_next_actions", map[string]any{"include_blocked": true, "limit": 100}})
	for _, p := range []string{"alpha", "beta", "gamma"} {
		qs = append(qs, q{"task_next_actions", map[string]any{"project": p, "include_blocked": true}})
	}
	for _, by := range []string{"created", "updated", "priority", "progress"} {
		for _, order := range []string{"asc", "desc"} {
			qs = append(qs, q{"task_list", map[string]any{"sort_by": by, "sort_order": order, "limit": 500}})
		}
	}
	qs = append(qs, q{"task_list", map[string]any{"search": "parser", "status": []string{"todo", "backlog"}}},
		q{"audit_verify_chain", map[string]any{}})
	for _, id := range tasks {
		qs = append(qs, q{"task_get", map[string]any{"task_id": id, "include_thought_trail": true, "include_dependents": true}},
			q{"thought_record_list", map[string]any{"task_id": id, "verify_chain": true}},
			q{"audit_verify_chain", map[string]any{"task_id": id, "full_trace": true}})
	}
	qs = append(qs, q{"server_health", nil})
	var out []string
	for _, c := range qs {
		if c.args == nil {
			c.args = map[string]any{}
		}
		o := h.do(c.tool, c.args)
		var v any
		if err := json.Unmarshal(o.Reply, &v); err != nil {
			t.Fatal(err)
		}
		mask(v, "")
		b, _ := json.Marshal(v)
		raw, _ := json.Marshal(c.args)
		out = append(out, fmt.Sprintf("%s %s → %s", c.tool, raw, b))
	}
	return out
}

// mask replaces, in a decoded reply, the values that legitimately differ
// between two ledgers holding the same events: wall-clock times (ping and
// health timestamps, verified_at, an open session's as_of), the uptime, the
// file's path and size, and the head hash and root of health (the pass's
// own tool.called events record their durations).
func mask(v any, parent string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch {
			case k == "timestamp" || k == "verified_at" || k == "uptime_ms",
				k == "as_of" && v["is_finalized"] == false,
				parent == "db" && (k == "path" || k == "size_bytes"),
				parent == "ledger" && (k == "head_hash" || k == "root"):
				v[k] = "<masked>"
			default:
				mask(x, k)
			}
		}
	case []any:
		for _, x := range v {
			mask(x, parent)
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildAnswersSame runs a long random scenario, then compares a copy
// of the ledger whose projections were rebuilt from the log with the
// original: the same fingerprint, and every read tool answering the same
// bytes.
func TestRebuildAnswersSame(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			h := newHarness(t, Options{Agent: "fuzzer"})
			scenario(t, h, seed, 300)
			live := h.fingerprint()

			// B: a copy of the file, its projections rebuilt from the log.
			bPath := filepath.Join(t.TempDir(), "copy.db")
			copyFile(t, h.path, bPath)
			lb, err := boltstore.Open(bPath, boltstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lb.Close() })
			if _, err := Rebuild(lb, projections.RebuildOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			hb := &harness{t: t, l: lb, path: bPath, opts: h.opts, client: h.client, encode: testEncode}
			if got := hb.fingerprint(); got != live {
				t.Fatalf("rebuilt fingerprint %x, live %x", got, live)
			}
			if hb.svc, err = New(lb, h.opts); err != nil {
				t.Fatal(err)
			}
			// A: the original, behind a new Service too, so both record
			// skills.loaded on their first call.
			h.reopen(h.opts)

			a, b := readPass(t, h), readPass(t, hb)
			if len(a) != len(b) {
				t.Fatalf("%d answers live, %d rebuilt", len(a), len(b))
			}
			for i := range a {
				if a[i] != b[i] {
					t.Errorf("live and rebuilt answers differ:\nlive    %s\nrebuilt %s", a[i], b[i])
				}
			}
		})
	}
}

// setMeta writes a projection meta counter straight into the file's
// projection space (its layout: space "meta", 8-byte big-endian values).
func setMeta(t *testing.T, l *boltstore.Store, key string, v uint64) {
	t.Helper()
	err := l.Update(func(tx *boltstore.Tx) error {
		meta, err := tx.Space("meta")
		if err != nil {
			return err
		}
		return meta.Put([]byte(key), binary.BigEndian.AppendUint64(nil, v))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestProjectionVersion(t *testing.T) {
	h := newHarness(t, Options{})
	scenario(t, h, 3, 60)
	want := h.fingerprint()
	state := func(l *boltstore.Store) (version, applied uint64) {
		l.View(func(tx *boltstore.Tx) error {
			version, applied, _ = projections.State(tx)
			return nil
		})
		return
	}

	t.Run("older version is rebuilt", func(t *testing.T) {
		// An older binary's projections: another version, and state this
		// binary would not have built (a stray task record).
		setMeta(t, h.l, "version", projections.Version-1)
		err := h.l.Update(func(tx *boltstore.Tx) error {
			tasks, err := tx.Space("tasks")
			if err != nil {
				return err
			}
			return tasks.Put(binary.BigEndian.AppendUint64(nil, 4242), []byte{0xc0})
		})
		if err != nil {
			t.Fatal(err)
		}
		if h.fingerprint() == want {
			t.Fatal("corruption did not change the fingerprint")
		}
		h.reopen(Options{})
		if v, applied := state(h.l); v != projections.Version || applied != h.head() {
			t.Errorf("after New: version %d applied %d, want %d %d", v, applied, projections.Version, h.head())
		}
		if got := h.fingerprint(); got != want {
			t.Errorf("New did not rebuild the projections of an older version")
		}
	})

	t.Run("newer version is refused", func(t *testing.T) {
		setMeta(t, h.l, "version", projections.Version+1)
		_, err := New(h.l, Options{})
		if !errors.Is(err, projections.ErrNewerVersion) {
			t.Errorf("New = %v, want ErrNewerVersion", err)
		}
		if v, _ := state(h.l); v != projections.Version+1 {
			t.Errorf("the newer projections were touched: version %d", v)
		}
		setMeta(t, h.l, "version", projections.Version)
	})

	t.Run("lagging projections catch up", func(t *testing.T) {
		// An event appended by a writer that did not fold it: the
		// projections stop one event short of the log, and New folds it.
		var id string
		err := h.l.Update(func(tx *boltstore.Tx) error {
			var err error
			if id, err = projections.NextTaskID(tx); err != nil {
				return err
			}
			b, err := ledger.EncodePayload(events.TaskCreated{TaskID: id, Project: "alpha", Title: "late", Priority: "normal", Assignee: "unassigned", Labels: []string{}})
			if err != nil {
				return err
			}
			_, err = tx.Append(ledger.Event{Type: events.TypeTaskCreated, Version: events.CurrentVersion(events.TypeTaskCreated), Actor: "other", Subjects: []string{id}, Payload: b})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, applied := state(h.l); applied != h.head()-1 {
			t.Fatalf("applied %d, head %d", applied, h.head())
		}
		h.reopen(Options{})
		if _, applied := state(h.l); applied != h.head() {
			t.Errorf("after New: applied %d, head %d", applied, h.head())
		}
		if d := h.call("task_get", map[string]any{"task_id": id}, "OK"); d["title"] != "late" || d["created_by"] != "other" {
			t.Errorf("task_get(%s) = %v", id, d)
		}
	})
}

// TestRebuildDoesNotGrowFile: a rebuild puts the refolded projections in
// the pages of the ones it replaces, so the file's pages in use (bbolt's
// high-water mark) do not grow, whether the rebuild is forced or a
// version change's at start-up, and however often it runs.
func TestRebuildDoesNotGrowFile(t *testing.T) {
	h := newHarness(t, Options{Agent: "grower"})
	task := h.call("task_create", map[string]any{"title": "grow", "project": "p"}, "OK")["task_id"].(string)
	for i := range 600 {
		h.call("thought_record", map[string]any{"task_id": task, "type": "analysis",
			"content": fmt.Sprintf("%d: retry the upload with back-off, the storage API rate-limits bursts of writes", i)}, "OK")
		if i%50 == 0 {
			h.call("finding_record", map[string]any{"task_id": task, "category": "bug", "summary": fmt.Sprintf("finding %d", i),
				"details": "the upload retries without back-off"}, "OK")
		}
	}
	// highWater closes the ledger, reads how far into the file its pages
	// reach, and opens it again (New: a start-up, rebuilding if asked).
	highWater := func() int64 {
		t.Helper()
		h.l.Close()
		db, err := bolt.Open(h.path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
		db.Close()
		h.reopen(h.opts)
		return size
	}
	live := h.fingerprint()
	before := highWater()
	for round := range 3 {
		if round == 1 {
			// A start-up's rebuild: the stored version is another one.
			setMeta(t, h.l, "version", projections.Version-1)
		} else if _, err := Rebuild(h.l, projections.RebuildOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		after := highWater() // round 1 rebuilds here, in New
		if after > before {
			t.Errorf("rebuild %d: the file's pages reach %d bytes, %d before it", round+1, after, before)
		}
		if fp := h.fingerprint(); fp != live {
			t.Fatalf("rebuild %d: projections %x, live %x", round+1, fp, live)
		}
	}
}

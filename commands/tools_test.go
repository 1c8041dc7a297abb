package commands

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/skills"
)

// wantKeys fails unless the object has exactly the keys want.
func wantKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	w := append([]string(nil), want...)
	m2 := map[string]any{}
	for _, k := range w {
		m2[k] = nil
	}
	if got, w := keys(m), keys(m2); !reflect.DeepEqual(got, w) {
		t.Errorf("%s: fields %v, want %v", what, got, w)
	}
}

func obj(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not an object", v)
	}
	return m
}

func list(t *testing.T, v any) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%v (%T) is not a list", v, v)
	}
	return l
}

var (
	timeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

func wantTime(t *testing.T, what string, v any) {
	t.Helper()
	s, _ := v.(string)
	if !timeRE.MatchString(s) {
		t.Errorf("%s = %v, want RFC 3339 UTC with milliseconds", what, v)
	}
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func wantHash(t *testing.T, what string, v any) {
	t.Helper()
	if s, _ := v.(string); !hashRE.MatchString(s) {
		t.Errorf("%s = %v, want 64 lower-case hex digits", what, v)
	}
}

func writeSkill(t *testing.T, dir, name, front string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte("---\n"+front+"---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestToolOutputs calls each of the tools with valid input and checks
// that the answer has exactly the contract's fields, with its defaults.
func TestToolOutputs(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "review", "name: review\ndescription: Review code changes\nversion: 1.2.0\ncapabilities: [review, lint]\n")
	writeSkill(t, dir, "deploy", "name: deploy\ndescription: Ship a release\n")
	writeSkill(t, dir, "broken", "name: other\ndescription: x\n")
	set, skipped, err := skills.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Options{Agent: "agent-a", Version: "v9.9.9", Skills: set, Skipped: skipped})
	if got := len(Commands); got != 21 {
		t.Errorf("Commands has %d commands, want 21", got)
	}

	t.Run("server_ping", func(t *testing.T) {
		d := h.call("server_ping", map[string]any{}, "OK")
		wantKeys(t, "ping", d, "timestamp")
		wantTime(t, "timestamp", d["timestamp"])
	})

	t.Run("server_health", func(t *testing.T) {
		head := h.head()
		d := h.call("server_health", map[string]any{}, "OK")
		wantKeys(t, "health", d, "status", "mode", "uptime_ms", "version", "timestamp", "db", "ledger", "projections", "middleware", "tools", "skills")
		wantKeys(t, "health.db", obj(t, d["db"]), "open", "path", "format_version", "size_bytes")
		wantKeys(t, "health.ledger", obj(t, d["ledger"]), "head_seq", "head_hash", "root")
		wantKeys(t, "health.projections", obj(t, d["projections"]), "version", "applied_seq")
		wantKeys(t, "health.middleware", obj(t, d["middleware"]), "stages")
		wantKeys(t, "health.tools", obj(t, d["tools"]), "registered")
		wantKeys(t, "health.skills", obj(t, d["skills"]), "loaded", "skipped")
		wantTime(t, "timestamp", d["timestamp"])
		// A skipped skill file makes the server degraded.
		if d["status"] != "degraded" || d["mode"] != "FULL" || d["version"] != "v9.9.9" {
			t.Errorf("health = %v", d)
		}
		lg := obj(t, d["ledger"])
		var root, headHash ledger.Hash
		h.l.View(func(tx *boltstore.Tx) error {
			root, _ = tx.Root(head)
			r, err := tx.Event(head)
			headHash = r.Hash
			return err
		})
		if lg["head_seq"] != float64(head) || lg["root"] != root.String() || lg["head_hash"] != headHash.String() {
			t.Errorf("health.ledger = %v, want head %d root %s hash %s", lg, head, root, headHash)
		}
		pj := obj(t, d["projections"])
		if pj["version"] != float64(projections.Version) || pj["applied_seq"] != float64(head) {
			t.Errorf("health.projections = %v, want version %d applied %d", pj, projections.Version, head)
		}
		db := obj(t, d["db"])
		if db["open"] != true || db["path"] != h.path || db["format_version"] != float64(boltstore.FormatVersion) || db["size_bytes"].(float64) <= 0 {
			t.Errorf("health.db = %v", db)
		}
		if got := obj(t, d["tools"])["registered"]; got != 21.0 {
			t.Errorf("tools.registered = %v", got)
		}
		// The service has no stages of its own: a transport fills in its own.
		if got := obj(t, d["middleware"])["stages"]; !reflect.DeepEqual(got, []any{}) {
			t.Errorf("middleware.stages = %v", got)
		}
		sk := obj(t, d["skills"])
		sl := list(t, sk["skipped"])
		if sk["loaded"] != 2.0 || len(sl) != 1 {
			t.Fatalf("skills = %v", sk)
		}
		wantKeys(t, "skipped", obj(t, sl[0]), "path", "reason")
	})

	t.Run("skill_list", func(t *testing.T) {
		for _, c := range []struct {
			args map[string]any
			want []string
		}{
			{map[string]any{}, []string{"deploy", "review"}},
			{map[string]any{"search": "REVIEW"}, []string{"review"}},
			{map[string]any{"search": "release"}, []string{"deploy"}},
			{map[string]any{"capability": "lint"}, []string{"review"}},
			{map[string]any{"capability": "lin"}, nil},
		} {
			d := h.call("skill_list", c.args, "OK")
			wantKeys(t, "skill_list", d, "skills", "total_count")
			var names []string
			for _, s := range list(t, d["skills"]) {
				sk := obj(t, s)
				wantKeys(t, "skill", sk, "name", "version", "description", "capabilities", "path")
				names = append(names, sk["name"].(string))
			}
			if !reflect.DeepEqual(names, c.want) || d["total_count"] != float64(len(c.want)) {
				t.Errorf("skill_list(%v) = %v (total %v), want %v", c.args, names, d["total_count"], c.want)
			}
		}
		d := h.call("skill_list", map[string]any{"search": "deploy"}, "OK")
		dep := obj(t, list(t, d["skills"])[0])
		if dep["version"] != "0.0.0" || !reflect.DeepEqual(dep["capabilities"], []any{}) || dep["path"] != "deploy/SKILL.md" {
			t.Errorf("deploy skill defaults = %v", dep)
		}
	})

	var root, child string
	var rootSeq any
	t.Run("task_create", func(t *testing.T) {
		d := h.call("task_create", map[string]any{"title": "Root", "project": "core"}, "OK")
		wantKeys(t, "task_create", d, "task_id", "status", "created_at", "created_by", "sequence", "seq")
		wantTime(t, "created_at", d["created_at"])
		if d["task_id"] != "T-0001" || d["status"] != "backlog" || d["created_by"] != "agent-a" || d["sequence"] != 1.0 || d["seq"] != float64(h.head()-1) {
			t.Errorf("task_create = %v", d)
		}
		root, rootSeq = d["task_id"].(string), d["seq"]
		h.call("task_create", map[string]any{"title": "Elsewhere", "project": "web"}, "OK")
		d = h.call("task_create", map[string]any{"title": "Child", "project": "core", "parent_id": root, "estimate_hours": 2.5,
			"priority": "high", "labels": []string{"x", "y", "x"}, "assignee": "bob", "description": "d"}, "OK")
		if d["task_id"] != "T-0003" || d["sequence"] != 2.0 {
			t.Errorf("second task of core = %v, want T-0003 sequence 2", d)
		}
		child = d["task_id"].(string)
	})

	t.Run("task_get", func(t *testing.T) {
		created := h.call("task_get", map[string]any{"task_id": root}, "OK")
		d := created
		wantKeys(t, "task_get", d, "task_id", "title", "description", "project", "status", "priority", "progress",
			"assignee", "labels", "created_at", "updated_at", "created_by", "updated_by", "sequence", "seq")
		want := map[string]any{"task_id": root, "title": "Root", "description": "", "project": "core", "status": "backlog",
			"priority": "normal", "progress": 0.0, "assignee": "unassigned", "labels": []any{}, "created_by": "agent-a",
			"updated_by": "agent-a", "sequence": 1.0, "seq": rootSeq, "created_at": d["created_at"], "updated_at": d["created_at"]}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("task_get defaults = %v\nwant %v", d, want)
		}
		d = h.call("task_get", map[string]any{"task_id": child, "include_thought_trail": true, "include_dependents": true}, "OK")
		wantKeys(t, "task_get child", d, "task_id", "title", "description", "project", "status", "priority", "progress",
			"assignee", "labels", "estimate_hours", "created_at", "updated_at", "created_by", "updated_by", "parent_id",
			"sequence", "seq", "thought_trail", "dependents")
		if d["estimate_hours"] != 2.5 || d["parent_id"] != root || !reflect.DeepEqual(d["labels"], []any{"x", "y"}) ||
			d["priority"] != "high" || d["assignee"] != "bob" {
			t.Errorf("task_get child = %v", d)
		}
		if !reflect.DeepEqual(d["thought_trail"], []any{}) || !reflect.DeepEqual(d["dependents"], []any{}) {
			t.Errorf("asked-for thought_trail/dependents = %v / %v, want [] / []", d["thought_trail"], d["dependents"])
		}
		d = h.call("task_get", map[string]any{"task_id": root, "include_dependents": true}, "OK")
		if !reflect.DeepEqual(d["dependents"], []any{child}) {
			t.Errorf("dependents = %v", d["dependents"])
		}
		if _, ok := d["thought_trail"]; ok {
			t.Errorf("thought_trail present though not asked")
		}
	})

	t.Run("task_update", func(t *testing.T) {
		d := h.call("task_update", map[string]any{"task_id": root, "status": "todo"}, "OK")
		wantKeys(t, "task_update", d, "task_id", "status", "progress", "updated_at", "updated_by", "previous_status", "warnings", "seq")
		if d["previous_status"] != "backlog" || d["status"] != "todo" || d["updated_by"] != "agent-a" || !reflect.DeepEqual(d["warnings"], []any{}) {
			t.Errorf("task_update = %v", d)
		}
		d = h.call("task_update", map[string]any{"task_id": root, "progress": 10}, "OK")
		wantKeys(t, "task_update without status change", d, "task_id", "status", "progress", "updated_at", "updated_by", "warnings", "seq")
	})

	t.Run("task_list", func(t *testing.T) {
		d := h.call("task_list", map[string]any{}, "OK")
		wantKeys(t, "task_list", d, "tasks", "total_count", "returned_count", "offset", "limit")
		if d["limit"] != 50.0 || d["offset"] != 0.0 || d["total_count"] != 3.0 || d["returned_count"] != 3.0 {
			t.Errorf("task_list defaults = %v", d)
		}
		tasks := list(t, d["tasks"])
		for _, x := range tasks {
			wantKeys(t, "task_list row", obj(t, x), "task_id", "title", "project", "status", "priority", "progress", "assignee", "created_at", "updated_at", "seq")
		}
		// Default sort: updated, descending. T-0001 was updated last.
		if got := obj(t, tasks[0])["task_id"]; got != root {
			t.Errorf("first row %v, want the last updated %s", got, root)
		}
	})

	t.Run("task_next_actions", func(t *testing.T) {
		d := h.call("task_next_actions", map[string]any{}, "OK")
		wantKeys(t, "task_next_actions", d, "next_actions", "count", "project")
		if d["project"] != nil || d["count"] != 1.0 {
			t.Errorf("task_next_actions = %v", d)
		}
		na := obj(t, list(t, d["next_actions"])[0])
		wantKeys(t, "next action", na, "task_id", "title", "priority", "assignee", "dependencies_unmet", "seq")
		if na["dependencies_unmet"] != 1.0 {
			t.Errorf("next action = %v, want 1 unmet dependency", na)
		}
		h.call("task_update", map[string]any{"task_id": child, "status": "todo"}, "OK")
		d = h.call("task_next_actions", map[string]any{"project": "core", "include_blocked": true}, "OK")
		wantKeys(t, "task_next_actions include_blocked", d, "next_actions", "count", "project", "blocked")
		if d["project"] != "core" || !reflect.DeepEqual(d["blocked"], []any{}) {
			t.Errorf("task_next_actions = %v", d)
		}
		na = obj(t, list(t, d["next_actions"])[0])
		wantKeys(t, "next action with estimate and parent", na, "task_id", "title", "priority", "assignee", "estimate_hours", "parent_id", "dependencies_unmet", "seq")
		h.call("task_update", map[string]any{"task_id": child, "status": "blocked", "blocked_reason": "waiting"}, "OK")
		d = h.call("task_next_actions", map[string]any{"include_blocked": true}, "OK")
		bl := list(t, d["blocked"])
		if len(bl) != 1 {
			t.Fatalf("blocked = %v", bl)
		}
		wantKeys(t, "blocked", obj(t, bl[0]), "task_id", "title", "blocked_reason", "seq")
	})

	var session string
	t.Run("audit_session_start", func(t *testing.T) {
		d := h.call("audit_session_start", map[string]any{"task_id": root, "auditor_id": "aud"}, "OK")
		wantKeys(t, "audit_session_start", d, "session_id", "task_id", "auditor_id", "started_at", "scope", "start_seq")
		if d["session_id"] != "A-0001" || d["scope"] != "shallow" || d["auditor_id"] != "aud" || d["start_seq"] != float64(h.head()-1) {
			t.Errorf("audit_session_start = %v", d)
		}
		session = d["session_id"].(string)
	})

	t.Run("thought_record", func(t *testing.T) {
		d := h.call("thought_record", map[string]any{"task_id": root, "type": "plan", "content": "first", "session_id": session,
			"branch": "main", "commit_sha": "abcdef1", "tests_run": []string{"go test"}, "blockers": []string{}, "metadata": map[string]any{"k": 1}}, "OK")
		wantKeys(t, "thought_record", d, "thought_id", "task_id", "type", "hash", "previous_hash", "recorded_at", "recorded_by", "chain_position", "seq")
		if d["thought_id"] != "Θ-0001" || d["previous_hash"] != nil || d["chain_position"] != 1.0 || d["recorded_by"] != "agent-a" {
			t.Errorf("thought_record = %v", d)
		}
		wantHash(t, "hash", d["hash"])
	})

	t.Run("thought_record_list", func(t *testing.T) {
		d := h.call("thought_record_list", map[string]any{}, "OK")
		wantKeys(t, "thought_record_list", d, "thought_count", "thoughts")
		th := obj(t, list(t, d["thoughts"])[0])
		wantKeys(t, "thought", th, "thought_id", "task_id", "type", "content", "hash", "previous_hash", "recorded_at", "recorded_by", "chain_position", "seq")
		d = h.call("thought_record_list", map[string]any{"task_id": root, "session_id": session, "verify_chain": true}, "OK")
		wantKeys(t, "thought_record_list verify", d, "task_id", "session_id", "thought_count", "thoughts", "chain_valid", "invalid_links")
		if d["chain_valid"] != true || !reflect.DeepEqual(d["invalid_links"], []any{}) {
			t.Errorf("verify_chain = %v / %v", d["chain_valid"], d["invalid_links"])
		}
	})

	t.Run("merkle_root", func(t *testing.T) {
		d := h.call("merkle_root", map[string]any{"session_id": session}, "OK")
		wantKeys(t, "merkle_root", d, "session_id", "merkle_root", "leaf_count", "is_finalized", "as_of", "as_of_seq")
		wantHash(t, "merkle_root", d["merkle_root"])
		wantTime(t, "as_of", d["as_of"])
		if d["is_finalized"] != false || d["as_of_seq"] != float64(h.head()-1) {
			t.Errorf("merkle_root = %v", d)
		}
	})

	t.Run("merkle_finalize", func(t *testing.T) {
		d := h.call("merkle_finalize", map[string]any{"session_id": session}, "OK")
		wantKeys(t, "merkle_finalize", d, "session_id", "merkle_root", "tree_depth", "leaf_count", "first_seq", "last_seq",
			"finalized_at", "frozen", "ledger_size", "ledger_root")
		if d["frozen"] != true || d["ledger_size"] != float64(h.head()-1) {
			t.Errorf("merkle_finalize = %v", d)
		}
	})

	t.Run("audit_verify_chain", func(t *testing.T) {
		d := h.call("audit_verify_chain", map[string]any{}, "OK")
		wantKeys(t, "audit_verify_chain", d, "chain_valid", "total_records", "integrity_score", "broken_links", "verified_at")
		if d["chain_valid"] != true || d["integrity_score"] != 100.0 || d["total_records"] != float64(h.head()-1) {
			t.Errorf("audit_verify_chain = %v", d)
		}
		d = h.call("audit_verify_chain", map[string]any{"session_id": session, "full_trace": true}, "OK")
		wantKeys(t, "audit_verify_chain session", d, "session_id", "chain_valid", "total_records", "integrity_score", "broken_links",
			"verified_at", "merkle_valid", "hashes")
		wantKeys(t, "hash entry", obj(t, list(t, d["hashes"])[0]), "seq", "hash")
		d = h.call("audit_verify_chain", map[string]any{"task_id": child}, "OK")
		wantKeys(t, "audit_verify_chain task", d, "task_id", "chain_valid", "total_records", "integrity_score", "broken_links", "verified_at")
	})
}

// TestDefaultLimits fills past each default limit.
func TestDefaultLimits(t *testing.T) {
	h := newHarness(t, Options{})
	for i := range 51 {
		id := h.call("task_create", map[string]any{"title": "t" + strings.Repeat("x", i%3), "project": "p"}, "OK")["task_id"]
		if i < 21 {
			h.call("task_update", map[string]any{"task_id": id, "status": "todo"}, "OK")
		}
	}
	for range 101 {
		h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "analysis", "content": "c"}, "OK")
	}
	d := h.call("task_list", map[string]any{}, "OK")
	if d["limit"] != 50.0 || d["returned_count"] != 50.0 || d["total_count"] != 51.0 || len(list(t, d["tasks"])) != 50 {
		t.Errorf("task_list: limit %v returned %v total %v", d["limit"], d["returned_count"], d["total_count"])
	}
	d = h.call("task_next_actions", map[string]any{}, "OK")
	if d["count"] != 20.0 || len(list(t, d["next_actions"])) != 20 {
		t.Errorf("task_next_actions: count %v, want the default limit 20", d["count"])
	}
	d = h.call("thought_record_list", map[string]any{}, "OK")
	if d["thought_count"] != 101.0 || len(list(t, d["thoughts"])) != 100 {
		t.Errorf("thought_record_list: count %v, %d listed, want 101 and the default limit 100", d["thought_count"], len(list(t, d["thoughts"])))
	}
}

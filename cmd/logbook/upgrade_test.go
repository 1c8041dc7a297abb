package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// The upgrade path is proven on a ledger written by an older binary:
// fixtures/ledger-v1/ledger.db was written by the binary of the first
// release (task.created payload version 1, projections version 1) running
// the scenario in session.json, and golden.json holds that binary's answers
// to queries.json. The binary under test must open a copy, upcast, rebuild
// its projections and give the same answers, and verify must pass on the
// untouched file.

var writeV1Fixture = flag.Bool("write-v1-fixture", false,
	"regenerate fixtures/ledger-v1 (only meaningful with the v1 code: task.created version 1)")

const v1Dir = "../../fixtures/ledger-v1"

// v1Golden is fixtures/ledger-v1/golden.json.
type v1Golden struct {
	Ledger struct {
		SHA256 string `json:"sha256"` // of ledger.db, which nothing may rewrite
		Size   uint64 `json:"size"`
		Root   string `json:"root"`
		Head   string `json:"head"`
	} `json:"ledger"`
	Answers map[string]any `json:"answers"` // query name → envelope, volatile fields masked
}

type v1Step struct {
	Agent string         `json:"agent"`
	Tool  string         `json:"tool"`
	Args  map[string]any `json:"args"`
	Want  string         `json:"want"`
}

type v1Query struct {
	Name string         `json:"name"`
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

func readJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func fileSHA256(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// outcome is "OK" or the envelope's error code.
func outcome(env map[string]any) string {
	if env["ok"] == true {
		return "OK"
	}
	e, _ := env["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// maskVolatile replaces the fields that are the time of the call rather than
// of the ledger (verified_at, timestamp, uptime_ms, and an open session's
// as_of) so answers compare across runs.
func maskVolatile(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			switch {
			case k == "verified_at" || k == "timestamp" || k == "uptime_ms":
				out[k] = "<volatile>"
			case k == "as_of" && v["is_finalized"] == false:
				out[k] = "<volatile>"
			default:
				out[k] = maskVolatile(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = maskVolatile(x)
		}
		return out
	}
	return v
}

// listsGivenSeq are the lists whose items the first release gave without
// their seq, by tool (CONTRACT.md §1: every domain object, a list's item
// too, reports the seq of the event that last changed it). The golden
// answers lack it, and are history: checkAddedSinceV1 checks it and takes
// it out before an answer is compared with them.
var listsGivenSeq = map[string][]string{
	"task_list": {"tasks"}, "task_next_actions": {"next_actions", "blocked"}, "thought_record_list": {"thoughts"},
}

// checkAddedSinceV1 checks the seq of each item of got's lists (a masked
// envelope answering q) and deletes it: a task's must be the seq the golden
// task_get of that task (at the head) reports, a thought's that of the
// event the thought's hash is the hash of, in the fixture ledger.
func checkAddedSinceV1(t *testing.T, q v1Query, got any, golden v1Golden, fixture string) {
	t.Helper()
	data, _ := got.(map[string]any)["data"].(map[string]any)
	for _, field := range listsGivenSeq[q.Tool] {
		items, _ := data[field].([]any)
		for _, x := range items {
			item := x.(map[string]any)
			seq, ok := item["seq"].(float64)
			if !ok {
				t.Errorf("%s: a %s item without its seq: %v", q.Name, field, item)
				continue
			}
			delete(item, "seq")
			if q.Tool != "thought_record_list" {
				g, _ := golden.Answers["task_get "+item["task_id"].(string)].(map[string]any)
				d, _ := g["data"].(map[string]any)
				if d == nil || d["seq"] != seq {
					t.Errorf("%s: %s's seq %v, task_get says %v", q.Name, item["task_id"], seq, d["seq"])
				}
				continue
			}
			if hash := eventHash(t, fixture, uint64(seq)); hash != item["hash"] {
				t.Errorf("%s: %s's seq %v is event %s, not the thought's %v", q.Name, item["thought_id"], seq, hash, item["hash"])
			}
		}
	}
}

// eventHash is the hash of the event at seq in a copy of the ledger at path.
func eventHash(t *testing.T, path string, seq uint64) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, path, cp)
	l, err := boltstore.Open(cp, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var hash string
	err = l.View(func(tx *boltstore.Tx) error {
		rec, err := tx.Event(seq)
		hash = rec.Hash.String()
		return err
	})
	if err != nil {
		t.Fatalf("event %d: %v", seq, err)
	}
	return hash
}

// answerOn asks one query of a fresh copy of the ledger at path: every call
// appends its own audit record, so each query sees exactly the fixture.
func answerOn(t *testing.T, path string, q v1Query) (env map[string]any, stderr string) {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, path, cp)
	a := startAgent(t, "auditor", "--db", cp, "--agent", "auditor", "--skills", "../../fixtures/skills")
	env, err := a.callTool(q.Tool, q.Args)
	if err != nil {
		t.Fatalf("%s: %v", q.Name, err)
	}
	a.close()
	return env, a.stderr.String()
}

func TestUpgradeFromV1(t *testing.T) {
	if *writeV1Fixture {
		writeV1(t)
		return
	}
	fixture := filepath.Join(v1Dir, "ledger.db")
	var golden v1Golden
	readJSONFile(t, filepath.Join(v1Dir, "golden.json"), &golden)
	if got := fileSHA256(t, fixture); got != golden.Ledger.SHA256 {
		t.Fatalf("the committed v1 ledger was rewritten: sha256 %s, golden says %s", got, golden.Ledger.SHA256)
	}
	if events.CurrentVersion(events.TypeTaskCreated) < 2 {
		t.Fatal("this binary writes task.created v1: the upgrade under test is missing")
	}

	t.Run("verify untouched file", func(t *testing.T) {
		cp := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, fixture, cp)
		r := run(t, "verify", "--db", cp, "--json")
		wantExit(t, r, 0, "verify v1 ledger")
		var rep struct {
			OK          bool   `json:"ok"`
			Size        uint64 `json:"size"`
			Root        string `json:"root"`
			Projections struct {
				Checked bool   `json:"checked"`
				Version uint64 `json:"stored_version"`
				Note    string `json:"note"`
			} `json:"projections"`
		}
		decodeJSON(t, r, &rep)
		if !rep.OK || rep.Size != golden.Ledger.Size || rep.Root != golden.Ledger.Root {
			t.Errorf("verify: %+v, want size %d root %s", rep, golden.Ledger.Size, golden.Ledger.Root)
		}
		if rep.Projections.Checked || rep.Projections.Version != 1 || !strings.Contains(rep.Projections.Note, "rebuilt") {
			t.Errorf("v1 projections should be reported as outdated, not compared: %+v", rep.Projections)
		}
		if got := fileSHA256(t, cp); got != golden.Ledger.SHA256 {
			t.Error("verify changed the file")
		}
		// The stored payloads stay version 1: upgrading rewrote nothing.
		r = run(t, "replay", "--db", cp, "--type", events.TypeTaskCreated)
		wantExit(t, r, 0, "replay")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 5 {
			t.Fatalf("want 5 task.created events, got %d:\n%s", len(lines), r.stdout)
		}
		for _, l := range lines {
			var ev struct {
				Version int            `json:"payload_version"`
				Payload map[string]any `json:"payload"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Version != 1 || ev.Payload["sequence"] == nil || ev.Payload["project_sequence"] != nil {
				t.Errorf("stored v1 event changed: %s", l)
			}
		}
	})

	t.Run("answers", func(t *testing.T) {
		var queries []v1Query
		readJSONFile(t, filepath.Join(v1Dir, "queries.json"), &queries)
		if len(queries) != len(golden.Answers) {
			t.Fatalf("%d queries, %d golden answers", len(queries), len(golden.Answers))
		}
		for i, q := range queries {
			env, stderr := answerOn(t, fixture, q)
			if i == 0 && !strings.Contains(stderr, "rebuilding projections") {
				t.Errorf("no rebuild logged on opening a v1 ledger; stderr:\n%s", stderr)
			}
			got := maskVolatile(jsonRoundTrip(t, env))
			checkAddedSinceV1(t, q, got, golden, fixture)
			if want := golden.Answers[q.Name]; !reflect.DeepEqual(got, want) {
				gb, _ := json.MarshalIndent(got, "", "  ")
				wb, _ := json.MarshalIndent(want, "", "  ")
				t.Errorf("%s: answer differs from v1's\ngot:  %s\nwant: %s", q.Name, gb, wb)
			}
		}
	})

	t.Run("write after upgrade", func(t *testing.T) {
		cp := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, fixture, cp)
		a := startAgent(t, "agent-c", "--db", cp, "--agent", "agent-c", "--skills", "../../fixtures/skills")
		env, err := a.callTool("task_create", map[string]any{"title": "After the upgrade", "project": "logbook"})
		if err != nil || outcome(env) != "OK" {
			t.Fatalf("task_create: %v %v", env, err)
		}
		data := env["data"].(map[string]any)
		if data["task_id"] != "T-0006" || data["sequence"] != 5.0 {
			t.Errorf("task_create after upgrade: %v (want T-0006, sequence 5 in project logbook)", data)
		}
		env, _ = a.callTool("task_get", map[string]any{"task_id": "T-0006"})
		if d, _ := env["data"].(map[string]any); d["sequence"] != 5.0 {
			t.Errorf("task_get of a v2 task: %v", env)
		}
		a.close()
		// Old and new payload versions side by side; verify folds both.
		r := run(t, "verify", "--db", cp, "--json")
		wantExit(t, r, 0, "verify after upgrade")
		var rep struct {
			Projections struct {
				Checked bool `json:"checked"`
			} `json:"projections"`
		}
		decodeJSON(t, r, &rep)
		if !rep.Projections.Checked {
			t.Errorf("projections not compared after the rebuild: %s", r.stdout)
		}
		r = run(t, "replay", "--db", cp, "--type", events.TypeTaskCreated, "--from", "2")
		wantExit(t, r, 0, "replay")
		var versions []int
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var ev struct {
				Version int `json:"payload_version"`
			}
			json.Unmarshal([]byte(l), &ev)
			versions = append(versions, ev.Version)
		}
		if want := []int{1, 1, 1, 1, 1, 2}; !reflect.DeepEqual(versions, want) {
			t.Errorf("task.created payload versions %v, want %v", versions, want)
		}
		// tool.called: the fixture's events stay v1, the new calls are v2,
		// whose args_sha256 is over the RFC 8785 form of the arguments.
		r = run(t, "replay", "--db", cp, "--type", projections.TypeToolCalled)
		wantExit(t, r, 0, "replay tool.called")
		var calls []struct {
			Version int                    `json:"payload_version"`
			Payload projections.ToolCalled `json:"payload"`
		}
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var ev struct {
				Version int                    `json:"payload_version"`
				Payload projections.ToolCalled `json:"payload"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("replay line %q: %v", l, err)
			}
			calls = append(calls, ev)
		}
		if len(calls) < 3 {
			t.Fatalf("%d tool.called events", len(calls))
		}
		for i, c := range calls {
			if want := map[bool]int{true: int(events.CurrentVersion(projections.TypeToolCalled)), false: 1}[i >= len(calls)-2]; c.Version != want {
				t.Errorf("tool.called #%d (%s) is v%d, want v%d", i, c.Payload.Tool, c.Version, want)
			}
		}
		created := calls[len(calls)-2].Payload
		if sum := sha256.Sum256([]byte(`{"project":"logbook","title":"After the upgrade"}`)); created.Tool != "task_create" || created.ArgsSHA256 != ledger.DigestOf(sum) {
			t.Errorf("new tool.called %+v: want task_create with the SHA-256 of the RFC 8785 arguments, as hex", created)
		}
	})

	// A task's thought chain that goes on past the upgrade: the fixture's
	// thoughts are thought.recorded v1 (previous_hash as hex), the new ones
	// v2 (32 bytes). Both chain checks hold across the two, every answer and
	// replay line shows the same hex, and the file verifies.
	t.Run("thought chain across versions", func(t *testing.T) {
		cp := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, fixture, cp)
		a := startAgent(t, "agent-c", "--db", cp, "--agent", "agent-c", "--skills", "../../fixtures/skills")
		defer a.close()
		call := func(tool string, args map[string]any) map[string]any {
			t.Helper()
			env, err := a.callTool(tool, args)
			if err != nil || outcome(env) != "OK" {
				t.Fatalf("%s: %v %v", tool, env, err)
			}
			return env["data"].(map[string]any)
		}
		before := call("thought_record_list", map[string]any{"task_id": "T-0002"})["thoughts"].([]any)
		if len(before) < 2 {
			t.Fatalf("the fixture's T-0002 has %d thoughts, want a chain", len(before))
		}
		prev := before[len(before)-1].(map[string]any)["hash"]
		for i := range 2 {
			d := call("thought_record", map[string]any{"task_id": "T-0002", "type": "analysis", "content": fmt.Sprintf("after the upgrade %d", i)})
			if d["previous_hash"] != prev || d["chain_position"] != float64(len(before)+i+1) {
				t.Errorf("new thought %d: previous_hash %v position %v, want %v and %d", i, d["previous_hash"], d["chain_position"], prev, len(before)+i+1)
			}
			prev = d["hash"]
		}
		list := call("thought_record_list", map[string]any{"task_id": "T-0002", "verify_chain": true})
		if list["chain_valid"] != true || len(list["invalid_links"].([]any)) != 0 {
			t.Errorf("thought_record_list verify_chain across versions: %v %v", list["chain_valid"], list["invalid_links"])
		}
		thoughts := list["thoughts"].([]any)
		for i, th := range thoughts[1:] {
			if got, want := th.(map[string]any)["previous_hash"], thoughts[i].(map[string]any)["hash"]; got != want {
				t.Errorf("thought %d: previous_hash %v, want the hash %v before it", i+2, got, want)
			}
		}
		if d := call("audit_verify_chain", map[string]any{"task_id": "T-0002"}); d["chain_valid"] != true {
			t.Errorf("audit_verify_chain across versions: %v", d)
		}
		a.close()
		wantExit(t, run(t, "verify", "--db", cp), 0, "verify")
		r := run(t, "replay", "--db", cp, "--type", events.TypeThoughtRecorded, "--task", "T-0002")
		wantExit(t, r, 0, "replay")
		var versions []int
		for i, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var ev struct {
				Hash    string `json:"hash"`
				Version int    `json:"payload_version"`
				Payload struct {
					PreviousHash *string `json:"previous_hash"`
				} `json:"payload"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("replay line %q: %v", l, err)
			}
			versions = append(versions, ev.Version)
			want := thoughts[i].(map[string]any)
			if ev.Hash != want["hash"] || (ev.Payload.PreviousHash == nil) != (want["previous_hash"] == nil) ||
				(ev.Payload.PreviousHash != nil && *ev.Payload.PreviousHash != want["previous_hash"]) {
				t.Errorf("replay of thought %d: %s, want hash %v previous_hash %v", i+1, l, want["hash"], want["previous_hash"])
			}
		}
		if n := len(versions); n != len(thoughts) || versions[0] != 1 || versions[n-1] != int(events.CurrentVersion(events.TypeThoughtRecorded)) {
			t.Errorf("thought.recorded versions %v: want the fixture's v1, then the new ones", versions)
		}
	})
}

func jsonRoundTrip(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeV1 runs the scenario through the binary into a new ledger, then the
// queries, and writes ledger.db and golden.json. It must run with the v1
// code; the test proper then checks every later binary against it.
func writeV1(t *testing.T) {
	if events.CurrentVersion(events.TypeTaskCreated) != 1 {
		t.Fatal("-write-v1-fixture needs the v1 code (task.created version 1); the fixture is history, not regenerated")
	}
	var steps []v1Step
	readJSONFile(t, filepath.Join(v1Dir, "session.json"), &steps)
	path := filepath.Join(t.TempDir(), "ledger.db")
	var a *agent
	for i, s := range steps {
		if a == nil || s.Agent != steps[i-1].Agent {
			if a != nil {
				a.close()
			}
			a = startAgent(t, s.Agent, "--db", path, "--agent", s.Agent, "--skills", "../../fixtures/skills")
		}
		env, err := a.callTool(s.Tool, s.Args)
		if err != nil {
			t.Fatalf("step %d %s: %v", i, s.Tool, err)
		}
		if got := outcome(env); got != s.Want {
			t.Fatalf("step %d %s: got %s, want %s: %v", i, s.Tool, got, s.Want, env)
		}
	}
	a.close()

	var g v1Golden
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = l.View(func(tx *boltstore.Tx) error {
		head := tx.Head()
		root, err := tx.Root(head.Seq)
		g.Ledger.Size, g.Ledger.Head, g.Ledger.Root = head.Seq, head.Hash.String(), root.String()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var queries []v1Query
	readJSONFile(t, filepath.Join(v1Dir, "queries.json"), &queries)
	g.Answers = map[string]any{}
	for _, q := range queries {
		env, _ := answerOn(t, path, q)
		g.Answers[q.Name] = maskVolatile(jsonRoundTrip(t, env))
	}
	g.Ledger.SHA256 = fileSHA256(t, path)
	copyFile(t, path, filepath.Join(v1Dir, "ledger.db"))
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v1Dir, "golden.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d events, root %s", v1Dir, g.Ledger.Size, g.Ledger.Root)
}

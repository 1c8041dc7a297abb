package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

var update = flag.Bool("update", false, "rewrite the golden files of the human views (testdata/*.golden)")

// fixedClock ticks one second per reading from a fixed instant, so the same
// calls give the same ledger, byte for byte.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// viewsLedger writes the story plus a task whose title and thought test the
// views' edges (markup, a long title, several lines),
// on a fixed clock. It returns the closed ledger's path.
func viewsLedger(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	w := newLedgerClock(t, path, "agent-a", fixedClock())
	w.story()
	id := w.call("task_create", map[string]any{"project": "docs", "assignee": "bob",
		"title": "<script>alert(1)</script> a title that goes on and on, well past the width of any table anyone would print it in"})["task_id"]
	w.call("task_update", map[string]any{"task_id": id, "status": "todo", "priority": "low"})
	w.call("thought_record", map[string]any{"task_id": id, "type": "risk",
		"content": "Should the title be cut?\nYes: a table row is one line."})
	w.l.Close()
	return path
}

// TestViewsGolden runs each human view on the same deterministic ledger and
// compares its stdout with testdata/NAME.golden (go test -run
// TestViewsGolden -update rewrites them). Output to a pipe is never
// coloured and is 100 columns wide.
func TestViewsGolden(t *testing.T) {
	path := viewsLedger(t)
	again := viewsLedger(t)
	if a, b := run(t, "replay", "--db", path), run(t, "replay", "--db", again); a.stdout != b.stdout {
		t.Fatalf("two ledgers built alike differ: the golden files cannot be stable\n%s\n%s", a.stdout, b.stdout)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"tasks", []string{"tasks"}},
		// A space after a comma is part of no status (attack5: it was
		// unknown status " backlog").
		{"tasks-filtered", []string{"tasks", "--project", "core", "--status", "done, backlog"}},
		{"tasks-json", []string{"tasks", "--json", "--status", "cancelled"}},
		{"show-task", []string{"show", "T-0002"}},
		{"show-task-edges", []string{"show", "T-0004"}},
		{"show-task-json", []string{"show", "--json", "T-0002"}},
		{"show-session-finalized", []string{"show", "A-0001"}},
		{"show-session-open", []string{"show", "A-0002"}},
		{"show-session-json", []string{"show", "A-0001", "--json"}},
		{"sessions", []string{"sessions"}},
		{"sessions-json", []string{"sessions", "--json", "--task", "T-0003"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, append(c.args, "--db", path)...)
			wantExit(t, r, 0, strings.Join(c.args, " "))
			got := strings.ReplaceAll(r.stdout, path, "L.db")
			if strings.Contains(got, "\x1b") {
				t.Errorf("escape sequence in output to a pipe:\n%q", got)
			}
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestViewsGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("logbook %s: output differs from %s\n--- got\n%s\n--- want\n%s", strings.Join(c.args, " "), golden, got, want)
			}
		})
	}
}

// TestViewsUnknownIDs: an id that is in no ledger, or is no id at all, is a
// usage error (exit 2) that names it, with nothing on stdout.
func TestViewsUnknownIDs(t *testing.T) {
	path := viewsLedger(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "T-0099"}, "no task T-0099"},
		{[]string{"show", "A-0042"}, "no audit session A-0042"},
		{[]string{"show", "Θ-0001"}, `"Θ-0001" is neither a task id`},
		{[]string{"show", "T-1"}, `"T-1" is neither`},
		{[]string{"show"}, "want a task id"},
		{[]string{"tasks", "--status", "done,finished"}, `unknown status "finished"`},
		// A filter no task or session can pass is a mistake, not an empty
		// list (attack5: both printed "no tasks", "no audit sessions").
		{[]string{"tasks", "--project", "Billing"}, `project "Billing" is not a project slug`},
		{[]string{"sessions", "--task", "A-0001"}, `task "A-0001" is not a task id`},
		{[]string{"sessions", "--task", "T-1"}, `task "T-1" is not a task id`},
	} {
		r := run(t, append(c.args, "--db", path)...)
		wantExit(t, r, 2, strings.Join(c.args, " "))
		if !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("logbook %s: want %q on stderr and nothing on stdout, got %s", strings.Join(c.args, " "), c.want, r)
		}
	}
}

// TestShowSessionProofCommands runs the commands `logbook show A-…` prints
// to prove a leaf, as printed, for a finalized and an open session: the
// proof they write must check against the root they name.
func TestShowSessionProofCommands(t *testing.T) {
	path := viewsLedger(t)
	for _, id := range []string{"A-0001", "A-0002"} {
		r := run(t, "show", id, "--db", path)
		wantExit(t, r, 0, "show "+id)
		dir := t.TempDir()
		var ran int
		for _, line := range strings.Split(r.stdout, "\n") {
			args, ok := strings.CutPrefix(line, "  logbook ")
			if !ok {
				continue
			}
			cmd := exec.Command(logbookBin, strings.Fields(args)...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: logbook %s: %v\n%s", id, args, err, out)
			}
			ran++
		}
		if ran != 2 {
			t.Fatalf("%s: want a prove and a check-proof command, ran %d:\n%s", id, ran, r.stdout)
		}
	}
}

// TestViewsRefuseIncompleteProjections: a rebuild cut between the drop of
// the live projections and the end of the copy leaves no complete set. The
// views must not show what is left as a smaller ledger: each refuses (exit
// 2, nothing on stdout) and says how to rebuild; after logbook rebuild they
// show what they showed before.
func TestViewsRefuseIncompleteProjections(t *testing.T) {
	path := viewsLedger(t)
	views := [][]string{{"tasks"}, {"sessions"}, {"show", "T-0001"}, {"show", "A-0001"}}
	before := map[string]string{}
	for _, args := range views {
		r := run(t, append(args, "--db", path)...)
		wantExit(t, r, 0, strings.Join(args, " "))
		before[strings.Join(args, " ")] = r.stdout
	}
	l, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// What the rebuild's first transaction of the swap does.
	if err := l.Update(func(tx *boltstore.Tx) error { return tx.DropSpaces() }); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, args := range views {
		what := strings.Join(args, " ")
		r := run(t, append(args, "--db", path)...)
		wantExit(t, r, 2, what)
		if r.stdout != "" || !strings.Contains(r.stderr, "no complete projections") || !strings.Contains(r.stderr, "logbook rebuild --db "+path) {
			t.Errorf("logbook %s without projections: want a refusal naming logbook rebuild, got %s", what, r)
		}
	}
	wantExit(t, run(t, "rebuild", "--db", path), 0, "rebuild")
	for _, args := range views {
		what := strings.Join(args, " ")
		r := run(t, append(args, "--db", path)...)
		wantExit(t, r, 0, what)
		if r.stdout != before[what] {
			t.Errorf("logbook %s after the rebuild:\n%s\nwant, as before:\n%s", what, r.stdout, before[what])
		}
	}
}

// TestTasksJSONIsTaskGet: tasks --json gives each task as task_get answers
// it, every field with the same value, plus created_seq and thoughts, as
// its --help says (it said "as task_get answers it" alone).
func TestTasksJSONIsTaskGet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	w := newLedger(t, path, "agent-a")
	parent := w.call("task_create", map[string]any{"title": "Parent", "project": "core", "estimate_hours": 2.5, "labels": []string{"x"}})["task_id"]
	child := w.call("task_create", map[string]any{"title": "Child", "project": "core", "parent_id": parent})["task_id"]
	w.call("task_update", map[string]any{"task_id": child, "status": "todo"})
	w.call("task_update", map[string]any{"task_id": child, "status": "blocked", "blocked_reason": "waits"})
	w.call("thought_record", map[string]any{"task_id": parent, "type": "plan", "content": "Do it."})
	got := map[string]map[string]any{}
	for _, id := range []any{parent, child} {
		got[id.(string)] = w.call("task_get", map[string]any{"task_id": id})
	}
	w.l.Close()
	// task_get's data through JSON, numbers as json.Number as decodeJSON reads them.
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Tasks []map[string]any `json:"tasks"`
	}
	r := run(t, "tasks", "--json", "--db", path)
	wantExit(t, r, 0, "tasks --json")
	decodeJSON(t, r, &out)
	if len(out.Tasks) != 2 {
		t.Fatalf("tasks --json: %d tasks, want 2:\n%s", len(out.Tasks), r.stdout)
	}
	for _, task := range out.Tasks {
		get := want[task["task_id"].(string)]
		for k, v := range get {
			if !reflect.DeepEqual(task[k], v) {
				t.Errorf("%s: tasks --json %s = %v, task_get %v", task["task_id"], k, task[k], v)
			}
		}
		for k := range task {
			if _, ok := get[k]; !ok && k != "created_seq" && k != "thoughts" {
				t.Errorf("%s: tasks --json has %s, which task_get has not and --help does not name", task["task_id"], k)
			}
		}
		if task["created_seq"] == nil || task["thoughts"] == nil {
			t.Errorf("%s: no created_seq or thoughts: %v", task["task_id"], task)
		}
	}
	if h := run(t, "tasks", "--help"); !strings.Contains(h.stdout, "each task as task_get answers it, with created_seq") {
		t.Errorf("tasks --help does not name the fields task_get has not:\n%s", h.stdout)
	}
}

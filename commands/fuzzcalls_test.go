package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// goodValues and badValues are values a generated call gives its
// arguments: ones the contract takes, and each kind of bad one (empty,
// blank, huge, wrong type, ids of other kinds, out of range).
var goodValues = map[string][]any{
	"id":      {"T-0001", "T-0002", "T-0003", "T-0004", "T-0005", "T-0006", "T-0007", "T-0008", "A-0001", "A-0002", "L-0001", "L-0002"},
	"text":    {"walrus migration plan", "Ünïcödé naïve 日本語 emoji🙂 migrations", "retry flaky uploads with back-off", "a\u0301 TestCheckout snake_case v1.2.3", strings.Repeat("é", 100)},
	"project": {"p", "q", "billing-api"},
	"int":     {0, 1, 5, 50, 100},
	"bool":    {true, false},
	"status":  {"backlog", "todo", "in_progress", "blocked", "review", "done", "cancelled"},
	"list":    {[]any{}, []any{"a", "a", "b"}, []any{"ok.go", "dir/x.go"}},
	"kind":    {[]any{"thought"}, []any{"finding", "memory"}, []any{"learning"}},
	"type":    {"plan", "analysis", "decision", "blockers"},
	"scope":   {"project", "agent", "global", "deep", "shallow"},
	"key":     {"deploy", "build.cmds"},
	"mscope":  {"project", "agent", "global"},
	"sha":     {"abcdef1", "ABCDEF1234"},
	"meta":    {map[string]any{}, map[string]any{"a": 1}},
	"time":    {"2026-01-01T00:00:00Z", "2026-04-08T22:15:35.123Z", "9999-12-31T23:59:59.999Z"},
	"sort":    {"created", "updated", "priority", "progress"},
	"order":   {"asc", "desc"},
	"prio":    {"low", "normal", "high", "critical"},
	"cat":     {"bug", "risk", "gap"},
	"num":     {0, 0.5, 1000},
	"long": {"a learning about retrying flaky uploads with exponential back-off and jitter, twice over",
		"context words differ every time so the quality gate sees many distinct words here and there, and then some more words",
		"when the build cache is cold the integration suite times out, so warm it first with a dry run of the compiler",
		"deployments to the staging cluster need the feature flag service up before the api pods start or they crash loop for minutes"},
}

var badValues = map[string][]any{
	"id": {"T-9999", "T-0000", "T-1", "T-00001", "Θ-0001", "M-0001", "F-0001", "", " ", "T-18446744073709551615", "T-18446744073709551616",
		"T-0001\x00", 7, nil, true, []any{"T-0001"}},
	"text":    {"", " \t\n", strings.Repeat("x", 5001), 12, nil, "\u0000", "\u2028", strings.Repeat("word ", 1001)},
	"project": {"", "P", "-p", strings.Repeat("a", 65), "ρ", 1, "zz-none"},
	"int":     {101, 500, 501, -1, 1.5, 1e300, "5", nil, 9007199254740993, json.Number("18446744073709551616"), 1 << 40},
	"bool":    {"true", 0, nil},
	"status":  {"DONE", "", 3},
	"list":    {[]any{""}, []any{strings.Repeat("l", 65)}, []any{1}, "a", nil, []any{"/abs", "../x", "a//b"}},
	"kind":    {[]any{"bogus"}, []any{"learning", "learning", "learning", "learning", "learning"}, "thought", []any{}},
	"type":    {"bogus", ""},
	"scope":   {"", "bogus"},
	"mscope":  {"deep", ""},
	"key":     {"Deploy", "", strings.Repeat("k", 129), "a\x00b"},
	"sha":     {"xyz", "", strings.Repeat("a", 65)},
	"meta":    {[]any{}, "x", nil, map[string]any{"big": strings.Repeat("m", 17000)}},
	"time":    {"2026-13-01T00:00:00Z", "yesterday", ""},
	"sort":    {"bogus"},
	"order":   {"up"},
	"prio":    {"urgent", ""},
	"cat":     {"nope"},
	"num":     {-1, "1", 1e308, 1000.5},
	"long":    {"short"},
}

// callArgsOf are the argument names of each tool and the values they take.
var callArgsOf = map[string]map[string]string{
	"task_create": {"title": "!text", "project": "!project", "description": "text", "parent_id": "id", "priority": "prio", "labels": "list",
		"assignee": "text", "estimate_hours": "num"},
	"task_update": {"task_id": "!id", "status": "status", "progress": "int", "title": "text", "description": "text", "priority": "prio",
		"assignee": "text", "labels": "list", "blocked_reason": "text"},
	"task_get":          {"task_id": "!id", "include_thought_trail": "bool", "include_dependents": "bool", "as_of_seq": "int"},
	"task_list":         {"project": "project", "status": "list", "priority": "list", "assignee": "text", "label": "text", "created_after": "time", "created_before": "time", "search": "text", "limit": "int", "offset": "int", "sort_by": "sort", "sort_order": "order"},
	"task_next_actions": {"project": "project", "limit": "int", "include_blocked": "bool"},
	"thought_record": {"task_id": "!id", "type": "!type", "content": "!text", "session_id": "id", "branch": "text", "commit_sha": "sha",
		"tests_run": "list", "blockers": "list", "metadata": "meta"},
	"thought_record_list":  {"task_id": "id", "session_id": "id", "type": "type", "limit": "int", "verify_chain": "bool"},
	"audit_session_start":  {"task_id": "!id", "auditor_id": "!text", "reason": "text", "scope": "scope"},
	"merkle_finalize":      {"session_id": "!id", "task_id": "id"},
	"merkle_root":          {"session_id": "!id"},
	"audit_verify_chain":   {"session_id": "id", "task_id": "id", "full_trace": "bool"},
	"skill_list":           {"search": "text", "capability": "text"},
	"server_ping":          {},
	"server_health":        {},
	"finding_record":       {"task_id": "!id", "category": "!cat", "summary": "!text", "details": "text", "files": "list"},
	"learning_record":      {"pattern": "!long", "context": "!long", "project": "!project", "tags": "list", "source_task_id": "id", "supersedes": "id"},
	"learning_supersede":   {"learning_id": "!id", "by": "!id"},
	"memory_write":         {"key": "!key", "scope": "!scope", "project": "project", "content": "!text"},
	"memory_read":          {"key": "!key", "scope": "!mscope", "project": "project", "as_of_seq": "int"},
	"memory_history":       {"key": "!key", "scope": "mscope", "project": "project", "limit": "int"},
	"knowledge_search":     {"query": "!text", "kinds": "kind", "project": "project", "cross_project": "bool", "limit": "int", "as_of_seq": "int"},
	"no_such_tool_at_all!": {"x": "text"},
}

// TestRandomCalls makes random calls, good and bad, to every tool: none
// answers ERR_INTERNAL, a refused one appends its tool.called alone, and
// (the harness, at the end) a rebuild gives the live projections.
func TestRandomCalls(t *testing.T) {
	tools := slices.Sorted(maps.Keys(callArgsOf)) // (in order: a seed makes the same calls every run)
	seeds := 2
	if testing.Short() {
		seeds = 1
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			h := newHarnessWith(t, Options{Agent: "fuzz"}, boltstore.Options{Now: newFakeClock().Now})
			// A few good tasks first, so ids name something.
			for i := range 4 {
				h.call("task_create", map[string]any{"title": fmt.Sprint("task ", i), "project": []string{"p", "q"}[i%2]}, "OK")
			}
			h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "x", "scope": "deep"}, "OK")
			for range 800 {
				tool := tools[rng.IntN(len(tools))]
				if rng.IntN(3) == 0 {
					tool = []string{"task_create", "thought_record", "task_update", "memory_write", "knowledge_search"}[rng.IntN(5)]
				}
				args := map[string]any{}
				for _, name := range slices.Sorted(maps.Keys(callArgsOf[tool])) {
					kind, n := callArgsOf[tool][name], rng.IntN(40)
					if required := strings.HasPrefix(kind, "!"); required {
						kind, n = kind[1:], n%30
					}
					switch {
					case n == 0:
						vals := badValues[kind]
						args[name] = vals[rng.IntN(len(vals))]
					case n < 30:
						vals := goodValues[kind]
						args[name] = vals[rng.IntN(len(vals))]
					}
				}
				if rng.IntN(20) == 0 {
					args["unknown_key"] = 1
				}
				before := h.head()
				o := h.doCall(Call{Name: tool, Command: named(tool), Args: mustJSON(t, args)})
				if o.Code == "ERR_INTERNAL" {
					t.Fatalf("%s(%s): ERR_INTERNAL: %v", tool, mustJSON(t, args), o.Err)
				}
				if o.Code != "OK" && h.head() != before+1 {
					t.Fatalf("%s(%s) = %s appended %d events", tool, mustJSON(t, args), o.Code, h.head()-before)
				}
				if o.Code == "OK" {
					if err := checkAnswer(tool, args, o.Data); err != nil {
						t.Fatalf("%s(%s): %v: %s", tool, mustJSON(t, args), err, o.Reply)
					}
				}
			}
			checkTimeTravel(t, h)
		})
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRandomCallsConcurrent makes random calls from several goroutines at
// once, on a held file (reads answered aside) and a shared one: none
// answers ERR_INTERNAL, each appends one tool.called, and a rebuild gives
// the live projections.
func TestRandomCallsConcurrent(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(fmt.Sprint("hold ", hold), func(t *testing.T) {
			h := newHarnessWith(t, Options{Agent: "fuzz"}, boltstore.Options{Hold: hold})
			h.tampered = true // calls in parallel: the order checks do not hold; checked below
			for i := range 4 {
				h.call("task_create", map[string]any{"title": fmt.Sprint("task ", i), "project": []string{"p", "q"}[i%2]}, "OK")
			}
			tools := slices.Sorted(maps.Keys(callArgsOf))
			const workers, calls = 6, 150
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 11))
					for range calls {
						tool := tools[rng.IntN(len(tools))]
						args := map[string]any{}
						for name, kind := range callArgsOf[tool] {
							kind = strings.TrimPrefix(kind, "!")
							if rng.IntN(4) != 0 {
								vals := goodValues[kind]
								args[name] = vals[rng.IntN(len(vals))]
							}
						}
						b, _ := json.Marshal(args)
						out, err := h.svc.Do(context.Background(), Call{Name: tool, Command: named(tool), Args: b, Client: "c", Encode: testEncode})
						if err != nil {
							errs <- fmt.Errorf("%s: %v", tool, err)
							return
						}
						var r reply
						if json.Unmarshal(out, &r) != nil || !r.OK && r.Error.Code == "ERR_INTERNAL" {
							errs <- fmt.Errorf("%s(%s): %s", tool, b, out)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if n := len(h.toolCalls()); n != 4+workers*calls {
				t.Errorf("%d tool.called events for %d calls", n, 4+workers*calls)
			}
			live := h.fingerprint()
			if _, err := Rebuild(h.l, projections.RebuildOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			if rebuilt := h.fingerprint(); rebuilt != live {
				t.Errorf("rebuilt projections differ from live ones")
			}
		})
	}
}

// checkAnswer checks what the contract says of a successful answer to a
// query: pages within their limit, rows that pass the filters asked for,
// nothing listed twice.
func checkAnswer(tool string, args, data map[string]any) error {
	num := func(v any) int { f, _ := v.(float64); return int(f) }
	limit := func(def int) int {
		if l, ok := args["limit"].(int); ok {
			return l
		}
		return def
	}
	unique := func(rows []any, key string) error {
		seen := map[any]bool{}
		for _, r := range rows {
			id := r.(map[string]any)[key]
			if seen[id] {
				return fmt.Errorf("%v listed twice", id)
			}
			seen[id] = true
		}
		return nil
	}
	switch tool {
	case "knowledge_search":
		hits, _ := data["hits"].([]any)
		if len(hits) > limit(10) || num(data["count"]) != len(hits) {
			return fmt.Errorf("%d hits, count %v, limit %d", len(hits), data["count"], limit(10))
		}
		kinds, _ := args["kinds"].([]any)
		for _, hv := range hits {
			hit := hv.(map[string]any)
			if len(kinds) > 0 && !slices.Contains(kinds, hit["kind"]) {
				return fmt.Errorf("hit %v of kind %v, not of %v", hit["id"], hit["kind"], kinds)
			}
			if p, ok := args["project"].(string); ok && p != "" && args["cross_project"] != true && hit["project"] != p {
				return fmt.Errorf("hit %v of project %v, not %s", hit["id"], hit["project"], p)
			}
			if a, ok := args["as_of_seq"].(int); ok && num(hit["seq"]) > a {
				return fmt.Errorf("hit %v at seq %v, past as_of_seq %d", hit["id"], hit["seq"], a)
			}
		}
		for i := 1; i < len(hits); i++ {
			a, b := hits[i-1].(map[string]any), hits[i].(map[string]any)
			if a["score"].(float64) < b["score"].(float64) || a["score"] == b["score"] && num(a["seq"]) < num(b["seq"]) {
				return fmt.Errorf("hits %v and %v out of order", a["id"], b["id"])
			}
		}
		return unique(hits, "id")
	case "task_list":
		rows, _ := data["tasks"].([]any)
		if len(rows) > limit(50) || num(data["returned_count"]) != len(rows) || num(data["total_count"]) < len(rows) {
			return fmt.Errorf("%d rows, returned %v, total %v", len(rows), data["returned_count"], data["total_count"])
		}
		for _, rv := range rows {
			row := rv.(map[string]any)
			if p, ok := args["project"].(string); ok && p != "" && row["project"] != p {
				return fmt.Errorf("row %v of project %v", row["task_id"], row["project"])
			}
			if st, ok := args["status"].([]any); ok && len(st) > 0 && !slices.Contains(st, row["status"]) {
				return fmt.Errorf("row %v in status %v", row["task_id"], row["status"])
			}
		}
		return unique(rows, "task_id")
	case "thought_record_list":
		rows, _ := data["thoughts"].([]any)
		if len(rows) > limit(100) || num(data["thought_count"]) < len(rows) {
			return fmt.Errorf("%d thoughts, count %v", len(rows), data["thought_count"])
		}
		for _, rv := range rows {
			row := rv.(map[string]any)
			if id, ok := args["task_id"].(string); ok && id != "" && row["task_id"] != id {
				return fmt.Errorf("thought %v of task %v", row["thought_id"], row["task_id"])
			}
			if ty, ok := args["type"].(string); ok && ty != "" && row["type"] != ty {
				return fmt.Errorf("thought %v of type %v", row["thought_id"], row["type"])
			}
		}
		if data["chain_valid"] == false {
			return fmt.Errorf("a chain commands wrote does not verify")
		}
		return unique(rows, "thought_id")
	case "memory_history":
		rows, _ := data["versions"].([]any)
		if len(rows) > limit(100) || num(data["version_count"]) < len(rows) {
			return fmt.Errorf("%d versions, count %v", len(rows), data["version_count"])
		}
		return unique(rows, "memory_id")
	case "task_next_actions":
		rows, _ := data["next_actions"].([]any)
		if len(rows) > limit(20) || num(data["count"]) != len(rows) {
			return fmt.Errorf("%d actions, count %v", len(rows), data["count"])
		}
		return unique(rows, "task_id")
	case "audit_verify_chain":
		if data["chain_valid"] != true || data["merkle_valid"] == false {
			return fmt.Errorf("a ledger commands wrote does not verify")
		}
	}
	return nil
}

// checkTimeTravel: every task as folded live is the task as time travel
// folds it from the log at the head, and counts as many thoughts
// (CountThoughts) as its chain lists.
func checkTimeTravel(t *testing.T, h *harness) {
	t.Helper()
	err := h.l.View(func(tx *boltstore.Tx) error {
		return projections.Tasks(tx, func(live projections.Task) bool {
			past, ok, err := projections.TaskAsOf(tx, live.ID, tx.Head().Seq)
			if err != nil || !ok || !reflect.DeepEqual(past.TaskState, live.TaskState) {
				t.Errorf("%s live %+v\nfolded from the log %+v (%v)", live.ID, live.TaskState, past.TaskState, err)
			}
			n := uint64(0)
			if err := projections.CountThoughts(tx, &live); err != nil {
				t.Errorf("%s: CountThoughts: %v", live.ID, err)
			}
			if err := projections.TaskThoughts(tx, live.ID, func(projections.Thought) bool { n++; return true }); err != nil || n != live.Thoughts {
				t.Errorf("%s: %d thoughts counted, %d in its chain (%v)", live.ID, live.Thoughts, n, err)
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

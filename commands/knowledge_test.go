package commands

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestSearchKnowledge records knowledge of every kind in two projects and
// searches it: stemming, several words, kinds, projects, supersession, the
// latest memory only, time travel, and hits that name their event.
func TestSearchKnowledge(t *testing.T) {
	h := newHarness(t, Options{Agent: "agent-a", Project: "core"})
	h.call("task_create", map[string]any{"title": "Parser", "project": "core"}, "OK")
	h.call("task_create", map[string]any{"title": "Site", "project": "web"}, "OK")
	th := h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "analysis",
		"content": "The integration tests were failing because the lexer drops the final rune."}, "OK")
	h.call("finding_record", map[string]any{"task_id": "T-0001", "category": "bug", "summary": "Lexer test failed on trailing rune",
		"details": "scan.go stops one rune early.", "files": []string{"lexer/scan.go"}}, "OK")
	h.call("finding_record", map[string]any{"task_id": "T-0002", "category": "test_result", "summary": "All browser tests pass"}, "OK")
	l1 := h.call("learning_record", learning(retryPattern, retryContext, "core", nil), "OK")
	h.call("learning_record", learning(lockPattern, lockContext, "core", nil), "OK")
	m1 := h.call("memory_write", map[string]any{"key": "deploy", "scope": "global", "content": "Deploy with the kubernetes operator."}, "OK")
	h.call("memory_write", map[string]any{"key": "deploy", "scope": "global", "content": "Deploy with terraform now."}, "OK")

	search := func(args map[string]any) []map[string]any {
		t.Helper()
		d := h.call("knowledge_search", args, "OK")
		wantKeys(t, "knowledge_search", d, append([]string{"query", "count", "hits", "as_of_seq"}, optional(d, "project")...)...)
		var hits []map[string]any
		for _, x := range list(t, d["hits"]) {
			hits = append(hits, obj(t, x))
		}
		if d["count"] != float64(len(hits)) {
			t.Errorf("count %v for %d hits", d["count"], len(hits))
		}
		return hits
	}
	ids := func(hits []map[string]any) []string {
		var out []string
		for _, hit := range hits {
			out = append(out, hit["id"].(string))
		}
		return out
	}

	// Stemming: "failing tests" matches "tests were failing" and "test failed".
	hits := search(map[string]any{"query": "failing tests"})
	if got := ids(hits); len(got) != 2 || !slices.Contains(got, "Θ-0001") || !slices.Contains(got, "F-0001") {
		t.Fatalf("failing tests (project core by --project) = %v", got)
	}
	// Each hit names the event that recorded it, so it can be proven.
	for _, hit := range hits {
		wantKeys(t, "hit", hit, "id", "kind", "project", "field", "snippet", "matched", "author", "seq", "hash", "score")
		var hash string
		h.l.View(func(tx *boltstore.Tx) error {
			r, err := tx.Event(uint64(hit["seq"].(float64)))
			hash = r.Hash.String()
			return err
		})
		if hit["hash"] != hash || hit["author"] != "agent-a" || hit["project"] != "core" {
			t.Errorf("hit %v: hash of event %v is %s", hit, hit["seq"], hash)
		}
	}
	if hits[0]["kind"] == "thought" && hits[0]["seq"] != th["seq"] {
		t.Errorf("thought hit seq %v, recorded at %v", hits[0]["seq"], th["seq"])
	}
	// Kinds, projects.
	if got := ids(search(map[string]any{"query": "failing tests", "kinds": []string{"finding"}})); fmt.Sprint(got) != "[F-0001]" {
		t.Errorf("kinds finding = %v", got)
	}
	if got := ids(search(map[string]any{"query": "tests", "project": "web"})); fmt.Sprint(got) != "[F-0002]" {
		t.Errorf("project web = %v", got)
	}
	if got := ids(search(map[string]any{"query": "tests", "cross_project": true})); len(got) != 3 {
		t.Errorf("cross_project = %v", got)
	}
	// Global memory has no project: found across projects, latest version only.
	if got := ids(search(map[string]any{"query": "terraform", "cross_project": true})); fmt.Sprint(got) != "[M-0002]" {
		t.Errorf("latest memory = %v", got)
	}
	if got := ids(search(map[string]any{"query": "kubernetes operator", "cross_project": true})); len(got) != 0 {
		t.Errorf("replaced memory version still found: %v", got)
	}
	// A superseded learning is found no more; its successor is.
	if got := ids(search(map[string]any{"query": "polling fifty milliseconds"})); len(got) == 0 || got[0] != "L-0001" {
		t.Errorf("before supersede = %v", got)
	}
	h.call("learning_record", learning(retryReworded, retryContext2, "core", map[string]any{"supersedes": "L-0001"}), "OK")
	if got := ids(search(map[string]any{"query": "polling fifty milliseconds"})); len(got) == 0 || got[0] != "L-0003" || slices.Contains(got, "L-0001") {
		t.Errorf("after supersede = %v", got)
	}
	// Time travel: as of the first learning, later knowledge is hidden.
	asOf := l1["seq"].(float64)
	if got := ids(search(map[string]any{"query": "lexer rune", "as_of_seq": asOf})); len(got) != 2 {
		t.Errorf("as of %v: %v", asOf, got)
	}
	if got := ids(search(map[string]any{"query": "deploy", "cross_project": true, "as_of_seq": m1["seq"].(float64) - 1})); len(got) != 0 {
		t.Errorf("memory before it was written: %v", got)
	}
	if got := search(map[string]any{"query": "lexer", "as_of_seq": 0}); len(got) != 0 {
		t.Errorf("as of 0: %v", got)
	}
	// Limit, stop words, refusals.
	if got := search(map[string]any{"query": "tests lexer rune", "cross_project": true, "limit": 1}); len(got) != 1 {
		t.Errorf("limit 1: %v", got)
	}
	if got := search(map[string]any{"query": "the of and"}); len(got) != 0 {
		t.Errorf("stop words only: %v", got)
	}
	for _, args := range []map[string]any{
		{"query": ""}, {"query": "x", "kinds": []string{"task"}}, {"query": "x", "limit": 0}, {"query": "x", "limit": 101},
		{"query": "x", "project": "Not A Slug"}, {"query": "x", "as_of_seq": h.head() + 10}, {"query": "a\nb"}, {},
	} {
		h.call("knowledge_search", args, "ERR_INVALID_INPUT")
	}
}

// TestSearchKnowledgeProject: a project searched must have a task, as
// everything indexed under a project needs one (thoughts and findings are
// on tasks, learning_record and project memory require one). An unknown
// project, given or the server's --project, answered 0 hits, which read as
// "nothing matches" for a mistyped slug; it is now ERR_PROJECT_NOT_FOUND,
// as task_next_actions and learning_record answer. cross_project beside a
// project asked for one project and for all, and project was silently
// ignored; it is now invalid input at cross_project.
func TestSearchKnowledgeProject(t *testing.T) {
	h := newHarness(t, Options{Agent: "agent-a", Project: "core"})
	reply := func(args map[string]any, code string) string {
		t.Helper()
		o := h.do("knowledge_search", args)
		if o.Code != code {
			t.Fatalf("knowledge_search(%v) = %s, want %s: %s", args, o.Code, code, o.Reply)
		}
		return string(o.Reply)
	}
	// --project core has no task yet.
	if r := reply(map[string]any{"query": "lexer"}, "ERR_PROJECT_NOT_FOUND"); !strings.Contains(r, `project not found: core"`) {
		t.Errorf("--project core without a task: %s", r)
	}
	h.call("task_create", map[string]any{"title": "Parser", "project": "core"}, "OK")
	h.call("finding_record", map[string]any{"task_id": "T-0001", "category": "bug", "summary": "Lexer drops a rune"}, "OK")
	h.call("memory_write", map[string]any{"key": "lexer", "scope": "global", "content": "The lexer is in lexer/."}, "OK")
	before := h.head()
	if r := reply(map[string]any{"query": "lexer", "project": "cor"}, "ERR_PROJECT_NOT_FOUND"); !strings.Contains(r, `project not found: cor"`) {
		t.Errorf("project cor: %s", r)
	}
	// Checked against the ledger now: a project made after as_of_seq is
	// known, and has no knowledge as of then.
	h.call("task_create", map[string]any{"title": "Site", "project": "web"}, "OK")
	h.call("finding_record", map[string]any{"task_id": "T-0002", "category": "bug", "summary": "Lexer of the templates"}, "OK")
	if d := h.call("knowledge_search", map[string]any{"query": "lexer", "project": "web", "as_of_seq": before}, "OK"); d["count"] != 0.0 {
		t.Errorf("web as of %d: %v", before, d)
	}
	if d := h.call("knowledge_search", map[string]any{"query": "lexer", "project": "web"}, "OK"); d["count"] != 1.0 || d["project"] != "web" {
		t.Errorf("web: %v", d)
	}
	// cross_project searches every project instead of --project...
	if d := h.call("knowledge_search", map[string]any{"query": "lexer", "cross_project": true}, "OK"); d["count"] != 3.0 || d["project"] != nil {
		t.Errorf("cross_project: %v", d)
	}
	if d := h.call("knowledge_search", map[string]any{"query": "lexer", "project": "web", "cross_project": false}, "OK"); d["count"] != 1.0 {
		t.Errorf("project web, cross_project false: %v", d)
	}
	// ...and is refused beside a project, known or not, before the project is looked up.
	for _, p := range []string{"web", "nowhere"} {
		r := reply(map[string]any{"query": "lexer", "project": p, "cross_project": true}, "ERR_INVALID_INPUT")
		if !strings.Contains(r, `invalid input: cross_project: searches every project, and project \"`+p+`\" one`) {
			t.Errorf("project %s with cross_project: %s", p, r)
		}
	}
}

// A search as of a seq answers the same — hits, order and scores — however
// much is recorded after that seq (a helper's attack: BM25's figures were
// the head's, so later thoughts reordered a past search's hits).
func TestSearchKnowledgeAsOfIsRepeatable(t *testing.T) {
	h := newHarness(t, Options{Agent: "agent-a", Project: "core"})
	h.call("task_create", map[string]any{"title": "t", "project": "core"}, "OK")
	for _, c := range []string{"alpha", "beta", "beta gamma"} {
		h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "analysis", "content": c}, "OK")
	}
	asOf := h.head()
	args := map[string]any{"query": "alpha beta", "as_of_seq": asOf, "limit": 100}
	before := h.call("knowledge_search", args, "OK")
	if n := len(list(t, before["hits"])); n != 3 {
		t.Fatalf("as of %d: %d hits, want 3", asOf, n)
	}
	for range 3 {
		h.call("thought_record", map[string]any{"task_id": "T-0001", "type": "analysis", "content": "alpha delta"}, "OK")
	}
	h.call("finding_record", map[string]any{"task_id": "T-0001", "category": "bug", "summary": "beta beta beta"}, "OK")
	after := h.call("knowledge_search", args, "OK")
	if !reflect.DeepEqual(before["hits"], after["hits"]) {
		t.Errorf("as of %d, before and after later records:\n%v\n%v", asOf, before["hits"], after["hits"])
	}
	// At the head the later records count, and rank.
	if head := h.call("knowledge_search", map[string]any{"query": "alpha beta", "limit": 100}, "OK"); len(list(t, head["hits"])) != 7 {
		t.Errorf("at the head: %v", head["hits"])
	}
}

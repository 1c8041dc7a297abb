package commands

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

// learningFiller is the context of the fixture's learnings, whose text is
// one field: learning_record needs a context of 100 characters, and these
// words occur in no query.
const learningFiller = "Copied verbatim from the knowledge fixture corpus into this ledger, so that its ranking can be measured end to end through knowledge_search."

// TestSearchQualityEndToEnd records the search fixture's 366 entries
// (fixtures/knowledge/corpus.txt, four projects) through the commands, as
// thoughts, findings, learnings and project memory, and runs its judged
// queries through knowledge_search: the ranking the package search measures
// in isolation must survive the fields, projects and kinds the folds give
// it. It reports precision@5 and MRR; the floors are the measured figures,
// rounded down. (The harness then checks that a rebuild from the log
// reproduces the index.)
func TestSearchQualityEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("records 366 entries")
	}
	h := newHarness(t, Options{})
	tasks := map[string]string{} // project → its task
	ids := map[string]string{}   // fixture id → logbook id
	for i, f := range fixture(t, "corpus.txt", 5) {
		fid, kind, project, author, text := f[0], f[1], f[2], f[3], f[4]
		h.svc.opts.Agent = author
		if tasks[project] == "" {
			tasks[project] = h.call("task_create", map[string]any{"title": "Work on " + project, "project": project}, "OK")["task_id"].(string)
		}
		var d map[string]any
		switch kind {
		case "thought":
			d = h.call("thought_record", map[string]any{"task_id": tasks[project], "type": "analysis", "content": text}, "OK")
			ids[fid] = d["thought_id"].(string)
		case "finding":
			d = h.call("finding_record", map[string]any{"task_id": tasks[project], "category": "bug", "summary": text}, "OK")
			ids[fid] = d["finding_id"].(string)
		case "learning":
			d = h.call("learning_record", map[string]any{"pattern": text, "context": learningFiller, "project": project}, "OK")
			ids[fid] = d["learning_id"].(string)
		case "memory":
			d = h.call("memory_write", map[string]any{"key": "note-" + strings.ToLower(fid[2:]), "scope": "project", "project": project, "content": text}, "OK")
			ids[fid] = d["memory_id"].(string)
		default:
			t.Fatalf("corpus line %d: kind %q", i+1, kind)
		}
	}
	h.svc.opts.Agent = "searcher"
	queries := fixture(t, "queries.txt", 4)
	if len(ids) < 300 || len(queries) < 30 {
		t.Fatalf("fixture too small: %d entries, %d queries", len(ids), len(queries))
	}
	var p5, p5norm, mrr float64
	for _, q := range queries {
		args := map[string]any{"query": q[0], "limit": 10, "cross_project": q[1] == "*"}
		if q[1] != "*" {
			args["project"] = q[1]
		}
		if q[2] != "*" {
			args["kinds"] = strings.Split(q[2], ",")
		}
		var relevant []string
		for _, fid := range strings.Split(q[3], ",") {
			if ids[fid] == "" {
				t.Fatalf("query %q: unknown id %s", q[0], fid)
			}
			relevant = append(relevant, ids[fid])
		}
		var got []string
		for _, hit := range list(t, h.call("knowledge_search", args, "OK")["hits"]) {
			got = append(got, obj(t, hit)["id"].(string))
		}
		found, rr := 0, 0.0
		for i, id := range got {
			if !slices.Contains(relevant, id) {
				continue
			}
			if i < 5 {
				found++
			}
			if rr == 0 {
				rr = 1 / float64(i+1)
			}
		}
		p5 += float64(found) / 5
		p5norm += float64(found) / float64(min(5, len(relevant)))
		mrr += rr
		if rr < 1 {
			t.Logf("weak: %q: top %q, relevant %q (rr %.2f)", q[0], got[:min(5, len(got))], relevant, rr)
		}
	}
	n := float64(len(queries))
	p5, p5norm, mrr = p5/n, p5norm/n, mrr/n
	t.Logf("%d entries, %d queries through knowledge_search: precision@5 %.3f, over min(5, relevant) %.3f, MRR %.3f",
		len(ids), len(queries), p5, p5norm, mrr)
	if mrr < 0.95 || p5norm < 0.85 {
		t.Errorf("below the floors: MRR %.3f (floor 0.95), normalised precision@5 %.3f (floor 0.85)", mrr, p5norm)
	}
}

// fixture splits the non-comment lines of fixtures/knowledge/name on "|".
func fixture(t testing.TB, name string, fields int) [][]string {
	t.Helper()
	f, err := os.Open("../fixtures/knowledge/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "|", fields)
		if len(parts) != fields {
			t.Fatalf("%s: %q: want %d fields", name, line, fields)
		}
		out = append(out, parts)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

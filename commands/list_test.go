package commands

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// listed returns the task ids of a task_list or next_actions answer.
func listed(t *testing.T, d map[string]any, field string) []string {
	t.Helper()
	ids := []string{}
	for _, x := range list(t, d[field]) {
		ids = append(ids, obj(t, x)["task_id"].(string))
	}
	return ids
}

// agreesWithTaskGet checks that a list item holds exactly the fields named,
// each equal to what task_get reports for the same task (CONTRACT.md §1:
// every domain object, a list's item too, reports the seq of the event that
// last changed it).
func agreesWithTaskGet(t *testing.T, h *harness, item map[string]any, fields ...string) {
	t.Helper()
	got := h.call("task_get", map[string]any{"task_id": item["task_id"]}, "OK")
	for _, f := range fields {
		if v, ok := item[f]; !ok || v != got[f] {
			t.Errorf("%s item %s = %v (present %v), task_get says %v", item["task_id"], f, v, ok, got[f])
		}
	}
	for f := range item {
		if !slices.Contains(fields, f) {
			t.Errorf("%s item has %s, not expected", item["task_id"], f)
		}
	}
}

func TestTaskList(t *testing.T) {
	h := newHarnessWith(t, Options{}, boltstore.Options{Now: newFakeClock().Now})
	type task struct {
		id                   string
		n                    int // creation order
		project, title, desc string
		priority, assignee   string
		labels               []string
		createdAt            string
		seq                  float64 // last change
		progress             float64
	}
	var tasks []*task
	for i, c := range []task{
		{project: "core", title: "Write parser", desc: "lexer and grammar", priority: "high", assignee: "alice", labels: []string{"a"}},
		{project: "core", title: "Parser tests", priority: "low", assignee: "bob", labels: []string{"a", "b"}},
		{project: "web", title: "Deploy site", desc: "write the PARSER docs", priority: "critical", assignee: "alice", labels: []string{"b"}},
		{project: "web", title: "Refactor", priority: "normal"},
		{project: "core", title: "Grammar notes", priority: "normal", assignee: "alice"},
		{project: "ops", title: "Rotate keys", desc: "monthly", priority: "high", assignee: "bob", labels: []string{"c"}},
	} {
		args := map[string]any{"title": c.title, "project": c.project, "priority": c.priority}
		if c.desc != "" {
			args["description"] = c.desc
		}
		if c.assignee != "" {
			args["assignee"] = c.assignee
		} else {
			c.assignee = "unassigned"
		}
		if c.labels != nil {
			args["labels"] = c.labels
		}
		d := h.call("task_create", args, "OK")
		c.id, c.n, c.createdAt, c.seq = d["task_id"].(string), i, d["created_at"].(string), d["seq"].(float64)
		tasks = append(tasks, &c)
	}
	update := func(i int, args map[string]any) {
		args["task_id"] = tasks[i].id
		d := h.call("task_update", args, "OK")
		tasks[i].seq, tasks[i].progress = d["seq"].(float64), d["progress"].(float64)
	}
	update(2, map[string]any{"status": "todo"})
	update(0, map[string]any{"progress": 50})
	update(4, map[string]any{"progress": 50})
	update(1, map[string]any{"status": "todo"})
	update(1, map[string]any{"status": "in_progress", "progress": 20})
	update(5, map[string]any{"status": "cancelled"})

	ids := func(ns ...int) []string {
		out := []string{}
		for _, n := range ns {
			out = append(out, tasks[n].id)
		}
		return out
	}

	t.Run("filters", func(t *testing.T) {
		for _, c := range []struct {
			args map[string]any
			want []string
		}{
			{map[string]any{}, ids(0, 1, 2, 3, 4, 5)},
			{map[string]any{"project": "core"}, ids(0, 1, 4)},
			{map[string]any{"project": "none"}, ids()},
			{map[string]any{"status": []string{"todo"}}, ids(2)},
			{map[string]any{"status": []string{"todo", "in_progress"}}, ids(1, 2)},
			{map[string]any{"status": []string{"backlog"}}, ids(0, 3, 4)},
			{map[string]any{"priority": []string{"high"}}, ids(0, 5)},
			{map[string]any{"priority": []string{"high", "critical"}}, ids(0, 2, 5)},
			{map[string]any{"assignee": "alice"}, ids(0, 2, 4)},
			{map[string]any{"assignee": "unassigned"}, ids(3)},
			{map[string]any{"label": "a"}, ids(0, 1)},
			{map[string]any{"label": "b"}, ids(1, 2)},
			{map[string]any{"label": "A"}, ids()},
			{map[string]any{"created_after": tasks[1].createdAt}, ids(2, 3, 4, 5)},
			{map[string]any{"created_before": tasks[3].createdAt}, ids(0, 1, 2)},
			{map[string]any{"created_after": tasks[1].createdAt, "created_before": tasks[3].createdAt}, ids(2)},
			// RFC 3339 §5.6: "T" and "Z" may be written in lower case.
			{map[string]any{"created_after": strings.ToLower(tasks[1].createdAt), "created_before": strings.ToLower(tasks[3].createdAt)}, ids(2)},
			{map[string]any{"search": "parser"}, ids(0, 1, 2)},
			{map[string]any{"search": "WRITE parser"}, ids(0, 2)},
			{map[string]any{"search": "  PARSER\tTests "}, ids(1)},
			// Every word, each in the title or the description.
			{map[string]any{"search": "parser grammar"}, ids(0)},
			{map[string]any{"search": "monthly"}, ids(5)},
			{map[string]any{"search": "zzz"}, ids()},
			{map[string]any{"project": "core", "assignee": "alice", "search": "grammar"}, ids(0, 4)},
		} {
			c.args["sort_by"], c.args["sort_order"] = "created", "asc"
			d := h.call("task_list", c.args, "OK")
			if got := listed(t, d, "tasks"); !reflect.DeepEqual(got, c.want) {
				t.Errorf("task_list(%v) = %v, want %v", c.args, got, c.want)
			}
			if d["total_count"] != float64(len(c.want)) || d["returned_count"] != float64(len(c.want)) {
				t.Errorf("task_list(%v): total %v returned %v, want %d", c.args, d["total_count"], d["returned_count"], len(c.want))
			}
		}
	})

	t.Run("rows", func(t *testing.T) {
		d := h.call("task_list", map[string]any{"sort_by": "created", "sort_order": "asc"}, "OK")
		for i, x := range list(t, d["tasks"]) {
			row, tk := obj(t, x), tasks[i]
			agreesWithTaskGet(t, h, row, "task_id", "title", "project", "status", "priority", "progress", "assignee", "created_at", "updated_at", "seq")
			if row["seq"] != tk.seq {
				t.Errorf("%s row seq = %v, its last task_create or task_update answered %v", tk.id, row["seq"], tk.seq)
			}
		}
	})

	t.Run("sort", func(t *testing.T) {
		rank := map[string]int{"low": 0, "normal": 1, "high": 2, "critical": 3}
		key := map[string]func(*task) float64{
			"created":  func(x *task) float64 { return float64(x.n) },
			"updated":  func(x *task) float64 { return x.seq },
			"priority": func(x *task) float64 { return float64(rank[x.priority]) },
			"progress": func(x *task) float64 { return x.progress },
		}
		for _, by := range []string{"", "created", "updated", "priority", "progress"} {
			for _, order := range []string{"", "asc", "desc"} {
				args := map[string]any{}
				if by != "" {
					args["sort_by"] = by
				}
				if order != "" {
					args["sort_order"] = order
				}
				k := key[cmp.Or(by, "updated")]
				want := slices.Clone(tasks)
				slices.SortFunc(want, func(a, b *task) int {
					c := cmp.Compare(k(a), k(b))
					if order != "asc" {
						c = -c
					}
					return cmp.Or(c, cmp.Compare(a.n, b.n)) // ties: creation order
				})
				var wantIDs []string
				for _, x := range want {
					wantIDs = append(wantIDs, x.id)
				}
				if got := listed(t, h.call("task_list", args, "OK"), "tasks"); !reflect.DeepEqual(got, wantIDs) {
					t.Errorf("sort_by %q sort_order %q = %v, want %v", by, order, got, wantIDs)
				}
			}
		}
	})

	t.Run("paging", func(t *testing.T) {
		for _, c := range []struct {
			limit, offset int
			want          []string
		}{
			{2, 0, ids(0, 1)},
			{2, 1, ids(1, 2)},
			{10, 5, ids(5)},
			{3, 6, ids()},
			{1, 100, ids()},
			{500, 0, ids(0, 1, 2, 3, 4, 5)},
		} {
			d := h.call("task_list", map[string]any{"sort_by": "created", "sort_order": "asc", "limit": c.limit, "offset": c.offset}, "OK")
			got := listed(t, d, "tasks")
			want := map[string]any{"total_count": 6.0, "returned_count": float64(len(c.want)), "offset": float64(c.offset), "limit": float64(c.limit)}
			delete(d, "tasks")
			if !reflect.DeepEqual(got, c.want) || !reflect.DeepEqual(d, want) {
				t.Errorf("limit %d offset %d = %v %v, want %v %v", c.limit, c.offset, got, d, c.want, want)
			}
		}
	})
}

func TestNextActions(t *testing.T) {
	h := newHarness(t, Options{})
	ids := map[string]string{}
	create := func(name, project, priority, parent string, states ...string) {
		args := map[string]any{"title": name, "project": project, "priority": priority}
		if parent != "" {
			args["parent_id"] = ids[parent]
		}
		if name == "A" {
			args["estimate_hours"] = 3
		}
		id := h.call("task_create", args, "OK")["task_id"].(string)
		ids[name] = id
		if slices.Contains(states, "done") {
			h.call("thought_record", map[string]any{"task_id": id, "type": "plan", "content": "p"}, "OK")
		}
		for _, st := range states {
			args := map[string]any{"task_id": id, "status": st}
			if st == "blocked" {
				args["blocked_reason"] = "vendor " + name
			}
			h.call("task_update", args, "OK")
		}
	}
	create("A", "na", "normal", "", "todo")
	create("B", "na", "critical", "", "todo")
	create("C", "na", "normal", "", "todo")
	create("D", "na", "high", "", "todo")
	create("E", "na", "high", "", "todo", "blocked")
	create("F", "na", "critical", "", "todo", "in_progress")
	create("G", "na", "low", "", "todo")
	create("H", "na", "critical", "", "todo")
	create("C1", "na", "normal", "C")                                          // backlog: unmet
	create("C2", "na", "normal", "C", "todo", "in_progress", "blocked")        // blocked: unmet
	create("D1", "na", "normal", "D", "cancelled")                             // met
	create("D2", "na", "normal", "D")                                          // unmet
	create("D3", "na", "normal", "D", "todo", "in_progress", "review", "done") // met
	create("Z", "zz", "critical", "", "todo")
	create("Y", "zz", "low", "", "todo", "blocked")
	names := func(d map[string]any, field string) []string {
		byID := map[string]string{}
		for n, id := range ids {
			byID[id] = n
		}
		out := []string{}
		for _, id := range listed(t, d, field) {
			out = append(out, byID[id])
		}
		return out
	}

	d := h.call("task_next_actions", map[string]any{"project": "na", "include_blocked": true}, "OK")
	if got, want := names(d, "next_actions"), []string{"B", "H", "A", "G", "D", "C"}; !reflect.DeepEqual(got, want) {
		t.Errorf("next_actions = %v, want %v", got, want)
	}
	unmet := map[string]float64{}
	for _, x := range list(t, d["next_actions"]) {
		unmet[obj(t, x)["title"].(string)] = obj(t, x)["dependencies_unmet"].(float64)
	}
	if want := map[string]float64{"A": 0, "B": 0, "C": 2, "D": 1, "G": 0, "H": 0}; !reflect.DeepEqual(unmet, want) {
		t.Errorf("dependencies_unmet = %v, want %v", unmet, want)
	}
	if got := names(d, "blocked"); !reflect.DeepEqual(got, []string{"E", "C2"}) {
		t.Errorf("blocked = %v, want [E C2]", got)
	}
	if b := obj(t, list(t, d["blocked"])[0]); b["blocked_reason"] != "vendor E" || b["title"] != "E" {
		t.Errorf("blocked entry %v", b)
	}
	for _, x := range list(t, d["next_actions"]) {
		a := maps.Clone(obj(t, x))
		delete(a, "dependencies_unmet") // checked above; task_get has none
		fields := []string{"task_id", "title", "priority", "assignee", "seq"}
		for _, f := range []string{"estimate_hours", "parent_id"} { // present when set
			if _, ok := a[f]; ok {
				fields = append(fields, f)
			}
		}
		agreesWithTaskGet(t, h, a, fields...)
	}
	for _, x := range list(t, d["blocked"]) {
		agreesWithTaskGet(t, h, obj(t, x), "task_id", "title", "blocked_reason", "seq")
	}
	if d["count"] != 6.0 || d["project"] != "na" {
		t.Errorf("count %v project %v", d["count"], d["project"])
	}
	if a := obj(t, list(t, d["next_actions"])[2]); a["estimate_hours"] != 3.0 || a["priority"] != "normal" || a["assignee"] != "unassigned" {
		t.Errorf("A = %v", a)
	}

	d = h.call("task_next_actions", map[string]any{}, "OK")
	if got, want := names(d, "next_actions"), []string{"B", "H", "Z", "A", "G", "D", "C"}; !reflect.DeepEqual(got, want) || d["project"] != nil {
		t.Errorf("all projects: %v (project %v), want %v (null)", got, d["project"], want)
	}
	if _, ok := d["blocked"]; ok {
		t.Errorf("blocked listed without include_blocked")
	}
	d = h.call("task_next_actions", map[string]any{"limit": 2}, "OK")
	if got := names(d, "next_actions"); !reflect.DeepEqual(got, []string{"B", "H"}) || d["count"] != 2.0 {
		t.Errorf("limit 2: %v count %v", got, d["count"])
	}

	// --project: the server's default, overridden by the argument.
	for _, c := range []struct {
		def, arg string
		code     string
		want     []string
	}{
		{"zz", "", "OK", []string{"Z"}},
		{"zz", "na", "OK", []string{"B", "H", "A", "G", "D", "C"}},
		{"nope", "", "ERR_PROJECT_NOT_FOUND", nil},
		{"nope", "zz", "OK", []string{"Z"}},
		{"", "nope", "ERR_PROJECT_NOT_FOUND", nil},
	} {
		svc, err := New(h.l, Options{Project: c.def})
		if err != nil {
			t.Fatal(err)
		}
		h.svc = svc
		args := map[string]any{}
		if c.arg != "" {
			args["project"] = c.arg
		}
		o := h.do("task_next_actions", args)
		if o.Code != c.code {
			t.Fatalf("--project %q, project %q: %s, want %s", c.def, c.arg, o.Code, c.code)
		}
		if c.code != "OK" {
			want := map[string]any{"project": cmp.Or(c.arg, c.def)}
			if got := contractDetails(o.Err); !reflect.DeepEqual(got, want) {
				t.Errorf("details %v, want %v", got, want)
			}
			continue
		}
		if got := names(o.Data, "next_actions"); !reflect.DeepEqual(got, c.want) || o.Data["project"] != cmp.Or(c.arg, c.def) {
			t.Errorf("--project %q, project %q: %v (project %v), want %v", c.def, c.arg, got, o.Data["project"], c.want)
		}
	}
}

// TestListSearchFoldsCase: task_list's search matches whatever the case of
// either side, as Unicode folds it: a final sigma is a sigma, the micro
// sign a mu, the long s an s, the Kelvin sign a k; and as Unicode folds
// it in full, not simply: ß is ss (it matched only ß); Arabic and Hebrew
// words are their letters, vowel points left out.
func TestListSearchFoldsCase(t *testing.T) {
	h := newHarness(t, Options{})
	for _, title := range []string{"Οδός προς την πόλη", "latency 5µs", "Maſs spectrometer", "200 K cooling", "Hauptstraße gesperrt", "İzmir ofisi", "خَطَأ فِي الْخَادِم", "תִּקּוּן בָּאג"} {
		h.call("task_create", map[string]any{"title": title, "project": "p"}, "OK")
	}
	for search, want := range map[string]string{"ΟΔΌΣ": "T-0001", "οδόσ": "T-0001", "5ΜS": "T-0002", "MASS": "T-0003", "200 k": "T-0004",
		"HAUPTSTRASSE": "T-0005", "straße": "T-0005", "STRAẞE": "T-0005", "izmir": "T-0006", "IZMIR": "T-0006", "ızmır": "T-0006",
		"خطأ في الخادم": "T-0007", "תקון": "T-0008"} {
		got := h.call("task_list", map[string]any{"search": search}, "OK")
		var ids []string
		for _, row := range list(t, got["tasks"]) {
			ids = append(ids, obj(t, row)["task_id"].(string))
		}
		if len(ids) != 1 || ids[0] != want {
			t.Errorf("search %q found %v, want %s", search, ids, want)
		}
	}
}

// TestListSearchMatchesFoldedText: task_list's search, which reads ASCII
// text as it is and folds the title and the description apart, matches
// exactly what a search of the two joined by a line break, folded whole,
// matches: every word of a query over titles and descriptions in ASCII,
// in other scripts, with letters that fold to ASCII ones (the Kelvin sign,
// the long s, ß, a ligature, full-width letters) and with an empty side.
func TestListSearchMatchesFoldedText(t *testing.T) {
	texts := []string{"", "Retry the UPLOAD", "cache eviction—done", "Kelvin 200 \u212a", "Maſs", "Hauptstraße", "ﬁle ＣＡＣＨＥ",
		"Οδός προς", "the west cluster", "ETag change", "İzmir", "a\u0301ccent"}
	words := []string{"retry", "upload", "cache", "k", "200", "mass", "strasse", "file", "οδόσ", "west", "etag", "izmir", "áccent",
		"eviction—done", "ss", "x", "the", "é"}
	for _, title := range texts {
		for _, desc := range texts {
			joined := domain.FoldCase(title + "\n" + desc)
			for _, w := range words {
				w = domain.FoldCase(w)
				if got, want := containsAll(title, desc, []string{w}), strings.Contains(joined, w); got != want {
					t.Errorf("title %q description %q word %q: matched %v, the folded text says %v", title, desc, w, got, want)
				}
			}
		}
	}
}

// TestTasksInPlace: the tasks task_list scans decoded in place are the
// tasks Tasks decodes, every field (parents, estimates, labels, a blocked
// reason, an empty description) equal while each is read.
func TestTasksInPlace(t *testing.T) {
	h := newHarness(t, Options{})
	parent := h.call("task_create", map[string]any{"title": "parent", "project": "p", "description": "Straße — ÉTÉ", "labels": []string{"a", "b"}, "estimate_hours": 2.5}, "OK")["task_id"].(string)
	child := h.call("task_create", map[string]any{"title": "child", "project": "p", "parent_id": parent, "assignee": "bob"}, "OK")["task_id"].(string)
	h.call("task_update", map[string]any{"task_id": child, "status": "todo"}, "OK")
	h.call("task_update", map[string]any{"task_id": child, "status": "blocked", "blocked_reason": "waiting"}, "OK")
	h.call("task_create", map[string]any{"title": "other", "project": "q", "priority": "critical"}, "OK")
	err := h.l.View(func(tx *boltstore.Tx) error {
		var copies []projections.Task
		if err := projections.Tasks(tx, func(tk projections.Task) bool { copies = append(copies, tk); return true }); err != nil {
			return err
		}
		i := 0
		err := projections.TasksInPlace(tx, func(tk *projections.Task) bool {
			if i >= len(copies) || !reflect.DeepEqual(*tk, copies[i]) {
				t.Errorf("task %d in place = %+v, want %+v", i, *tk, copies[min(i, len(copies)-1)])
			}
			i++
			return true
		})
		if i != len(copies) || len(copies) != 3 {
			t.Errorf("%d tasks in place, %d decoded, want 3", i, len(copies))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexFoldASCII: the ASCII search, which compares only where the
// word's first byte is in either case, finds a folded word exactly where
// strings.Contains finds it in the text lowered: every text of up to 6
// bytes of a small alphabet (letters of both cases, a digit, a dash) and
// every word of up to 3.
func TestIndexFoldASCII(t *testing.T) {
	alphabet := "aAbB1-"
	var all func(n int) []string
	all = func(n int) []string {
		if n == 0 {
			return []string{""}
		}
		shorter := all(n - 1)
		out := slices.Clone(shorter)
		for _, s := range shorter {
			if len(s) == n-1 {
				for i := range len(alphabet) {
					out = append(out, s+alphabet[i:i+1])
				}
			}
		}
		return out
	}
	var words []string
	for _, w := range all(3) {
		if w == strings.ToLower(w) {
			words = append(words, w)
		}
	}
	for _, text := range all(6) {
		lowered := strings.ToLower(text)
		for _, w := range words {
			if got, want := indexFoldASCII(text, w), strings.Contains(lowered, w); got != want {
				t.Fatalf("indexFoldASCII(%q, %q) = %v, want %v", text, w, got, want)
			}
		}
	}
}

// TestIsASCII: a byte past ASCII anywhere in a string of up to 24 bytes,
// within the 8-byte words isASCII loads or after them, makes it not ASCII.
func TestIsASCII(t *testing.T) {
	for n := range 25 {
		s := []byte(strings.Repeat("\x7f", n))
		if !isASCII(string(s)) {
			t.Errorf("%d ASCII bytes: not ASCII", n)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xC3, 0xFF} {
				s[i] = c
				if isASCII(string(s)) {
					t.Errorf("%x at %d of %d bytes: ASCII", c, i, n)
				}
				s[i] = 0x7f
			}
		}
	}
}

// TestTaskListThroughIndex: task_list filtered by project, status,
// priority, assignee and label, alone and together (which reads only the
// tasks the task index names), answers the tasks that match and in the
// order of the unfiltered list, after status moves, reassignments, label
// and priority changes, with paging.
func TestTaskListThroughIndex(t *testing.T) {
	h := newHarness(t, Options{})
	labels := []string{"backend", "frontend", "infra", "docs"}
	var ids []string
	for i := range 48 {
		ids = append(ids, h.call("task_create", map[string]any{"title": "task", "project": []string{"core", "web", "ops"}[i%3],
			"priority": domain.Priorities[i%4], "assignee": []string{"alice", "bob", "carol", "dave", "erin"}[i%5],
			"labels": []string{labels[i%4], labels[(i/4)%4]}}, "OK")["task_id"].(string))
	}
	type filter = map[string]any
	check := func(when string) {
		t.Helper()
		all := h.call("task_list", filter{"limit": 500}, "OK")
		details := map[string]map[string]any{}
		for _, id := range listed(t, all, "tasks") {
			details[id] = h.call("task_get", filter{"task_id": id}, "OK")
		}
		matches := func(d, f filter) bool {
			has := func(field string, vs any) bool {
				for _, v := range list(t, vs) {
					if d[field] == v {
						return true
					}
				}
				return false
			}
			for k, v := range f {
				switch k {
				case "project", "assignee":
					if d[k] != v {
						return false
					}
				case "status", "priority":
					if !has(k, v) {
						return false
					}
				case "label":
					if !slices.Contains(list(t, d["labels"]), v) {
						return false
					}
				}
			}
			return true
		}
		var filters []filter
		for _, d := range details {
			filters = append(filters, filter{"assignee": d["assignee"]}, filter{"status": []any{d["status"]}},
				filter{"project": d["project"], "status": []any{d["status"], "todo"}}, filter{"priority": []any{d["priority"]}, "assignee": d["assignee"]})
			for _, l := range list(t, d["labels"]) {
				filters = append(filters, filter{"label": l, "project": d["project"]}, filter{"label": l})
			}
		}
		filters = append(filters, filter{"assignee": "nobody"}, filter{"label": "none"}, filter{"project": "core", "status": []any{"done", "review"}})
		for _, f := range filters {
			want := []string{}
			for _, id := range listed(t, all, "tasks") {
				if matches(details[id], f) {
					want = append(want, id)
				}
			}
			f["limit"] = 500
			if got := listed(t, h.call("task_list", f, "OK"), "tasks"); !slices.Equal(got, want) {
				t.Errorf("%s: task_list %v = %v, want %v", when, f, got, want)
			}
			f["limit"], f["offset"] = 2, 1
			page := h.call("task_list", f, "OK")
			if got := listed(t, page, "tasks"); !slices.Equal(got, want[min(1, len(want)):min(3, len(want))]) || page["total_count"] != float64(len(want)) {
				t.Errorf("%s: task_list %v = %v of %v, want %v of %d", when, f, got, page["total_count"], want, len(want))
			}
		}
	}
	check("created")
	for i, id := range ids {
		switch i % 6 {
		case 0:
			h.call("task_update", filter{"task_id": id, "status": "todo"}, "OK")
			h.call("task_update", filter{"task_id": id, "status": "in_progress", "assignee": "frank"}, "OK")
		case 1:
			h.call("task_update", filter{"task_id": id, "labels": []string{"docs", "release"}}, "OK")
		case 2:
			h.call("task_update", filter{"task_id": id, "status": "cancelled", "labels": []string{}}, "OK")
		case 3:
			h.call("task_update", filter{"task_id": id, "priority": "critical", "assignee": "alice"}, "OK")
		case 4:
			h.call("task_update", filter{"task_id": id, "status": "todo"}, "OK")
			h.call("task_update", filter{"task_id": id, "status": "blocked", "blocked_reason": "waiting"}, "OK")
		}
	}
	check("updated")
}

package commands

import (
	"strings"
	"testing"
)

func TestMemoryVersionsAndScopes(t *testing.T) {
	h := newHarness(t, Options{Agent: "agent-a", Project: "core"})
	h.call("task_create", map[string]any{"title": "t", "project": "core"}, "OK")
	h.call("task_create", map[string]any{"title": "t", "project": "web"}, "OK")

	w1 := h.call("memory_write", map[string]any{"key": "build", "scope": "project", "content": "make build"}, "OK")
	wantKeys(t, "memory_write", w1, "memory_id", "key", "scope", "project", "version", "content", "hash", "written_at", "written_by", "seq")
	if w1["memory_id"] != "M-0001" || w1["project"] != "core" || w1["version"] != 1.0 || w1["written_by"] != "agent-a" {
		t.Errorf("first write = %v", w1)
	}
	w2 := h.call("memory_write", map[string]any{"key": "build", "scope": "project", "content": "go build ./..."}, "OK")
	if w2["version"] != 2.0 || w2["memory_id"] != "M-0002" {
		t.Errorf("second write = %v", w2)
	}
	// The same key in other namespaces starts its own versions.
	if w := h.call("memory_write", map[string]any{"key": "build", "scope": "project", "project": "web", "content": "npm run build"}, "OK"); w["version"] != 1.0 || w["project"] != "web" {
		t.Errorf("web write = %v", w)
	}
	if w := h.call("memory_write", map[string]any{"key": "build", "scope": "global", "content": "see README"}, "OK"); w["version"] != 1.0 || w["project"] != nil || w["agent"] != nil {
		t.Errorf("global write = %v", w)
	}
	if w := h.call("memory_write", map[string]any{"key": "build", "scope": "agent", "content": "mine"}, "OK"); w["agent"] != "agent-a" {
		t.Errorf("agent write = %v", w)
	}

	read := func(args map[string]any) map[string]any {
		t.Helper()
		d := h.call("memory_read", args, "OK")
		wantKeys(t, "memory_read", d, append([]string{"key", "scope", "found", "memory", "as_of_seq"}, optional(d, "owner")...)...)
		return d
	}
	latest := read(map[string]any{"key": "build", "scope": "project"})
	if latest["found"] != true || obj(t, latest["memory"])["content"] != "go build ./..." || latest["owner"] != "core" {
		t.Errorf("latest = %v", latest)
	}
	// Time travel: right after the first write, and before any.
	past := read(map[string]any{"key": "build", "scope": "project", "as_of_seq": w1["seq"]})
	if obj(t, past["memory"])["content"] != "make build" || past["as_of_seq"] != w1["seq"] {
		t.Errorf("as of %v = %v", w1["seq"], past)
	}
	if none := read(map[string]any{"key": "build", "scope": "project", "as_of_seq": w1["seq"].(float64) - 1}); none["found"] != false || none["memory"] != nil {
		t.Errorf("before the first write = %v", none)
	}
	if none := read(map[string]any{"key": "never-written", "scope": "global"}); none["found"] != false {
		t.Errorf("unwritten key = %v", none)
	}
	h.call("memory_read", map[string]any{"key": "build", "scope": "project", "as_of_seq": h.head() + 5}, "ERR_INVALID_INPUT")

	// scope agent binds to the caller: another agent sees its own namespace.
	h.client = "agent-b"
	h.svc.opts.Agent = ""
	if other := read(map[string]any{"key": "build", "scope": "agent"}); other["found"] != false || other["owner"] != "agent-b" {
		t.Errorf("agent-b reads agent-a's memory: %v", other)
	}
	h.call("memory_write", map[string]any{"key": "build", "scope": "agent", "content": "b's own"}, "OK")

	hist := h.call("memory_history", map[string]any{"key": "build"}, "OK")
	wantKeys(t, "memory_history", hist, "key", "version_count", "versions")
	var got []string
	for _, v := range list(t, hist["versions"]) {
		m := obj(t, v)
		got = append(got, m["scope"].(string)+":"+m["written_by"].(string)+":"+m["content"].(string))
	}
	want := "project:agent-a:make build|project:agent-a:go build ./...|project:agent-a:npm run build|global:agent-a:see README|" +
		"agent:agent-a:mine|agent:agent-b:b's own"
	if strings.Join(got, "|") != want || hist["version_count"] != 6.0 {
		t.Errorf("history = %v (%v)", got, hist["version_count"])
	}
	for _, tc := range []struct {
		args  map[string]any
		count float64
	}{
		{map[string]any{"key": "build", "scope": "agent"}, 1}, // agent-b's own only
		// The server's --project names the namespace, as for memory_read.
		{map[string]any{"key": "build", "scope": "project"}, 2},
		{map[string]any{"key": "build", "scope": "project", "project": "web"}, 1},
		{map[string]any{"key": "build", "project": "web"}, 1},
		{map[string]any{"key": "build", "scope": "global"}, 1},
		{map[string]any{"key": "build", "limit": 2}, 6},
		{map[string]any{"key": "nothing"}, 0},
	} {
		d := h.call("memory_history", tc.args, "OK")
		if d["version_count"] != tc.count {
			t.Errorf("history %v: %v versions, want %v", tc.args, d["version_count"], tc.count)
		}
		if l, ok := tc.args["limit"].(int); ok && len(list(t, d["versions"])) != l {
			t.Errorf("history %v: %d returned", tc.args, len(list(t, d["versions"])))
		}
	}
}

func optional(m map[string]any, names ...string) []string {
	var out []string
	for _, n := range names {
		if _, ok := m[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

func TestMemoryRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "t", "project": "core"}, "OK")
	cases := []struct {
		tool string
		args map[string]any
		code string
		path string
	}{
		{"memory_write", map[string]any{"key": "k", "scope": "project", "content": "c"}, "ERR_INVALID_INPUT", "project"}, // no --project
		{"memory_write", map[string]any{"key": "k", "scope": "project", "project": "nowhere", "content": "c"}, "ERR_PROJECT_NOT_FOUND", ""},
		{"memory_write", map[string]any{"key": "k", "scope": "global", "project": "core", "content": "c"}, "ERR_INVALID_INPUT", "project"},
		{"memory_write", map[string]any{"key": "Build Steps", "scope": "global", "content": "c"}, "ERR_INVALID_INPUT", "key"},
		{"memory_write", map[string]any{"key": "../etc", "scope": "global", "content": "c"}, "ERR_INVALID_INPUT", "key"},
		{"memory_write", map[string]any{"key": "k", "scope": "team", "content": "c"}, "ERR_INVALID_INPUT", "scope"},
		{"memory_write", map[string]any{"key": "k", "scope": "global", "content": ""}, "ERR_INVALID_INPUT", "content"},
		{"memory_write", map[string]any{"key": "k", "scope": "global", "content": " \n\t"}, "ERR_INVALID_INPUT", "content"},
		{"memory_write", map[string]any{"key": "k", "scope": "global", "content": strings.Repeat("c", 10001)}, "ERR_INVALID_INPUT", "content"},
		{"memory_write", map[string]any{"key": "k", "scope": "global"}, "ERR_INVALID_INPUT", "content"},
		{"memory_read", map[string]any{"key": "k", "scope": "project"}, "ERR_INVALID_INPUT", "project"},
		{"memory_read", map[string]any{"key": "k", "scope": "agent", "project": "core"}, "ERR_INVALID_INPUT", "project"},
		{"memory_read", map[string]any{"key": "k", "scope": "global", "as_of_seq": -1}, "ERR_INVALID_INPUT", "as_of_seq"},
		{"memory_read", map[string]any{"key": "k"}, "ERR_INVALID_INPUT", "scope"},
		{"memory_history", map[string]any{"key": "k", "scope": "global", "project": "core"}, "ERR_INVALID_INPUT", "project"},
		{"memory_history", map[string]any{"key": "k", "limit": 0}, "ERR_INVALID_INPUT", "limit"},
		// A project namespace is named as memory_read names it: no project
		// argument and no --project names none (it listed every project's).
		{"memory_history", map[string]any{"key": "k", "scope": "project"}, "ERR_INVALID_INPUT", "project"},
		// A project no task names has no memory: not found, as memory_read and
		// memory_write answer, rather than an empty history (it was).
		{"memory_history", map[string]any{"key": "k", "project": "nowhere"}, "ERR_PROJECT_NOT_FOUND", ""},
		{"memory_history", map[string]any{"key": "k", "scope": "project", "project": "nowhere"}, "ERR_PROJECT_NOT_FOUND", ""},
		{"memory_read", map[string]any{"key": "k", "scope": "project", "project": "nowhere"}, "ERR_PROJECT_NOT_FOUND", ""},
		{"memory_history", map[string]any{}, "ERR_INVALID_INPUT", "key"},
	}
	for _, tc := range cases {
		before := h.head()
		o := h.do(tc.tool, tc.args)
		if o.Code != tc.code {
			t.Errorf("%s %v: code %s, want %s: %s", tc.tool, tc.args, o.Code, tc.code, o.Reply)
			continue
		}
		if tc.path != "" && !hasIssue(o.Err, tc.path) {
			t.Errorf("%s %v: no issue at %q: %v", tc.tool, tc.args, tc.path, o.Err)
		}
		if h.head() != before+1 {
			t.Errorf("%s %v: a refused call appended %d events, want 1", tc.tool, tc.args, h.head()-before)
		}
	}
}

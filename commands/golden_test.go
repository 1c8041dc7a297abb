package commands

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// contractEncode is the contract's envelope (CONTRACT.md §1) with the
// details of §2, as the MCP edge builds it.
func contractEncode(result any, err error) (string, []byte) {
	if err != nil {
		code := errorCode(err)
		details := contractDetails(err)
		if details == nil {
			details = map[string]any{}
		}
		msg := err.Error()
		if code == "ERR_INTERNAL" {
			msg = "internal error"
		}
		b, _ := json.Marshal(map[string]any{"ok": false, "error": map[string]any{"code": code, "message": msg, "details": details}})
		return code, b
	}
	b, _ := json.Marshal(map[string]any{"ok": true, "data": result})
	return "OK", b
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// normalizer makes a reply comparable across runs. Event times come from a
// fixed clock, but each tool.called event records its call's duration, so
// event bytes, and every hash after the first call, differ from run to run:
// hashes become "<hash N>", numbered by first appearance in the transcript,
// which keeps which hashes are equal (a thought's previous_hash and the
// hash before it, a frozen root). Wall-clock fields become "<volatile>".
type normalizer struct{ hashes map[string]int }

func (n *normalizer) walk(v any, parent string) any {
	switch v := v.(type) {
	case map[string]any:
		ks := make([]string, 0, len(v))
		for k := range v {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			switch {
			case k == "timestamp" || k == "verified_at" || k == "uptime_ms",
				k == "as_of" && v["is_finalized"] == false,
				parent == "db" && (k == "path" || k == "size_bytes"):
				v[k] = "<volatile>"
			default:
				v[k] = n.walk(v[k], k)
			}
		}
	case []any:
		for i := range v {
			v[i] = n.walk(v[i], parent)
		}
	case string:
		if hexHash.MatchString(v) {
			if _, ok := n.hashes[v]; !ok {
				n.hashes[v] = len(n.hashes) + 1
			}
			return fmt.Sprintf("<hash %d>", n.hashes[v])
		}
	}
	return v
}

// TestGoldenTranscript runs a fixed scenario touching every tool and
// compares its replies with testdata/transcript.golden (go test -update
// rewrites it).
func TestGoldenTranscript(t *testing.T) {
	h := newHarnessWith(t, Options{Agent: "agent-a", Version: "v1.0.0-test"}, boltstore.Options{Now: newFakeClock().Now})
	h.encode = contractEncode
	type m = map[string]any
	script := []struct {
		tool string
		args m
	}{
		{"server_ping", m{}},
		{"task_create", m{"title": "Ship the ledger", "project": "logbook", "priority": "high", "labels": []string{"core", "ledger", "core"}, "estimate_hours": 12.5}},
		{"task_create", m{"title": "Write the verifier", "project": "logbook", "parent_id": "T-0001", "assignee": "agent-b"}},
		{"task_create", m{"title": "Release notes", "project": "docs", "priority": "low"}},
		{"task_create", m{"title": "Cross-project child", "project": "docs", "parent_id": "T-0001"}},
		{"task_update", m{"task_id": "T-0002", "status": "todo"}},
		{"task_update", m{"task_id": "T-0002", "status": "review"}},
		{"task_update", m{"task_id": "T-0002", "status": "in_progress", "progress": 100}},
		{"audit_session_start", m{"task_id": "T-0001", "auditor_id": "auditor-1", "scope": "deep", "reason": "release review"}},
		{"thought_record", m{"task_id": "T-0002", "type": "plan", "content": "Re-hash every event from its stored bytes.", "session_id": "A-0001"}},
		{"thought_record", m{"task_id": "T-0002", "type": "decision", "content": "Report broken links, do not fail.", "commit_sha": "abcdef1"}},
		{"thought_record", m{"task_id": "T-0002", "type": "plan", "content": "   "}},
		{"task_update", m{"task_id": "T-0002", "status": "review"}},
		{"task_update", m{"task_id": "T-0002", "status": "done"}},
		{"task_update", m{"task_id": "T-0002", "title": "Reopened?"}},
		{"task_update", m{"task_id": "T-0003", "status": "todo"}},
		{"task_update", m{"task_id": "T-0003", "status": "blocked"}},
		{"task_update", m{"task_id": "T-0003", "status": "blocked", "blocked_reason": "waiting for the release"}},
		{"task_get", m{"task_id": "T-0001", "include_thought_trail": true, "include_dependents": true}},
		{"task_get", m{"task_id": "T-0002", "include_thought_trail": true}},
		{"task_get", m{"task_id": "T-0002", "as_of_seq": 12}},
		{"task_get", m{"task_id": "T-0404"}},
		{"task_list", m{}},
		{"task_list", m{"search": "ship LEDGER", "sort_by": "priority", "sort_order": "asc"}},
		{"task_next_actions", m{"include_blocked": true}},
		{"task_next_actions", m{"project": "nope"}},
		{"thought_record_list", m{"task_id": "T-0002", "verify_chain": true}},
		{"merkle_root", m{"session_id": "A-0001"}},
		{"merkle_finalize", m{"session_id": "A-0001"}},
		{"merkle_finalize", m{"session_id": "A-0001"}},
		{"merkle_root", m{"session_id": "A-0001"}},
		{"thought_record", m{"task_id": "T-0001", "type": "risk", "content": "late", "session_id": "A-0001"}},
		{"audit_verify_chain", m{"session_id": "A-0001", "full_trace": true}},
		{"audit_verify_chain", m{"task_id": "T-0003"}},
		{"audit_verify_chain", m{}},
		{"skill_list", m{}},
		{"server_health", m{}},
	}
	n := &normalizer{hashes: map[string]int{}}
	var buf bytes.Buffer
	for _, c := range script {
		o := h.do(c.tool, c.args)
		var v any
		if err := json.Unmarshal(o.Reply, &v); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&buf, "→ %s %s← %s\n", c.tool, marshalPlain(c.args, ""), marshalPlain(n.walk(v, ""), "  "))
	}
	golden := filepath.Join("testdata", "transcript.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("transcript differs from %s (go test -run TestGoldenTranscript -update rewrites it):\n%s", golden, firstDiff(buf.String(), string(want)))
	}
}

// marshalPlain is JSON without HTML escapes (and indented if indent is
// not empty), ending in a newline.
func marshalPlain(v any, indent string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	enc.Encode(v)
	return b.Bytes()
}

// firstDiff shows the first differing line with some context.
func firstDiff(got, want string) string {
	g, w := bytes.Split([]byte(got), []byte("\n")), bytes.Split([]byte(want), []byte("\n"))
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, gl, wl)
		}
	}
	return ""
}

package mcp

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestKnowledgeToolsOverTheWire calls every knowledge tool through the MCP
// edge on a real service, with valid and refused arguments, and checks each
// reply's code and that it validates against the tool's output schema.
func TestKnowledgeToolsOverTheWire(t *testing.T) {
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "ledger.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	svc, err := commands.New(l, commands.Options{Agent: "edge-agent", Project: "core"})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(svc, Options{})
	c := startSession(t, srv)
	c.initialize()
	pattern := "Close the bbolt handle after each commit so other processes can take the file lock."
	context := "Learnt while running four agents against one ledger file: a server that kept the database open " +
		"made every other process time out on the lock, although each commit needs the file for well under a millisecond."
	learning, _ := json.Marshal(map[string]any{"pattern": pattern, "context": context, "project": "core", "tags": []string{"bbolt"}})
	steps := []struct{ tool, args, code string }{
		{"task_create", `{"title":"Profile commits","project":"core"}`, CodeOK},
		{"finding_record", `{"task_id":"T-0001","category":"test_result","summary":"Commit p99 is 2 ms","files":["ledger/store.go"]}`, CodeOK},
		{"finding_record", `{"task_id":"T-0009","category":"bug","summary":"s"}`, CodeTaskNotFound},
		{"finding_record", `{"task_id":"T-0001","category":"bug","summary":"s","files":["../secret"]}`, CodeInvalidInput},
		{"finding_record", `{"task_id":"T-0001","category":"bug","summary":"s","files":["/etc/passwd"]}`, CodeInvalidInput},
		{"learning_record", string(learning), CodeOK},
		{"learning_record", string(learning), CodeDuplicate},
		{"learning_record", `{"pattern":"too short","context":"also short","project":"core"}`, CodeInvalidInput},
		{"learning_supersede", `{"learning_id":"L-0001","by":"L-0001"}`, CodeInvalidInput},
		{"memory_write", `{"key":"build","scope":"project","content":"go build ./..."}`, CodeOK},
		{"memory_write", `{"key":"build","scope":"agent","content":"mine"}`, CodeOK},
		{"memory_write", `{"key":"Build","scope":"global","content":"x"}`, CodeInvalidInput},
		{"memory_read", `{"key":"build","scope":"project"}`, CodeOK},
		{"memory_read", `{"key":"build","scope":"global"}`, CodeOK},
		{"memory_read", `{"key":"build","scope":"project","project":"nowhere"}`, CodeProjectNotFound},
		{"memory_history", `{"key":"build"}`, CodeOK},
		{"knowledge_search", `{"query":"commit lock","kinds":["learning","finding"]}`, CodeOK},
		{"knowledge_search", `{"query":"build","cross_project":true,"limit":5,"as_of_seq":3}`, CodeOK},
		{"knowledge_search", `{"query":"x","kinds":["task"]}`, CodeInvalidInput},
	}
	for _, st := range steps {
		res := c.toolCall(st.tool, st.args)
		if got := errorCode(t, res); got != st.code {
			t.Errorf("%s %s = %s, want %s: %v", st.tool, st.args, got, st.code, res["structuredContent"])
		}
		raw, _ := json.Marshal(res["structuredContent"])
		if is := outputIssues(srv.byName[st.tool], raw); is != nil {
			t.Errorf("%s: reply %s does not validate: %v", st.tool, raw, is)
		}
		if st.code == CodeDuplicate {
			details := envelopeOf(t, res)["error"].(map[string]any)["details"].(map[string]any)
			if details["existing_id"] != "L-0001" || details["similarity"] != 1.0 {
				t.Errorf("ERR_DUPLICATE details = %v", details)
			}
		}
		if st.tool == "knowledge_search" && st.code == CodeOK && strings.Contains(st.args, "commit lock") {
			data := envelopeOf(t, res)["data"].(map[string]any)
			hits := data["hits"].([]any)
			if len(hits) == 0 || hits[0].(map[string]any)["id"] != "L-0001" {
				t.Errorf("knowledge_search hits = %v", hits)
			}
		}
		if st.tool == "memory_history" {
			data := envelopeOf(t, res)["data"].(map[string]any)
			var who []string
			for _, v := range data["versions"].([]any) {
				m := v.(map[string]any)
				who = append(who, m["scope"].(string)+"/"+m["written_by"].(string))
			}
			if strings.Join(who, ",") != "project/edge-agent,agent/edge-agent" {
				t.Errorf("history = %v", who)
			}
		}
	}
}

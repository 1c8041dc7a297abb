package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// contractTools are the tools of CONTRACT.md, in its order, then the
// knowledge tools (issue 13).
var contractTools = []string{
	"task_create", "task_update", "task_get", "task_list", "task_next_actions",
	"thought_record", "thought_record_list",
	"audit_session_start", "merkle_finalize", "merkle_root", "audit_verify_chain",
	"skill_list", "server_ping", "server_health",
	"finding_record", "learning_record", "learning_supersede",
	"memory_write", "memory_read", "memory_history",
	"knowledge_search",
}

var mutating = []string{"task_create", "task_update", "thought_record", "audit_session_start", "merkle_finalize",
	"finding_record", "learning_record", "learning_supersede", "memory_write"}

type jsonSchema struct {
	Type                 any                    `json:"type"`
	Properties           map[string]*jsonSchema `json:"properties"`
	Required             []string               `json:"required"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
}

func TestToolSpecs(t *testing.T) {
	specs := New(nil, Options{}).Tools()
	var names []string
	for _, sp := range specs {
		names = append(names, sp.Name)
		t.Run(sp.Name, func(t *testing.T) {
			if sp.Description == "" || !strings.HasSuffix(sp.Description, ".") {
				t.Errorf("description %q: want one sentence", sp.Description)
			}
			if want := !slices.Contains(mutating, sp.Name); sp.ReadOnly != want {
				t.Errorf("ReadOnly = %v, want %v", sp.ReadOnly, want)
			}
			var in, out jsonSchema
			if err := json.Unmarshal(sp.InputSchema, &in); err != nil {
				t.Fatalf("input schema: %v", err)
			}
			if in.Type != "object" || in.AdditionalProperties == nil || *in.AdditionalProperties {
				t.Errorf("input schema: type %v, additionalProperties %v; want object, false", in.Type, in.AdditionalProperties)
			}
			if in.Properties == nil {
				t.Errorf("input schema has no properties")
			}
			for _, r := range in.Required {
				if in.Properties[r] == nil {
					t.Errorf("required %q is not a property", r)
				}
			}
			if err := json.Unmarshal(sp.OutputSchema, &out); err != nil {
				t.Fatalf("output schema: %v", err)
			}
			if out.Type != "object" || out.AdditionalProperties != nil {
				t.Errorf("output schema: type %v, additionalProperties %v; want object, unset", out.Type, out.AdditionalProperties)
			}
			for _, p := range []string{"ok", "data", "error"} {
				if out.Properties[p] == nil {
					t.Errorf("output schema lacks %q", p)
				}
			}
			if !slices.Equal(out.Required, []string{"ok"}) {
				t.Errorf("output schema requires %v, want [ok]", out.Required)
			}
		})
	}
	if !slices.Equal(names, contractTools) {
		t.Errorf("tools = %v\nwant %v", names, contractTools)
	}
}

// TestToolsGolden pins the published surface: any change to a name, a field,
// a constraint or a description shows up in review.
func TestToolsGolden(t *testing.T) {
	var b bytes.Buffer
	for _, sp := range New(nil, Options{}).Tools() {
		spec := struct {
			Name         string          `json:"name"`
			Title        string          `json:"title"`
			Description  string          `json:"description"`
			ReadOnly     bool            `json:"readOnly"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		}{sp.Name, sp.Title, sp.Description, sp.ReadOnly, sp.InputSchema, sp.OutputSchema}
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n")
	}
	golden(t, "tools.golden", b.Bytes())
}

func TestSchemaKeywordOrder(t *testing.T) {
	s := object("d",
		prop("n", func() *schema {
			s, lo, hi := integer("i"), 0.0, 100.0
			s.minimum, s.maximum, s.def = &lo, &hi, 5
			return s
		}()),
		prop("s", func() *schema { s := str("").length(1, 3); s.pattern = `^a`; return s }()),
	).require("n").closedObject()
	got, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","description":"d","properties":{"n":{"type":"integer","description":"i","default":5,"minimum":0,"maximum":100},` +
		`"s":{"type":"string","minLength":1,"maxLength":3,"pattern":"^a"}},"required":["n"],"additionalProperties":false}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, _ := str("").orNull().MarshalJSON(); string(got) != `{"type":["string","null"]}` {
		t.Errorf("nullable: %s", got)
	}
}

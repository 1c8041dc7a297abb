package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandshakeExplainsTheTools runs the real binary over stdio and checks
// what a model gets to read: instructions at initialize, and for every
// registered tool (whatever tools are registered) a title, a description,
// and a description on every argument and every output field, at any depth.
func TestHandshakeExplainsTheTools(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "surface", "--db", filepath.Join(t.TempDir(), "l.db"), "--agent", "surface")

	var init struct {
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(a.init, &init); err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"task_create", "thought_record", "done", "merkle_finalize", "hash-chained"} {
		if !strings.Contains(init.Instructions, word) {
			t.Errorf("instructions do not mention %q:\n%s", word, init.Instructions)
		}
	}

	tools := listTools(t, a)
	if len(tools) == 0 {
		t.Fatal("tools/list is empty")
	}
	for _, tool := range tools {
		if strings.TrimSpace(tool.Title) == "" {
			t.Errorf("%s: no title", tool.Name)
		}
		if strings.TrimSpace(tool.Description) == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		for _, path := range undescribed(tool.InputSchema, "arguments") {
			t.Errorf("%s: %s has no description", tool.Name, path)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
			continue
		}
		for _, path := range undescribed(tool.OutputSchema, "output") {
			t.Errorf("%s: %s has no description", tool.Name, path)
		}
	}
}

// listedTool is a tool as tools/list publishes it.
type listedTool struct {
	Name         string         `json:"name"`
	Title        string         `json:"title"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema"`
}

// listTools reads every page of tools/list.
func listTools(t *testing.T, a *agent) []listedTool {
	t.Helper()
	var all []listedTool
	params := map[string]any{}
	for {
		var page struct {
			Tools      []listedTool `json:"tools"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := json.Unmarshal(a.request("tools/list", params), &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Tools...)
		if page.NextCursor == "" {
			return all
		}
		params = map[string]any{"cursor": page.NextCursor}
	}
}

// undescribed returns the paths of the properties under schema s (nested
// objects and array items included) and of the array items that have no
// description.
func undescribed(s map[string]any, path string) []string {
	var missing []string
	props, _ := s["properties"].(map[string]any)
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		at := path + "." + name
		if d, _ := p["description"].(string); strings.TrimSpace(d) == "" {
			missing = append(missing, at)
		}
		missing = append(missing, undescribed(p, at)...)
	}
	if items, ok := s["items"].(map[string]any); ok {
		// An array's items are described too, as every other array's are
		// ("A label.").
		if d, _ := items["description"].(string); strings.TrimSpace(d) == "" {
			missing = append(missing, path+"[]")
		}
		missing = append(missing, undescribed(items, path+"[]")...)
	}
	return missing
}

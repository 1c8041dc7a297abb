package mcp

import (
	"slices"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
)

// TestEveryToolAndThoughtTypeHasACode: tool.called v4 stores each tool the
// server serves as its code, thought.recorded v3 each thought type
// (ledger.Field.Codes). A name without one would still be recorded, as its
// string, but costs its bytes in every event: a new tool or type gets the
// next code (and the payload a new version).
func TestEveryToolAndThoughtTypeHasACode(t *testing.T) {
	for _, tl := range allTools() {
		if !slices.Contains(events.ToolCodes[:], tl.name) {
			t.Errorf("tool %s has no code in events.ToolCodes", tl.name)
		}
	}
	for _, typ := range domain.ThoughtTypes {
		if !slices.Contains(events.ThoughtTypeCodes[:], typ) {
			t.Errorf("thought type %s has no code in events.ThoughtTypeCodes", typ)
		}
	}
}

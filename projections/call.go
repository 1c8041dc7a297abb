package projections

import "github.com/logbook-dev/logbook/events"

// TypeToolCalled is events.TypeToolCalled, the audit record every tool call
// appends, in the same commit as the events the call produced.
const TypeToolCalled = events.TypeToolCalled

// ToolCalled is events.ToolCalled, the payload of tool.called.
type ToolCalled = events.ToolCalled

package commands

import (
	"context"
	"encoding/json"
	"errors"
)

// Call is one MCP tool call as the edge received it.
type Call struct {
	Tool   string          // the tool name as called (may be unknown)
	Args   json.RawMessage // the raw arguments as received; hashed canonically into tool.called
	Client string          // the MCP client's clientInfo.name ("" if unknown)
	// Invalid, when non-nil, is the edge's rejection of the arguments (schema,
	// UTF-8, unknown tool): Do records the call with this error and runs nothing.
	Invalid error
	// Encode turns the call's outcome into the outcome code written to the
	// tool.called event ("OK" or an ERR_* code) and the exact reply bytes sent
	// to the client (whose SHA-256 is written too). The edge owns both.
	Encode func(result any, err error) (code string, reply []byte)
}

// Service runs tool calls against the ledger.
type Service struct{}

// Do runs one tool call as one atomic, durable commit: the domain events it
// decides plus exactly one tool.called event. It returns the reply bytes
// produced by call.Encode once the commit is durable. A non-nil error means
// the commit failed (errors.Is(err, ErrStorage)) and nothing of the call is in
// the ledger; reply is then nil.
func (s *Service) Do(ctx context.Context, call Call) (reply []byte, err error) {
	return nil, errors.New("not built yet")
}

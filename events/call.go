package events

import "github.com/logbook-dev/logbook/ledger"

// TypeToolCalled is the audit record every tool call appends, in the same
// commit as the events the call produced.
const TypeToolCalled = "tool.called"

// ToolCalled is the payload of tool.called. Arguments and results are
// recorded as SHA-256 digests: the ledger proves what was asked and answered
// without storing payloads twice. Payload version 3 stores the digests as
// 32 bytes each (ledger.Digest) and the payload as the array of its fields
// (PayloadFields); version 4 stores the tool as a code (ToolCodes), its
// arguments hash as version 2's; versions 1 and 2 were maps with the digests in hex, read
// as before (the version also says how args_sha256 was computed:
// commands.ArgsSHA256).
type ToolCalled struct {
	Tool         string        `json:"tool"`
	ArgsSHA256   ledger.Digest `json:"args_sha256"`   // of the canonical JSON arguments
	Outcome      string        `json:"outcome"`       // "OK" or an ERR_* code
	ResultSHA256 ledger.Digest `json:"result_sha256"` // of the exact reply bytes
	DurationUS   int64         `json:"duration_us"`   // from receipt to this event
	Client       string        `json:"client"`        // MCP clientInfo.name
	// With an authenticated actor (server mode) the event's actor comes from
	// a bearer token: Token is that token's SHA-256 (as in its token.issued)
	// and ClientClaim what the client called itself, unverified; Client
	// is then empty. Both are absent in stdio mode, so older events decode
	// unchanged.
	ClientClaim string        `json:"client_claim,omitempty"`
	Token       ledger.Digest `json:"token_sha256,omitempty"`
}

// ToolCodes are the codes tool.called v4 stores a tool's name as
// (ledger.Field.Codes): ToolCodes[code] is the tool; 0 is not a code.
// Append-only, each addition with a new payload version; a tool without a
// code is stored as its name.
var ToolCodes = [...]string{
	1: "task_create", 2: "task_update", 3: "task_get", 4: "task_list", 5: "task_next_actions",
	6: "thought_record", 7: "thought_record_list", 8: "audit_session_start", 9: "merkle_finalize",
	10: "merkle_root", 11: "audit_verify_chain", 12: "skill_list", 13: "server_ping", 14: "server_health",
	15: "finding_record", 16: "knowledge_search", 17: "learning_record", 18: "learning_supersede",
	19: "memory_write", 20: "memory_read", 21: "memory_history",
}

// PayloadFields are tool.called's fields in their order in a version 3
// payload's array (ledger.Positional).
func (p *ToolCalled) PayloadFields() []ledger.Field {
	return []ledger.Field{
		{Name: "tool", Ptr: &p.Tool, Codes: ToolCodes[:]},
		{Name: "args_sha256", Ptr: &p.ArgsSHA256},
		{Name: "outcome", Ptr: &p.Outcome},
		{Name: "result_sha256", Ptr: &p.ResultSHA256},
		{Name: "duration_us", Ptr: &p.DurationUS},
		{Name: "client", Ptr: &p.Client},
		{Name: "client_claim", Ptr: &p.ClientClaim, Optional: true},
		{Name: "token_sha256", Ptr: &p.Token, Optional: true},
	}
}

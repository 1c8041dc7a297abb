package events

import "github.com/logbook-dev/logbook/ledger"

// TypeThoughtRecorded is the event of thought_record.
const TypeThoughtRecorded = "thought.recorded"

// ThoughtRecorded is the payload of thought.recorded. PreviousHash and
// ChainPosition are written into the event so the per-task chain is itself
// committed to by the log. Payload version 2 stores PreviousHash as 32
// bytes (ledger.Digest); version 1 stored its hex, read as before.
type ThoughtRecorded struct {
	ThoughtID     string        `json:"thought_id"`
	TaskID        string        `json:"task_id"`
	Type          string        `json:"type"`
	Content       string        `json:"content"`
	SessionID     string        `json:"session_id,omitempty"`
	Branch        string        `json:"branch,omitempty"`
	CommitSHA     string        `json:"commit_sha,omitempty"`
	TestsRun      []string      `json:"tests_run,omitempty"`
	Blockers      []string      `json:"blockers,omitempty"`
	Metadata      string        `json:"metadata,omitempty"` // compact JSON object
	PreviousHash  ledger.Digest `json:"previous_hash,omitempty"`
	ChainPosition uint64        `json:"chain_position"`
}

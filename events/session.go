package events

// Audit session event types.
const (
	TypeSessionStarted   = "session.started"
	TypeSessionFinalized = "session.finalized"
)

// SessionStarted is the payload of session.started.
type SessionStarted struct {
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
	AuditorID string `json:"auditor_id"`
	Reason    string `json:"reason,omitempty"`
	Scope     string `json:"scope"`
}

// SessionFinalized is the payload of session.finalized: the frozen root and
// what it covers. TaskID is set when only that task's leaves were sealed.
type SessionFinalized struct {
	SessionID  string `json:"session_id"`
	TaskID     string `json:"task_id,omitempty"`
	MerkleRoot string `json:"merkle_root"`
	TreeDepth  int    `json:"tree_depth"`
	LeafCount  uint64 `json:"leaf_count"`
	FirstSeq   uint64 `json:"first_seq"`
	LastSeq    uint64 `json:"last_seq"`
}

package events

// Bearer tokens of logbook server. The log holds only each token's SHA-256:
// who may act as which agent is itself part of the audit record, and a copy
// of the file grants nobody anything.
const (
	TypeTokenIssued  = "token.issued"
	TypeTokenRevoked = "token.revoked"
)

// TokenIssued is the payload of token.issued. The event's actor is the
// issuer as well (Issuer repeats it, so the payload reads on its own).
type TokenIssued struct {
	SHA256   string   `json:"sha256"` // hex SHA-256 of the bearer token
	Agent    string   `json:"agent"`  // the actor of every event of its calls
	ReadOnly bool     `json:"read_only,omitempty"`
	Tools    []string `json:"tools,omitempty"` // the tools it may list and call; empty: all
	Issuer   string   `json:"issuer"`
}

// TokenRevoked is the payload of token.revoked: one token by its hash.
type TokenRevoked struct {
	SHA256 string `json:"sha256"`
	Reason string `json:"reason,omitempty"`
}

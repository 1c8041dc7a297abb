package projections

import (
	"encoding/hex"
	"slices"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// Bearer tokens of `logbook server`. The log holds only each token's
// SHA-256: who may act as which agent is itself part of the audit record,
// and a copy of the file grants nobody anything.
const (
	TypeTokenIssued  = "token.issued"
	TypeTokenRevoked = "token.revoked"
)

const spTokens = "tokens" // token SHA-256 (32 bytes) → Token

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

// Token is a token's state as folded.
type Token struct {
	SHA256     string   `json:"sha256"`
	Agent      string   `json:"agent"`
	ReadOnly   bool     `json:"read_only,omitempty"`
	Tools      []string `json:"tools,omitempty"`
	Issuer     string   `json:"issuer"`
	IssuedSeq  uint64   `json:"issued_seq"`
	RevokedSeq uint64   `json:"revoked_seq,omitempty"` // 0: valid
}

// Allows reports whether the token's scope includes tool.
func (t Token) Allows(tool string) bool { return len(t.Tools) == 0 || slices.Contains(t.Tools, tool) }

// LookupToken returns the token whose SHA-256 is sum, if one was issued.
func LookupToken(tx *boltstore.Tx, sum [32]byte) (Token, bool, error) {
	sp, err := tx.Space(spTokens)
	if err != nil {
		return Token{}, false, err
	}
	var t Token
	ok, err := getRecord(sp, sum[:], &t)
	return t, ok, err
}

// Tokens lists every token issued, revoked ones included, in the order of
// their hashes.
func Tokens(tx *boltstore.Tx) ([]Token, error) {
	sp, err := tx.Space(spTokens)
	if err != nil {
		return nil, err
	}
	var out []Token
	err = sp.Scan(nil, false, func(_, v []byte) (bool, error) {
		var t Token
		if err := unmarshal(v, &t); err != nil {
			return false, err
		}
		out = append(out, t)
		return true, nil
	})
	return out, err
}

func tokenKey(hexSum string) ([]byte, bool) {
	b, err := hex.DecodeString(hexSum)
	return b, err == nil && len(b) == 32
}

// applyTokenIssued records a token. Issuing a hash twice keeps the first
// record: a token once issued (or revoked) is never re-scoped.
func applyTokenIssued(tx *boltstore.Tx, r ledger.Record) error {
	var p TokenIssued
	if err := decode(r, &p); err != nil {
		return err
	}
	key, ok := tokenKey(p.SHA256)
	if !ok { // the writers check it; a bad one stops no fold
		return nil
	}
	sp, err := tx.Space(spTokens)
	if err != nil {
		return err
	}
	if sp.Get(key) != nil {
		return nil
	}
	return putRecord(sp, key, Token{SHA256: p.SHA256, Agent: p.Agent, ReadOnly: p.ReadOnly,
		Tools: p.Tools, Issuer: p.Issuer, IssuedSeq: r.Seq})
}

// applyTokenRevoked marks a token revoked; the first revocation stands.
func applyTokenRevoked(tx *boltstore.Tx, r ledger.Record) error {
	var p TokenRevoked
	if err := decode(r, &p); err != nil {
		return err
	}
	key, ok := tokenKey(p.SHA256)
	if !ok { // the writers check it; a bad one stops no fold
		return nil
	}
	sp, err := tx.Space(spTokens)
	if err != nil {
		return err
	}
	var t Token
	found, err := getRecord(sp, key, &t)
	if err != nil || !found || t.RevokedSeq != 0 {
		return err
	}
	t.RevokedSeq = r.Seq
	return putRecord(sp, key, t)
}

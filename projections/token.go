package projections

import (
	"encoding/hex"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

const spTokens = "tokens" // token SHA-256 (32 bytes) → Token

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
		if err := decodeStored(v, &t); err != nil {
			return false, err
		}
		out = append(out, t)
		return true, nil
	})
	return out, err
}

// tokenAt is the tokens space and the key of the token whose SHA-256 is
// hexSum; a nil space for a malformed hash (the writers check it; a bad one
// stops no fold).
func tokenAt(tx *boltstore.Tx, hexSum string) (*boltstore.Space, []byte, error) {
	key, err := hex.DecodeString(hexSum)
	if err != nil || len(key) != 32 {
		return nil, nil, nil
	}
	sp, err := tx.Space(spTokens)
	return sp, key, err
}

// applyTokenIssued records a token. Issuing a hash twice keeps the first
// record: a token once issued (or revoked) is never re-scoped.
func applyTokenIssued(tx *boltstore.Tx, r ledger.Record) error {
	var p events.TokenIssued
	if err := decode(r, &p); err != nil {
		return err
	}
	sp, key, err := tokenAt(tx, p.SHA256)
	if sp == nil || sp.Get(key) != nil {
		return err
	}
	return putRecord(sp, key, Token{SHA256: p.SHA256, Agent: p.Agent, ReadOnly: p.ReadOnly,
		Tools: p.Tools, Issuer: p.Issuer, IssuedSeq: r.Seq})
}

// applyTokenRevoked marks a token revoked; the first revocation stands.
func applyTokenRevoked(tx *boltstore.Tx, r ledger.Record) error {
	var p events.TokenRevoked
	if err := decode(r, &p); err != nil {
		return err
	}
	sp, key, err := tokenAt(tx, p.SHA256)
	if sp == nil {
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

package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/projections"
)

// TokenPrefix starts every bearer token, so a leaked one is recognisable
// (secret scanners key on such prefixes).
const TokenPrefix = "lbk_"

// Issue asks for a new token.
type Issue struct {
	Agent    string   `json:"agent"`
	ReadOnly bool     `json:"read_only,omitempty"`
	Tools    []string `json:"tools,omitempty"` // empty: every tool
	Issuer   string   `json:"issuer"`
}

// Revoke names the tokens to revoke: every valid token of Agent, or the one
// token whose SHA-256 is SHA256 (exactly one of the two).
type Revoke struct {
	Agent  string `json:"agent,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Issuer string `json:"issuer"` // who revokes: the actor of the events
}

// ErrInvalid: a request to issue or revoke that is malformed.
var ErrInvalid = errors.New("invalid token request")

// ErrNoToken: a revocation that matched no valid token.
var ErrNoToken = errors.New("no valid token matches")

// TokenSHA256 is the hex SHA-256 by which the ledger knows token.
func TokenSHA256(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// newToken returns a fresh bearer token of 256 random bits.
func newToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// IssueToken records a new token in l (one token.issued event) and returns
// the token, which exists nowhere else: only its hash is stored.
func IssueToken(l *boltstore.Store, req Issue) (token string, t projections.Token, err error) {
	if err := checkName("agent", req.Agent); err != nil {
		return "", t, err
	}
	if err := checkName("issuer", req.Issuer); err != nil {
		return "", t, err
	}
	tools, err := checkTools(req.Tools)
	if err != nil {
		return "", t, err
	}
	token = newToken()
	p := events.TokenIssued{SHA256: TokenSHA256(token), Agent: req.Agent, ReadOnly: req.ReadOnly, Tools: tools, Issuer: req.Issuer}
	err = l.Update(func(tx *boltstore.Tx) error {
		if _, err := projections.CatchUp(tx, 0); err != nil {
			return err
		}
		if err := appendEvent(tx, events.TypeTokenIssued, req.Issuer, p); err != nil {
			return err
		}
		var sum [32]byte
		hex.Decode(sum[:], []byte(p.SHA256))
		t, _, err = projections.LookupToken(tx, sum)
		return err
	})
	if err != nil {
		return "", t, fmt.Errorf("issue token: %w", err)
	}
	return token, t, nil
}

// RevokeTokens records one token.revoked event per valid token req names
// and returns them as they now stand. ErrNoToken if none is valid.
func RevokeTokens(l *boltstore.Store, req Revoke) ([]projections.Token, error) {
	if (req.Agent == "") == (req.SHA256 == "") {
		return nil, fmt.Errorf("%w: name either an agent or a token's sha256", ErrInvalid)
	}
	if err := checkName("issuer", req.Issuer); err != nil {
		return nil, err
	}
	want := strings.ToLower(req.SHA256)
	if want != "" {
		if b, err := hex.DecodeString(want); err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%w: --token-sha256 must be 64 hex digits", ErrInvalid)
		}
	}
	var revoked []projections.Token
	err := l.Update(func(tx *boltstore.Tx) error {
		revoked = nil
		if _, err := projections.CatchUp(tx, 0); err != nil {
			return err
		}
		all, err := projections.Tokens(tx)
		if err != nil {
			return err
		}
		for _, t := range all {
			if t.RevokedSeq != 0 || (want != "" && t.SHA256 != want) || (req.Agent != "" && t.Agent != req.Agent) {
				continue
			}
			if err := appendEvent(tx, events.TypeTokenRevoked, req.Issuer, events.TokenRevoked{SHA256: t.SHA256}); err != nil {
				return err
			}
			t.RevokedSeq = tx.Head().Seq
			revoked = append(revoked, t)
		}
		if len(revoked) == 0 {
			return ErrNoToken
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNoToken) {
			return nil, ErrNoToken
		}
		return nil, fmt.Errorf("revoke token: %w", err)
	}
	return revoked, nil
}

// ListTokens returns every token issued, revoked ones included.
func ListTokens(l *boltstore.Store) ([]projections.Token, error) {
	var list []projections.Token
	err := l.View(func(tx *boltstore.Tx) error {
		// Projections of another version, or none, read as no tokens.
		if err := projections.Current(tx); err != nil {
			return err
		}
		var err error
		list, err = projections.Tokens(tx)
		return err
	})
	return list, err
}

// appendEvent appends one event as actor and folds it.
func appendEvent(tx *boltstore.Tx, typ, actor string, payload any) error {
	b, err := ledger.EncodePayload(payload)
	if err != nil {
		return err
	}
	rec, err := tx.Append(ledger.Event{Type: typ, Version: events.CurrentVersion(typ), Actor: actor, Payload: b})
	if err != nil {
		return err
	}
	return projections.Apply(tx, rec)
}

// checkName accepts what an actor may be: a name as serve --agent takes
// one (commands.CheckAgent), and not empty.
func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s must not be empty", ErrInvalid, what)
	}
	if err := commands.CheckAgent(name); err != nil {
		return fmt.Errorf("%w: %s %v", ErrInvalid, what, err)
	}
	return nil
}

// checkTools returns the scope sorted and deduplicated; every name must be
// one of the contract's tools.
func checkTools(tools []string) ([]string, error) {
	known := mcp.ToolNames()
	out := slices.Clone(tools)
	for _, t := range out {
		if !slices.Contains(known, t) {
			slices.Sort(known)
			return nil, fmt.Errorf("%w: unknown tool %q (tools: %s)", ErrInvalid, domain.Clip(t), strings.Join(known, ","))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

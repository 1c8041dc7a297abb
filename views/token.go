package views

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/logbook-dev/logbook/projections"
)

// TokenScope is what a token may do, in words: "all tools", or its tools,
// and ", read-only".
func TokenScope(t projections.Token) string {
	s := "all tools"
	if len(t.Tools) > 0 {
		s = strings.Join(t.Tools, ",")
	}
	if t.ReadOnly {
		s += ", read-only"
	}
	return s
}

// TokenList prints tokens as a table: hash, agent, scope, issuer, the seq
// it was issued at, and whether it is valid or revoked. Its columns are
// measured as any table's (Print: an agent's name may be Chinese, or hold
// a combining accent), and nothing in it is cut: a token's hash is copied
// from it whole.
func TokenList(w io.Writer, list []projections.Token) error {
	t := &Table{Header: []string{"SHA256", "AGENT", "SCOPE", "ISSUER", "ISSUED", "STATE"}, Flex: 5, Painted: -1}
	for _, tok := range list {
		state := "valid"
		if tok.RevokedSeq != 0 {
			state = fmt.Sprintf("revoked at %d", tok.RevokedSeq)
		}
		t.Rows = append(t.Rows, []string{tok.SHA256, tok.Agent, TokenScope(tok), tok.Issuer, fmt.Sprint(tok.IssuedSeq), state})
	}
	return (&Screen{W: w, Width: math.MaxInt32}).Print(t)
}

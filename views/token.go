package views

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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
// it was issued at, and whether it is valid or revoked.
func TokenList(w io.Writer, list []projections.Token) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SHA256\tAGENT\tSCOPE\tISSUER\tISSUED\tSTATE")
	for _, t := range list {
		state := "valid"
		if t.RevokedSeq != 0 {
			state = fmt.Sprintf("revoked at %d", t.RevokedSeq)
		}
		// A name of a ledger written before names were checked may hold
		// a control, and a tab would shift the columns.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", clean(t.SHA256), clean(t.Agent), clean(TokenScope(t)), clean(t.Issuer), t.IssuedSeq, state)
	}
	return tw.Flush()
}

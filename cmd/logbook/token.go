package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os/user"
	"strings"
	"text/tabwriter"

	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/server"
)

func init() {
	register("token", "issue, revoke and list the bearer tokens of logbook server (add|revoke|list)", token)
}

func token(_ context.Context, e *env, args []string) error {
	const usage = "token: want a subcommand: add, revoke or list (logbook token add --help)"
	if len(args) == 0 {
		return usageErr(usage)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprint(e.stdout, `Usage: logbook token add|revoke|list [flags]

Manage the bearer tokens of logbook server (hashes only are recorded):
  logbook token add --agent NAME [--read-only] [--tools a,b]   print a new token (last line)
  logbook token revoke (--agent NAME | --token-sha256 HEX)      revoke tokens
  logbook token list [--json]                                   list them
Through the running server's admin socket, else in the file. logbook token SUBCOMMAND --help
lists each one's flags.
`)
		return nil
	}
	switch args[0] {
	case "add":
		return tokenAdd(e, args[1:])
	case "revoke":
		return tokenRevoke(e, args[1:])
	case "list":
		return tokenList(e, args[1:])
	}
	return usageErr("%s, not %q", usage, args[0])
}

// tokenFlags are the flags every token subcommand shares.
type tokenFlags struct {
	db, socket, issuer *string
}

func addTokenFlags(e *env, fs *flag.FlagSet, withIssuer bool) *tokenFlags {
	f := &tokenFlags{db: dbFlag(e, fs),
		socket: fs.String("admin-socket", "", "the running server's admin socket (default: <db>.admin.sock)")}
	if withIssuer {
		f.issuer = fs.String("issuer", "", "who issues or revokes, recorded as the event's actor (default: the OS user)")
	}
	return f
}

// open reaches the tokens: through the server holding the file, if one
// answers on its admin socket, else in the file.
func (f *tokenFlags) open(name string) (*server.Tokens, error) {
	if err := checkPath("--db", *f.db, true); err != nil {
		return nil, err
	}
	m, err := server.OpenTokens(*f.db, cmp.Or(*f.socket, server.AdminSocketPath(*f.db)))
	if err != nil {
		return nil, usageErr("%s: %v", name, err)
	}
	return m, nil
}

func (f *tokenFlags) issuerName() string {
	if *f.issuer != "" {
		return *f.issuer
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

func tokenAdd(e *env, args []string) error {
	fs := newFlags(e, "token add", "Issue a bearer token for an agent of logbook server. The token is printed once, as the\n"+
		"last line of stdout; the ledger records only its SHA-256 (a token.issued event).")
	f := addTokenFlags(e, fs, true)
	agent := fs.String("agent", "", "the agent the token speaks for: the actor of every event of its calls (required)")
	readOnly := fs.Bool("read-only", false, "mutating tools answer ERR_READ_ONLY")
	tools := fs.String("tools", "", "comma-separated tools the token may list and call (default: all)")
	if done, err := parse(e, fs, args); done {
		return err
	}
	var scope []string
	if *tools != "" {
		for _, t := range strings.Split(*tools, ",") {
			scope = append(scope, strings.TrimSpace(t))
		}
	}
	m, err := f.open("token add")
	if err != nil {
		return err
	}
	defer m.Close()
	secret, t, err := m.Issue(server.Issue{Agent: *agent, ReadOnly: *readOnly, Tools: scope, Issuer: f.issuerName()})
	if err != nil {
		return tokenErr("token add", err)
	}
	fmt.Fprintf(e.stdout, "issued a token for agent %q (%s), recorded at seq %d as sha256 %s\n", t.Agent, scopeText(t), t.IssuedSeq, t.SHA256)
	fmt.Fprintln(e.stdout, secret)
	return m.Close()
}

func tokenRevoke(e *env, args []string) error {
	fs := newFlags(e, "token revoke", "Revoke tokens (a token.revoked event each): every valid token of an agent, or one by its\n"+
		"SHA-256. A running server refuses them from its next request on.")
	f := addTokenFlags(e, fs, true)
	agent := fs.String("agent", "", "revoke every valid token of this agent")
	sum := fs.String("token-sha256", "", "revoke the token with this SHA-256 (hex, as token list shows)")
	if done, err := parse(e, fs, args); done {
		return err
	}
	m, err := f.open("token revoke")
	if err != nil {
		return err
	}
	defer m.Close()
	list, err := m.Revoke(server.Revoke{Agent: *agent, SHA256: *sum, Issuer: f.issuerName()})
	if err != nil {
		return tokenErr("token revoke", err)
	}
	for _, t := range list {
		fmt.Fprintf(e.stdout, "revoked %s (agent %q) at seq %d\n", t.SHA256, t.Agent, t.RevokedSeq)
	}
	return m.Close()
}

func tokenList(e *env, args []string) error {
	fs := newFlags(e, "token list", "List the tokens issued, revoked ones included (hashes only: tokens are never stored).")
	f := addTokenFlags(e, fs, false)
	asJSON := fs.Bool("json", false, "print JSON")
	if done, err := parse(e, fs, args); done {
		return err
	}
	m, err := f.open("token list")
	if err != nil {
		return err
	}
	defer m.Close()
	list, err := m.List()
	if err != nil {
		return tokenErr("token list", err)
	}
	if *asJSON {
		if list == nil {
			list = []projections.Token{}
		}
		return writeJSON(e.stdout, list)
	}
	w := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "SHA256\tAGENT\tSCOPE\tISSUER\tISSUED\tSTATE")
	for _, t := range list {
		state := "valid"
		if t.RevokedSeq != 0 {
			state = fmt.Sprintf("revoked at %d", t.RevokedSeq)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", t.SHA256, t.Agent, scopeText(t), t.Issuer, t.IssuedSeq, state)
	}
	w.Flush()
	return m.Close()
}

func scopeText(t projections.Token) string {
	s := "all tools"
	if len(t.Tools) > 0 {
		s = strings.Join(t.Tools, ",")
	}
	if t.ReadOnly {
		s += ", read-only"
	}
	return s
}

func tokenErr(name string, err error) error {
	if errors.Is(err, server.ErrInvalid) || errors.Is(err, server.ErrNoToken) {
		return usageErr("%s: %v", name, err)
	}
	return ioErr(name, err)
}

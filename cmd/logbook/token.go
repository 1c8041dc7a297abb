package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/server"
	"github.com/logbook-dev/logbook/views"
)

// token is `logbook token add|revoke|list`: the tokens are server's
// (through the running server's admin socket, else in the file).
func token(ctx context.Context, e *env, args []string) error {
	const usage = "token: want a subcommand: add, revoke or list (logbook token add --help)"
	if len(args) == 0 {
		return errors.New(usage)
	}
	if isHelp(args[0]) {
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
	for _, sc := range []subcommand{
		{name: "add", setup: tokenAdd, help: "Issue a bearer token for an agent of logbook server. The token is printed once, as the\n" +
			"last line of stdout; the ledger records only its SHA-256 (a token.issued event)."},
		{name: "revoke", setup: tokenRevoke, help: "Revoke tokens (a token.revoked event each): every valid token of an agent, or one by its\n" +
			"SHA-256. A running server refuses them from its next request on."},
		{name: "list", setup: tokenList, help: "List the tokens issued, revoked ones included (hashes only: tokens are never stored)."},
	} {
		if sc.name == args[0] {
			sc.name = "token " + sc.name
			return e.exec(ctx, sc, args[1:])
		}
	}
	return fmt.Errorf("%s, not %q", usage, args[0])
}

// tokens reaches the tokens with the flags every token subcommand shares;
// issuer, if set, adds --issuer (a command that writes); without it the
// file, if no server holds it, is only read.
func (c *call) tokens(issuer *string) func(fn func(m *server.Tokens) error) error {
	c.dbFlag()
	socket := c.fs.String("admin-socket", "", "the running server's admin socket (default: <db>.admin.sock)")
	if issuer != nil {
		c.fs.StringVar(issuer, "issuer", "", "who issues or revokes, recorded as the event's actor (default: the OS user)")
	}
	return func(fn func(m *server.Tokens) error) error {
		if err := checkPath("--db", *c.db, true); err != nil {
			return err
		}
		open := server.OpenTokens
		if issuer == nil {
			open = server.OpenTokensToRead
		}
		m, err := open(*c.db, cmp.Or(*socket, server.AdminSocketPath(*c.db)))
		if err != nil {
			return err
		}
		defer m.Close()
		if err := fn(m); err != nil {
			return err
		}
		return m.Close()
	}
}

func tokenAdd(c *call) func() error {
	var issuer string
	with := c.tokens(&issuer)
	agent := c.fs.String("agent", "", "the agent the token speaks for: the actor of every event of its calls (required)")
	readOnly := c.fs.Bool("read-only", false, "mutating tools answer ERR_READ_ONLY")
	tools := c.fs.String("tools", "", "comma-separated tools the token may list and call (left out: all; an empty name is refused)")
	return func() error {
		// A scope given empty is refused, not read as no scope: a token
		// meant for a few tools must never get them all.
		var scope []string
		if c.isSet("tools") {
			for _, t := range commaList(*tools) {
				if t == "" {
					return fmt.Errorf("--tools %q names an empty tool; name each tool the token may call, or leave --tools out for a token of every tool", *tools)
				}
				scope = append(scope, t)
			}
		}
		return with(func(m *server.Tokens) error {
			secret, t, err := m.Issue(server.Issue{Agent: *agent, ReadOnly: *readOnly, Tools: scope, Issuer: issuer})
			if err == nil {
				fmt.Fprintf(c.stdout, "issued a token for agent %q (%s), recorded at seq %d as sha256 %s\n", t.Agent, views.TokenScope(t), t.IssuedSeq, t.SHA256)
				fmt.Fprintln(c.stdout, secret)
			}
			return err
		})
	}
}

func tokenRevoke(c *call) func() error {
	var issuer string
	with := c.tokens(&issuer)
	agent := c.fs.String("agent", "", "revoke every valid token of this agent")
	sum := c.fs.String("token-sha256", "", "revoke the token with this SHA-256 (hex, as token list shows)")
	return func() error {
		return with(func(m *server.Tokens) error {
			list, err := m.Revoke(server.Revoke{Agent: *agent, SHA256: *sum, Issuer: issuer})
			for _, t := range list {
				fmt.Fprintf(c.stdout, "revoked %s (agent %q) at seq %d\n", t.SHA256, t.Agent, t.RevokedSeq)
			}
			return err
		})
	}
}

func tokenList(c *call) func() error {
	with := c.tokens(nil)
	c.jsonFlag("print JSON")
	return func() error {
		return with(func(m *server.Tokens) error {
			list, err := m.List()
			if errors.Is(err, projections.ErrVersionChanged) && !errors.Is(err, projections.ErrNewerVersion) {
				return fmt.Errorf("%w; rebuild them from the log: logbook rebuild --db %s", err, *c.db)
			}
			if err != nil {
				return err
			}
			if list == nil {
				list = []projections.Token{}
			}
			return c.print(list, func() error { return views.TokenList(c.stdout, list) })
		})
	}
}

package server

import (
	"fmt"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/skills"
)

// Tools loads the skills folder skillsDir (a skill file that does not load
// is logged to opts.Logger and skipped) and returns the MCP tools running
// on l with opts, Skills, Skipped and Version filled in: what Run serves over
// HTTP (logbook serve builds its own, with the relay: Embedded).
func Tools(l *boltstore.Store, skillsDir, version string, opts commands.Options) (*mcp.Server, error) {
	// Its callers' tokens are the ledger's: a call committed after its
	// token's revocation is refused.
	opts.LedgerTokens = true
	edge, _, err := tools(l, skillsDir, version, opts)
	return edge, err
}

// Embedded is Tools for logbook serve, which shares its ledger file with
// other processes: with the relay started (relay.go). Close the relay
// before the ledger.
func Embedded(l *boltstore.Store, skillsDir, version string, opts commands.Options) (*mcp.Server, *Relay, error) {
	// A logbook server started on the file holds it for its lifetime, and
	// a stopped process (SIGSTOP, ^Z) until it is resumed: this process's
	// commits then time out, and the agent is told why.
	opts.HeldBy = func() string {
		who, stopped := boltstore.HeldBy(l.Path())
		// (A stopped server's admin socket still takes connections: its
		// being stopped is what keeps the file.)
		if !stopped && AdminAnswers(l.Path()) {
			return "a logbook server for as long as it runs (its admin socket answers beside the file): reach the ledger through it (logbook serve --connect URL), or stop it"
		}
		return who
	}
	edge, svc, err := tools(l, skillsDir, version, opts)
	if err != nil {
		return nil, nil, err
	}
	return edge, StartRelay(l, edge, svc, opts.Logger), nil
}

func tools(l *boltstore.Store, skillsDir, version string, opts commands.Options) (*mcp.Server, *commands.Service, error) {
	set, skipped, err := skills.Load(skillsDir)
	if err != nil {
		return nil, nil, fmt.Errorf("skills: %w", err)
	}
	for _, s := range skipped {
		opts.Logger.Warn("skill skipped", "path", s.Path, "reason", s.Reason)
	}
	opts.Skills, opts.Skipped, opts.Version = set, skipped, version
	svc, err := commands.New(l, opts)
	if err != nil {
		return nil, nil, err
	}
	return mcp.New(svc, mcp.Options{Version: version, Logger: opts.Logger}), svc, nil
}

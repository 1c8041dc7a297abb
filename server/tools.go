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
// on l with opts, Skills, Skipped and Version filled in: what logbook serve
// speaks over stdio and Run over HTTP.
func Tools(l *boltstore.Store, skillsDir, version string, opts commands.Options) (*mcp.Server, error) {
	set, skipped, err := skills.Load(skillsDir)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	for _, s := range skipped {
		opts.Logger.Warn("skill skipped", "path", s.Path, "reason", s.Reason)
	}
	opts.Skills, opts.Skipped, opts.Version = set, skipped, version
	svc, err := commands.New(l, opts)
	if err != nil {
		return nil, err
	}
	return mcp.New(svc, mcp.Options{Version: version, Logger: opts.Logger}), nil
}

package mcp

import "github.com/logbook-dev/logbook/commands"

func systemTools() []*tool {
	return []*tool{
		{
			name:        "server_ping",
			title:       "Ping the server",
			description: "Check that the server answers, and get its current time.",
			cmd:         commands.Ping,
			out: object("",
				prop("timestamp", str("Server time, RFC 3339 UTC.")),
			),
		},
		{
			name:        "server_health",
			title:       "Server health",
			description: "Report the server's mode, uptime, ledger head and root, projection state, middleware stages, tools and loaded or skipped skills.",
			cmd:         commands.Health,
			out: object("",
				prop("status", str("\"ok\", or \"degraded\" when skill files were skipped.")),
				prop("mode", str("\"FULL\", or \"READONLY\" when mutating tools are refused to the caller (a --read-only server, or a read-only token).")),
				prop("uptime_ms", integer("Milliseconds since the server started.")),
				prop("version", str("logbook version.")),
				prop("timestamp", str("Server time, RFC 3339 UTC.")),
				prop("db", object("The ledger file.",
					prop("open", boolean("Whether the ledger is open.")),
					prop("path", str("Ledger file path, as the operator gave it.")),
					prop("format_version", &schema{description: "On-disk format version of the ledger."}),
					prop("size_bytes", integer("Size of the ledger file in bytes.")),
				)),
				prop("ledger", object("The log itself.",
					prop("head_seq", integer("Ledger sequence of the last event; 0 for an empty ledger.")),
					prop("head_hash", str("Hash of the last event, hex.").nullable()),
					prop("root", str("RFC 9162 root of the whole ledger, hex.")),
				)),
				prop("projections", object("The read models folded from the log.",
					prop("version", &schema{description: "Projection format version."}),
					prop("applied_seq", integer("Ledger sequence folded so far.")),
				)),
				prop("middleware", object("How calls are handled.",
					prop("stages", array("Stages every tool call goes through, in order.", str("A stage."))),
				)),
				prop("tools", object("The published tools.",
					prop("registered", integer("Number of tools published to the caller (for a token scoped to some tools, those).")),
				)),
				prop("skills", object("The SKILL.md files.",
					prop("loaded", integer("Number of skills loaded.")),
					prop("skipped", array("Skill files not loaded.", object("A skipped file.",
						prop("path", str("Path relative to the skills directory.")),
						prop("reason", str("Why it was skipped.")),
					))),
				)),
			),
		},
	}
}

// describe puts what only the edge knows about itself into a health report:
// the stages a call goes through here and how many tools it publishes to
// the caller (registered).
func (s *Server) describe(result any, registered int) {
	if h, ok := result.(*commands.HealthResult); ok && h != nil {
		h.Middleware.Stages = s.Stages()
		h.Tools.Registered = registered
	}
}

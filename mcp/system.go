package mcp

import "github.com/logbook-dev/logbook/commands"

func systemTools() []*tool {
	return []*tool{
		{
			name:        "server_ping",
			description: "Check that the server answers, and get its current time.",
			cmd:         commands.Ping,
			out: object("",
				prop("timestamp", str("RFC 3339 UTC.")),
			),
		},
		{
			name:        "server_health",
			description: "Report the server's mode, uptime, ledger head and root, projection state, middleware stages, tools and loaded or skipped skills.",
			cmd:         commands.Health,
			out: object("",
				prop("status", str("\"ok\" or \"degraded\".")),
				prop("mode", str("\"FULL\" or \"READONLY\".")),
				prop("uptime_ms", integer("")),
				prop("version", str("")),
				prop("timestamp", str("RFC 3339 UTC.")),
				prop("db", object("",
					prop("open", boolean("")),
					prop("path", str("")),
					prop("format_version", &schema{}),
					prop("size_bytes", integer("")),
				)),
				prop("ledger", object("",
					prop("head_seq", integer("")),
					prop("head_hash", str("Null or absent for an empty ledger.").orNull()),
					prop("root", str("RFC 9162 root of the whole ledger, hex.")),
				)),
				prop("projections", object("",
					prop("version", &schema{}),
					prop("applied_seq", integer("")),
				)),
				prop("middleware", object("",
					prop("stages", array("Stages every tool call goes through, in order.", str(""))),
				)),
				prop("tools", object("",
					prop("registered", integer("")),
				)),
				prop("skills", object("",
					prop("loaded", integer("")),
					prop("skipped", array("", object("",
						prop("path", str("")),
						prop("reason", str("")),
					))),
				)),
			),
		},
	}
}

// describe puts what only the edge knows about itself into a health report:
// the stages a call goes through here and the tools published.
func (s *Server) describe(result any) {
	if h, ok := result.(*commands.HealthResult); ok && h != nil {
		h.Middleware.Stages = s.Stages()
		h.Tools.Registered = len(s.tools)
	}
}

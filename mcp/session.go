package mcp

import "github.com/logbook-dev/logbook/commands"

func sessionTools() []*tool {
	return []*tool{
		{
			name: "audit_session_start",
			description: "Open an audit session on a task that collects, from now on, the ledger events concerning the task " +
				"(with scope deep also its sub-tasks) as the leaves of a Merkle tree.",
			cmd: commands.StartSession,
			out: object("",
				prop("session_id", str("Id of the new session, e.g. \"A-0001\".")),
				prop("task_id", str("")),
				prop("auditor_id", str("")),
				prop("started_at", str("RFC 3339 UTC.")),
				prop("scope", str("")),
				prop("start_seq", integer("Ledger sequence of the session's start event, its first leaf.")),
			),
		},
		{
			name: "merkle_finalize",
			description: "Seal an audit session: compute and freeze its RFC 9162 Merkle root, and return the whole ledger's root " +
				"so every leaf can also be proven against the full log.",
			cmd: commands.Finalize,
			out: object("",
				prop("session_id", str("")),
				prop("merkle_root", str("RFC 9162 root over the session's leaves, hex.")),
				prop("tree_depth", integer("")),
				prop("leaf_count", integer("")),
				prop("first_seq", integer("Ledger sequence of the first leaf.")),
				prop("last_seq", integer("Ledger sequence of the last leaf.")),
				prop("finalized_at", str("RFC 3339 UTC.")),
				prop("frozen", boolean("Always true: the root never changes again.")),
				prop("ledger_size", integer("Number of events in the ledger right after the finalize event.")),
				prop("ledger_root", str("RFC 9162 root of the whole ledger right after the finalize event, hex.")),
			),
		},
		{
			name:        "merkle_root",
			description: "Return an audit session's Merkle root: over the leaves so far while it is open, the frozen root once it is finalized.",
			cmd:         commands.Root,
			out: object("",
				prop("session_id", str("")),
				prop("merkle_root", str("hex")),
				prop("leaf_count", integer("")),
				prop("is_finalized", boolean("")),
				prop("as_of", str("RFC 3339 UTC time the root was computed.")),
				prop("as_of_seq", integer("Ledger sequence the root was computed at.")),
			),
		},
		{
			name: "audit_verify_chain",
			description: "Recompute every event hash from the stored bytes and check every link for a session, a task or (neither given) " +
				"the whole ledger; a broken ledger is reported in the result, not as an error.",
			cmd: commands.VerifyChain,
			out: object("",
				prop("session_id", str("").orNull()),
				prop("task_id", str("").orNull()),
				prop("chain_valid", boolean("")),
				prop("total_records", integer("")),
				prop("integrity_score", number("Share of verified links, 0 to 100.")),
				prop("broken_links", array("", object("",
					prop("position", integer("Ledger sequence of the broken link.")),
					prop("expected_hash", str("")),
					prop("actual_hash", str("")),
				))),
				prop("verified_at", str("RFC 3339 UTC.")),
				prop("merkle_valid", boolean("For a finalized session: its frozen root recomputed and equal.").orNull()),
				prop("hashes", array("With full_trace.", object("",
					prop("seq", integer("")),
					prop("hash", str("")),
				)).orNull()),
			),
		},
	}
}

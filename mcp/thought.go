package mcp

import "github.com/logbook-dev/logbook/commands"

func thoughtTools() []*tool {
	thought := func() []property {
		return []property{
			prop("thought_id", str("Id of the thought, e.g. \"Θ-0001\".")),
			prop("task_id", str("")),
			prop("type", str("")),
		}
	}
	return []*tool{
		{
			name: "thought_record",
			description: "Record a plan, analysis, decision or other thought on a task as the next hash-chained entry of its decision trail " +
				"(a task needs one before it can be done).",
			cmd: commands.RecordThought,
			out: object("",
				append(thought(),
					prop("hash", str("Hash of the ledger event that recorded the thought.")),
					prop("previous_hash", str("Hash of the task's previous thought; null for its first.").orNull()),
					prop("recorded_at", str("RFC 3339 UTC.")),
					prop("recorded_by", str("Agent that recorded the thought.")),
					prop("chain_position", integer("Position in the task's chain, from 1.")),
					prop("seq", integer("Ledger sequence of the event that recorded the thought.")),
				)...,
			),
		},
		{
			name:        "thought_record_list",
			description: "List recorded thoughts by task, audit session or type in ledger order, optionally verifying each link and hash of the chain.",
			cmd:         commands.ListThoughts,
			out: object("",
				prop("task_id", str("").orNull()),
				prop("session_id", str("").orNull()),
				prop("thought_count", integer("Number of thoughts that match, before limit.")),
				prop("thoughts", array("", object("",
					append(thought(),
						prop("content", str("")),
						prop("hash", str("")),
						prop("previous_hash", str("").orNull()),
						prop("recorded_at", str("")),
						prop("recorded_by", str("")),
						prop("chain_position", integer("")),
					)...,
				))),
				prop("chain_valid", boolean("With verify_chain.").orNull()),
				prop("invalid_links", array("Chain positions whose link or hash does not hold, with verify_chain.", integer("")).orNull()),
			),
		},
	}
}

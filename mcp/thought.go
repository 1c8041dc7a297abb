package mcp

import "github.com/logbook-dev/logbook/commands"

func thoughtTools() []*tool {
	thought := func() []property {
		return []property{
			prop("thought_id", str("Id of the thought, e.g. \"Θ-0001\".")),
			prop("task_id", str("Id of the task the thought is about.")),
			prop("type", str("Kind of thought: plan, analysis, decision, reflection, discovery, risk or blockers.")),
		}
	}
	return []*tool{
		{
			name:  "thought_record",
			title: "Record a thought",
			description: "Record a plan, analysis, decision or other thought on a task as the next hash-chained entry of its decision trail " +
				"(a task needs one before it can be done).",
			cmd: commands.RecordThought,
			out: object("",
				append(thought(),
					prop("hash", str("Hash of the ledger event that recorded the thought, hex; the leaf an inclusion proof starts from.")),
					prop("previous_hash", str("Hash of the task's previous thought; null for its first.").nullable()),
					prop("recorded_at", str("RFC 3339 UTC time of recording.")),
					prop("recorded_by", str("Agent that recorded the thought.")),
					prop("chain_position", integer("Position in the task's chain, from 1.")),
					prop("seq", integer("Ledger sequence of the event that recorded the thought.")),
				)...,
			),
		},
		{
			name:        "thought_record_list",
			title:       "List thoughts",
			description: "List recorded thoughts by task, audit session or type in ledger order, optionally verifying each link and hash of the chain.",
			cmd:         commands.ListThoughts,
			out: object("",
				prop("task_id", str("The task filtered on, if any.").orNull()),
				prop("session_id", str("The session filtered on, if any.").orNull()),
				prop("thought_count", integer("Number of thoughts that match, before limit.")),
				prop("thoughts", array("The thoughts, in ledger order.", object("One thought.",
					append(thought(),
						prop("content", str("The thought itself.")),
						prop("hash", str("Hash of the ledger event that recorded the thought, hex.")),
						prop("previous_hash", str("Hash of the task's previous thought; null for its first.").nullable()),
						prop("recorded_at", str("RFC 3339 UTC time of recording.")),
						prop("recorded_by", str("Agent that recorded the thought.")),
						prop("chain_position", integer("Position in the task's chain, from 1.")),
						prop("seq", integer("Ledger sequence of the event that recorded the thought.")),
					)...,
				))),
				prop("chain_valid", boolean("With verify_chain: whether the link and hash of every thought that matches (listed or not) hold.").orNull()),
				prop("invalid_links", array("Chain positions (of any thought that matches, listed or not) whose link or hash does not hold, with verify_chain.", integer("A chain position.")).orNull()),
			),
		},
	}
}

package mcp

import "strings"

// thoughtTypes are the kinds of entry in a task's decision trail (CONTRACT.md §4).
var thoughtTypes = []string{"plan", "analysis", "decision", "reflection", "discovery", "risk", "blockers"}

// maxMetadataBytes bounds thought_record's metadata, measured as the compact
// JSON text received (insignificant whitespace removed).
const maxMetadataBytes = 16 << 10

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
			in: object("",
				prop("task_id", taskID("Id of the task the thought is about, e.g. \"T-0001\"; closed tasks are allowed.")),
				prop("type", enum("Kind of thought.", thoughtTypes...)),
				prop("content", str("The thought itself; must not be only whitespace.").length(1, 5000).matches(`\S`, "must not be only whitespace")),
				prop("session_id", str("Audit session to record the thought into; it must exist and not be finalized.")),
				prop("branch", str("Version-control branch the work is on.").maxLen(256)),
				prop("commit_sha", str("Commit the thought refers to, 7 to 64 hex digits.").matches(`^[0-9a-fA-F]{7,64}$`, "must be 7 to 64 hexadecimal digits")),
				prop("tests_run", array("Tests that were run.", str("A test.").maxLen(1000)).most(100)),
				prop("blockers", array("What stands in the way.", str("A blocker.").maxLen(1000)).most(50)),
				prop("metadata", func() *schema {
					s := object("Free-form JSON object, at most 16 KiB as compact JSON.")
					s.maxBytes = maxMetadataBytes
					return s
				}()),
			).require("task_id", "type", "content"),
			check: checkThoughtRecord,
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
			readOnly:    true,
			description: "List recorded thoughts by task, audit session or type in ledger order, optionally verifying each link and hash of the chain.",
			in: object("",
				prop("task_id", taskID("Only thoughts on this task.")),
				prop("session_id", str("Only thoughts recorded into this audit session.")),
				prop("type", enum("Only thoughts of this kind.", thoughtTypes...)),
				prop("limit", integer("Maximum number of thoughts to return (the first ones in ledger order).").rng(1, 500).byDefault(100)),
				prop("verify_chain", boolean("Also check the chain and report chain_valid and invalid_links.").byDefault(false)),
			),
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

// checkThoughtRecord rejects content made only of Unicode white space, which
// Go's \S (ASCII classes) lets through; the issue is the pattern's own, so a
// value that fails both is reported once.
func checkThoughtRecord(args *value, add func(path, msg string)) {
	c := args.get("content")
	if c != nil && c.kind == kindString && c.str != "" && strings.TrimSpace(c.str) == "" {
		add("content", "must not be only whitespace")
	}
}

package domain

// ThoughtTypes are the kinds of entry in a task's decision trail (CONTRACT.md §4).
var ThoughtTypes = []string{"plan", "analysis", "decision", "reflection", "discovery", "risk", "blockers"}

// MaxMetadataBytes bounds thought_record's metadata, measured as compact JSON.
const MaxMetadataBytes = 16 << 10

// RecordThought appends a thought to a task's decision trail.
var RecordThought = Command{
	Name: "thought_record",
	Fields: []Field{
		field("task_id", taskID("Id of the task the thought is about, e.g. \"T-0001\"; closed tasks are allowed.")),
		field("type", enum("Kind of thought.", ThoughtTypes...)),
		// \S catches ASCII-blank content in the schema itself; Prose catches
		// the Unicode and invisible rest.
		field("content", str("The thought itself; must not be only whitespace.").length(1, 5000).
			matches(`\S`, "must not be only whitespace").text(Prose)),
		field("session_id", str("Audit session to record the thought into; it must exist and not be finalized.")),
		field("branch", str("Version-control branch the work is on.").length(0, 256).text(Line)),
		field("commit_sha", str("Commit the thought refers to, 7 to 64 hex digits.").matches(`^[0-9a-fA-F]{7,64}$`, "must be 7 to 64 hexadecimal digits")),
		field("tests_run", array("Tests that were run.", str("A test.").length(0, 1000).text(Notes), 100)),
		field("blockers", array("What stands in the way.", str("A blocker.").length(0, 1000).text(Notes), 50)),
		field("metadata", Rule{Kind: Object, Doc: "Free-form JSON object, at most 16 KiB as compact JSON.", MaxBytes: MaxMetadataBytes}),
	},
	Required: []string{"task_id", "type", "content"},
}

// ListThoughts reads thoughts in ledger order.
var ListThoughts = Command{
	Name: "thought_record_list",
	Fields: []Field{
		field("task_id", taskID("Only thoughts on this task.")),
		field("session_id", str("Only thoughts recorded into this audit session.")),
		field("type", enum("Only thoughts of this kind.", ThoughtTypes...)),
		field("limit", integer("Maximum number of thoughts to return (the first ones in ledger order).").rng(1, 500).byDefault(100)),
		field("verify_chain", boolean("Also check the chain and report chain_valid and invalid_links.").byDefault(false)),
	},
}

package domain

// ThoughtTypes are the kinds of entry in a task's decision trail (CONTRACT.md §4).
var ThoughtTypes = []string{"plan", "analysis", "decision", "reflection", "discovery", "risk", "blockers"}

// MaxMetadataBytes bounds thought_record's metadata, measured as compact JSON.
const MaxMetadataBytes = 16 << 10

// RecordThought appends a thought to a task's decision trail.
var RecordThought = Command{
	Name: "thought_record",
	Fields: []Field{
		field("task_id", taskID("Id of the task the thought is about, e.g. \"T-0001\"; closed tasks take thoughts too.")),
		field("type", enum("Kind of thought. plan: the steps you intend, before you start. "+
			"analysis: what you examined and what it showed. decision: a choice you made and why — auditors read these first. "+
			"reflection: looking back on finished work. discovery: a fact you came upon that changes the picture. "+
			"risk: what could go wrong and how you guard against it. blockers: what stops progress now (also list them in blockers).", ThoughtTypes...)),
		// \S catches ASCII-blank content in the schema itself; Prose catches
		// the Unicode and invisible rest.
		field("content", str("The thought itself, in plain words: what, and why; must not be only whitespace.").length(1, 5000).
			matches(`\S`, "must not be only whitespace").text(Prose)),
		field("session_id", sessionID("Also record the thought as a leaf of this open audit session, e.g. \"A-0001\", even if its task is outside the session's scope; the session must exist and not be finalized.")),
		field("branch", str("Version-control branch the work is on, e.g. \"fix-rounding\".").length(0, 256).text(Line)),
		field("commit_sha", str("Commit the thought refers to (abbreviated or full), 7 to 64 hex digits.").matches(`^[0-9a-fA-F]{7,64}$`, "must be 7 to 64 hexadecimal digits")),
		field("tests_run", array("Tests run for this step, with their outcome, e.g. \"go test ./billing: ok\".", str("A test and its outcome.").length(0, 1000).text(Notes), 100)),
		field("blockers", array("What stands in the way, one entry each; give them with type blockers.", str("A blocker.").length(0, 1000).text(Notes), 50)),
		field("metadata", Rule{Kind: Object, Doc: "Free-form JSON object for anything else worth keeping (links, figures), at most 16 KiB as compact JSON; its numbers within the range of a double.", MaxBytes: MaxMetadataBytes}),
	},
	Required: []string{"task_id", "type", "content"},
}

// ListThoughts reads thoughts in ledger order.
var ListThoughts = Command{
	Name: "thought_record_list",
	Fields: []Field{
		field("task_id", taskID("Only thoughts on this task.")),
		field("session_id", sessionID("Only thoughts recorded into this audit session.")),
		field("type", enum("Only thoughts of this kind (see thought_record's type).", ThoughtTypes...)),
		field("limit", integer("Maximum number of thoughts to return (the first ones in ledger order).").rng(1, 500).byDefault(100)),
		field("verify_chain", boolean("Also re-hash every thought that matches (all of them, not only the limit listed) and check its link to the one before; reports chain_valid and invalid_links.").byDefault(false)),
	},
}

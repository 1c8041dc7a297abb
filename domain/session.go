package domain

// Scopes of an audit session: the task's own events, or also its descendants'.
var Scopes = []string{"shallow", "deep"}

// StartSession opens an audit session on a task.
var StartSession = Command{
	Name: "audit_session_start",
	Fields: []Field{
		field("task_id", taskID("Id of the task to audit, e.g. \"T-0001\"; it must exist.")),
		field("auditor_id", str("Who audits.").length(1, 128).text(Line)),
		field("reason", str("Why the audit is made.").length(0, 1000).text(Notes)),
		field("scope", enum("shallow: the task's own events; deep: also its descendants'.", Scopes...).byDefault("shallow")),
	},
	Required: []string{"task_id", "auditor_id"},
}

// Finalize seals an audit session.
var Finalize = Command{
	Name: "merkle_finalize",
	Fields: []Field{
		field("session_id", sessionID("Id of the session to finalize, e.g. \"A-0001\".")),
		field("task_id", taskID("Only this task's leaves; the task must be in the session's scope.")),
	},
	Required: []string{"session_id"},
}

// Root reads an audit session's Merkle root.
var Root = Command{
	Name: "merkle_root",
	Fields: []Field{
		field("session_id", sessionID("Id of the session, e.g. \"A-0001\".")),
	},
	Required: []string{"session_id"},
}

// VerifyChain checks the hash chain of a session, a task or the whole ledger.
var VerifyChain = Command{
	Name: "audit_verify_chain",
	Fields: []Field{
		field("session_id", sessionID("Verify this audit session's events (and its frozen root, if finalized).")),
		field("task_id", taskID("Verify this task's events.")),
		field("full_trace", boolean("Also return every verified event's seq and hash.").byDefault(false)),
	},
}

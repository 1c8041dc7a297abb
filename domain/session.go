package domain

// Scopes of an audit session: the task's own events, or also its descendants'.
var Scopes = []string{"shallow", "deep"}

// StartSession opens an audit session on a task.
var StartSession = Command{
	Name: "audit_session_start",
	Fields: []Field{
		field("task_id", taskID("Id of the task to audit, e.g. \"T-0001\"; it must exist.")),
		field("auditor_id", str("Name of the person or agent doing the audit, e.g. \"security-review\"; recorded as given, next to the caller's own identity.").length(1, 128).text(Line)),
		field("reason", str("Why the audit is made, e.g. \"sign-off for release 1.4\".").length(0, 1000).text(Notes)),
		field("scope", enum("Which events become leaves. shallow: the task's own events; deep: also those of its sub-tasks, at any depth.", Scopes...).byDefault("shallow")),
	},
	Required: []string{"task_id", "auditor_id"},
}

// Finalize seals an audit session.
var Finalize = Command{
	Name: "merkle_finalize",
	Fields: []Field{
		field("session_id", sessionID("Id of the open session to seal, e.g. \"A-0001\"; a finalized session cannot be finalized again.")),
		field("task_id", taskID("Seal only the leaves concerning this task (and the session's start event); the task must be in the session's scope or have leaves in it (thoughts recorded on it with this session_id). Default: all leaves.")),
	},
	Required: []string{"session_id"},
}

// Root reads an audit session's Merkle root.
var Root = Command{
	Name: "merkle_root",
	Fields: []Field{
		field("session_id", sessionID("Id of the session, open or finalized, e.g. \"A-0001\".")),
	},
	Required: []string{"session_id"},
}

// VerifyChain checks the hash chain of a session, a task or the whole ledger.
var VerifyChain = Command{
	Name: "audit_verify_chain",
	Fields: []Field{
		field("session_id", sessionID("Verify this audit session's leaves (and its frozen root, if finalized). Give neither session_id nor task_id to verify the whole ledger.")),
		field("task_id", taskID("Verify this task's events and thoughts; with session_id, only that task's leaves in the session (the task must be in the session's scope or have leaves in it, as for merkle_finalize).")),
		field("full_trace", boolean("Also return the seq and hash of every verified event (long for a big ledger).").byDefault(false)),
	},
}

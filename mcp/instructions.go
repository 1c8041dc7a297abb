package mcp

// Instructions are what a model reads at initialize before any tool: how the
// tools fit together. Short on purpose; the tools' own descriptions say the rest.
const Instructions = `logbook keeps a tamper-evident record of the work you do and why.
1. Tasks: task_create puts a task in backlog; task_update moves it through the state machine (backlog → todo → in_progress → review → done; blocked needs a blocked_reason; cancelled ends it). task_next_actions suggests what to pick up; task_get and task_list read.
2. Thoughts: record your reasoning with thought_record as you go, not afterwards: a plan before you start, analysis and discoveries while you work, each decision with its why, risks and blockers as you see them, a reflection at the end. Writeback: a task cannot be moved to done until it has at least one thought.
3. Audit sessions: audit_session_start opens a session on a task; from then on the task's events are its leaves. merkle_finalize seals that window with an RFC 9162 Merkle root that never changes; merkle_root reads it.
4. Everything — every call, read or write, valid or not — is an event in one append-only, hash-chained ledger. audit_verify_chain re-checks the hashes here; an auditor verifies the whole ledger and inclusion proofs independently with the logbook CLI.
Every result is {"ok":true,"data":…} or {"ok":false,"error":{"code","message","details"}}; ERR_INVALID_INPUT lists the fields at fault in details.issues.`

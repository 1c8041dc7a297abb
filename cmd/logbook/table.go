package main

// subcommands are logbook's commands, in the order logbook --help lists
// them (version is Run's own).
var subcommands = []subcommand{
	{name: "check-proof", summary: "verify a proof file offline, against a trusted root", use: "check-proof FILE", args: 1, setup: checkProof,
		help: `Verify a proof written by logbook prove, offline (no ledger needed), by RFC 9162 §2.1.3.2
and §2.1.4.2. The trusted root comes from --root (a root you obtained independently, e.g.
from a published checkpoint), or from --checkpoint with --vkey. RFC 9162 proofs bind a tree
size only through the tree's shape: pass --size (or a checkpoint) to bind it too.
FILE "-" reads stdin. Exit 0 valid, 1 invalid or malformed proof, 2 usage or I/O error.`},
	{name: "checkpoint", summary: "sign a checkpoint (size and root) of the ledger", setup: checkpoint,
		help: "Sign a C2SP tlog-checkpoint of the ledger (its size and RFC 9162 root) with an Ed25519 note key.\nPublish it outside the ledger; `logbook verify --checkpoint` later proves the ledger still extends it."},
	{name: "keygen", summary: "create an Ed25519 key pair for signing checkpoints", setup: keygen,
		help: "Create an Ed25519 note key pair: the signer key (secret, written 0600) signs checkpoints,\nthe verifier key is what auditors are given."},
	{name: "migrate", summary: "copy a file ledger into a new JetStream stream, checking chain and root", setup: migrate,
		help: `Copy every event of a file ledger, byte for byte, into a new, empty JetStream stream
(created file-backed, replicated, deny-delete, deny-purge, without limits), then read the
whole stream back and check it is one unbroken chain whose head and Merkle root equal the
file's. Stop writers to the file first: events appended after the copy starts are not copied.
The servers must run with jetstream { sync_interval: always }.`},
	{name: "prove", summary: "write an inclusion or consistency proof as JSON", subs: prove},
	{name: "rebuild", summary: "drop every projection and refold it from the log", setup: rebuild,
		help: `Refold every projection (tasks, thoughts, sessions, skills, tokens, findings, learnings,
memories and the knowledge index) from the log into a scratch file, in chunks, so agents
keep working meanwhile, then drop the old ones and copy the new ones in, in one short hold
of the file (--json: held_ms) that reuses their pages: the file does not grow. The log itself is never written. A server does the same at start-up when
the file's projection version is not the binary's.`},
	{name: "replay", summary: "print the events as JSON lines, filtered; --follow for new ones", setup: replay,
		help: `Print the ledger's events as JSON lines, in order: the envelope (seq, time, type,
payload_version, actor, subjects, prev), the event's hash, and the payload decoded as stored.
Filters combine (all must match). Links are checked as events are read: a broken chain
stops the replay with exit 1 (run logbook verify for the full check).
With --follow, keeps printing events as agents append them, until interrupted (exit 0).`},
	{name: "root", summary: "print the RFC 9162 Merkle root of the ledger, a prefix or a range of it", setup: root,
		help: `Print the RFC 9162 Merkle root of the first --size events (default: all), or of the
events --from A --to B (inclusive) as a tree of their own (the root an audit session over
exactly those events has). Leaves are SHA-256(0x00 || stored event bytes): the root is
read from the stored Merkle nodes and checked against the events' bytes; a file where they
differ (edited or damaged) is refused, exit 1, as prove and checkpoint refuse it.`},
	{name: "serve", summary: "run the MCP stdio server for one agent", setup: serve,
		help: "Serve the MCP tools over stdin/stdout for one agent. Creates the ledger file if it does not exist."},
	{name: "server", summary: "run the ledger service: MCP over Streamable HTTP for many agents, with bearer tokens", setup: serveHTTP,
		help: "Serve the MCP tools over Streamable HTTP at /mcp to every agent holding a token\n" +
			"(logbook token add). The process holds the ledger file for its lifetime; tokens are\n" +
			"managed through its admin socket meanwhile. SIGTERM drains: calls in flight are answered."},
	{name: "sessions", summary: "list the audit sessions as a table (--task, --json)", setup: sessions,
		help: `List the audit sessions: id, task, auditor, scope, state (open or finalized), leaves,
and root (frozen once finalized; 12 hex digits). logbook show A-0001 shows one.`},
	{name: "show", summary: "show a task and its decision trail (T-0001), or an audit session (A-0001)", use: "show ID", args: 1, setup: show,
		help: `Show one task or one audit session.
  logbook show T-0001   the task, then its history and its decision trail as one timeline,
                        oldest first: each step's ledger seq, short hash (12 hex digits), time,
                        actor, and what changed (status from → to) or what was thought
  logbook show A-0001   the audit session: its task, auditor, scope, leaves, current or frozen
                        root, and the commands that prove a leaf is in the ledger
An unknown id is exit 2.`},
	{name: "snapshot", summary: "copy a live ledger, consistently, for offline audit", setup: snapshot,
		help: `Copy the ledger to a new file while agents keep writing: events and Merkle nodes (which
never change) in chunks of short read transactions, then the last events and the head in
one short read transaction. The copy's projections are refolded from its own log (they are
derived state; to check the live file's stored projections, run logbook verify on it).
The copy is in the source's file format, passes logbook verify and appears at --out only
when complete.`},
	{name: "tasks", summary: "list the tasks as a table (--project, --status, --json)", setup: tasks,
		help: `List the ledger's tasks in creation order: id, status, priority, progress, assignee
and title (cut to the terminal's width; 100 columns when printed to a pipe or a file).
Status is coloured on a terminal unless NO_COLOR is set. logbook show T-0001 shows one.`},
	{name: "token", summary: "issue, revoke and list the bearer tokens of logbook server (add|revoke|list)", subs: token},
	{name: "verify", summary: "check every event hash and link, Merkle node and projection (and a signed checkpoint)", setup: verify,
		help: `Verify a ledger without trusting the server that wrote it:
  1. every event's hash against what commits to it (the next event's prev link, or the head;
     the stored Merkle nodes over it), every prev link, the head;
  2. every stored Merkle node against its children;
  3. the projections: refolded from the log in a scratch file and compared key by key;
  4. with --checkpoint: that the ledger extends the signed checkpoint (same root over its
     first events, recomputed from the events, and a valid RFC 9162 consistency proof).
Reads in short transactions, so agents keep writing. Exit 0 ok, 1 integrity failure
(the first bad seq and the problem are reported), 2 usage or I/O error.`},
}

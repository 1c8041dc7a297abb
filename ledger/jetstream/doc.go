// Package jetstream keeps a logbook ledger in a NATS JetStream stream: a
// boltstore.Replica, so that each logbook node keeps a local bbolt copy
// (events, Merkle nodes, projections) of one log that many nodes append to.
//
// The stream is the log: one subject, stream sequence = ledger seq (the
// first event is message 1), each message's data the event's stored bytes.
// An append is one atomic batch (Nats-Batch-Id/-Sequence/-Commit) whose first
// message carries the whole-stream Nats-Expected-Last-Sequence = the head the
// node decided against; never the per-subject variant.
//
// Invariants:
//   - The stream is file-backed, replicated (3 by default; 1 only with
//     Options.AllowUnreplicated), DenyDelete and DenyPurge, without age,
//     count or size limits (a message's size among them), rollups, TTLs,
//     counters or async persistence, and not sealed.
//     Open creates it so, or refuses an existing stream that is not so, or
//     whose messages do not start at 1 without a gap. Settings edited to
//     unsafe ones while a node runs are seen in the next stream info it
//     fetches (Info; Follow's every second on a server): it then appends and
//     catches up nothing (boltstore.ErrLogUnsafe) until they are restored.
//     No request is added to an append for it: an edit that itself removes
//     events (interest retention drops them at once) is reported by the next
//     catch-up as a gap, and such edits can only be seen, not prevented.
//   - An append lands whole at the position it was decided for, or not at
//     all: another append at head+1 is boltstore.ErrHeadMoved (the store
//     rolls back, catches up and decides again). A "wrong last sequence"
//     answer alone is not proof: after a partition heals, the server that
//     was cut off may for a while still answer as the leader of its stale
//     copy next to the one the others elected, which may take the batch,
//     and the first answer is the one read. So the stream is read at
//     head+1 first: ours there is success, another's a head move, nothing
//     a resend under the same expected sequence.
//   - A read from "the leader" uses the stream's message get, which only
//     its leader answers (jetstream.Stream.GetMsg sends a direct get for a
//     stream that allows them, which any server holding it answers).
//   - An outcome the client cannot tell (timeout, no responders, a leader
//     change, a dropped connection) is resolved by reading the stream back
//     at head+1: the batch's id and bytes there mean it landed, other bytes
//     mean another node's append did. While nothing is there, the same batch
//     may be sent again only guarded by the same expected last sequence, so
//     at most one copy can ever land; past Options.ResolveWithin the append
//     fails with boltstore.ErrAppendUnknown, never claimed done. A refusal
//     naming a last sequence past the head, with nothing yet at head+1, is
//     another node's append the leader proposed and commits within a round
//     trip: the append looks again after 1ms, not 20ms (retryWait), or a
//     neighbour that needs no read before its appends keeps it a step behind.
//   - A stream deleted while a node runs is never made again: the stream's
//     message get, which the cluster's metadata leader answers for a stream
//     it does not know, tells it at once (asked when no server answers a
//     direct get), and CatchUp, Append and Follow fail with
//     boltstore.ErrLogGone.
//   - A writer whose own append the stream acknowledged last skips the read
//     before its next append (the expected last sequence refuses it if
//     another node appended meanwhile), comparing its head with the stream
//     at least every headCheckEvery (100ms): one round trip per sequential
//     append, not two.
//   - Every event read from the stream goes through Tx.Ingest (envelope,
//     seq, chain link) and the message at the local head must hash to the
//     local head: a rewritten, missing or foreign message is reported as a
//     *ledger.IntegrityError naming the seq, and nothing of it is stored.
//   - The servers must run with `sync_interval: always` (NATS's default
//     lazy fsync lost acknowledged writes in Jepsen's 2025 analysis). Open
//     checks every stream peer's setting when given a system-account
//     connection (Options.SystemConn), refusing one that does not sync
//     always; without one it logs a loud warning, since a client cannot see
//     it, and so it does for a minority of peers that do not answer (down:
//     the stream works on without them, and so must a node's start).
//   - A connection through which the stream's leader stays out of reach for
//     Options.LeaderWait (requests it should answer time out, a catch-up's
//     reads among them, counted from when the first was sent; its server
//     knows no leader or answers as a leader no majority follows, or an
//     append is refused for a last sequence the leader cannot serve: a
//     leader cut off from the others counts the appends it proposed and
//     cannot commit, and refuses every append so until it steps down,
//     10-20s later) is moved to another server (nats.Conn.ForceReconnect):
//     a server partitioned from the others stays up and keeps its clients,
//     which would otherwise never reach the leader the others elected. The
//     connection must list every server: a partitioned server tells its
//     clients it is the whole cluster, and only the URLs given stay known.
//   - A catch-up the servers do not serve, with no verdict of theirs (its
//     requests unanswered, the connection dropped while nats.go
//     reconnects, no leader or one without a quorum of current replicas),
//     is not failed after Options.Timeout: it reads again until
//     Options.ResolveWithin, as an append resolves its outcome, so that a
//     call rides out its server killed (nats.go reconnects within a
//     second), stopped (the connection moved after LeaderWait) or a leader
//     election (4-9s). Only then does it fail: nothing was appended. A
//     verdict (a gap, a message that differs, the stream deleted or its
//     settings unsafe) fails it at once.
//   - Nodes take turns under contention: a node whose appends were refused
//     for others' 8 times in a row publishes a request on
//     logbook.<stream>.turn (plain NATS, not stored), and every other node
//     waits up to 50ms before its next catch-up, which then reads the
//     stream (turn.go). Compare-and-append alone favours the node that
//     appended last, which decides its next append without reading. A
//     user denied the subject only loses the turns: Open sends itself a
//     probe there and logs a warning if it does not come back.
//   - A user the servers deny a subject the ledger needs (publishing on
//     the stream's subject, its API, subscribing to the answers) is
//     refused at Open with ErrDenied naming it (rights.go): the servers
//     drop what is denied and say so only asynchronously, so its appends
//     and reads would each wait out ResolveWithin unanswered. Open tries
//     each (the append names another stream, which the stream refuses
//     without storing it) and flushes, after which a denial has arrived.
//     A right to append or read taken away while the node runs fails its
//     next append or catch-up with ErrDenied (boltstore.ErrLogDenied:
//     nothing appended) at its first unanswered request, a Timeout, not as
//     unknown after ResolveWithin (deniedSince).
//   - One Replica serves one Store (its calls are serialised by the store's
//     committer).
//
// The local copy is derived from the stream, which alone makes an append
// durable (acknowledged by a quorum of servers that fsync every write): a
// node opens its file with boltstore.Options.NoSync (no fsync per commit;
// logbook server's default), which loses nothing acknowledged and reports
// a copy a stopped machine may have torn as boltstore.ErrDamaged, to be
// deleted and ingested anew (see boltstore/unsynced.go). A sequential
// append then costs one guarded publish: the servers' ceiling.
//
// A reconnect takes the next server the connection lists: during an
// election longer than LeaderWait (NATS elects in 4-9s; LeaderWait is 10s
// by default) a node may leave a healthy server for the cut-off one, and
// leaves it again a LeaderWait later.
package jetstream

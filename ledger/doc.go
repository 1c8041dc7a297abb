// Package ledger is logbook's log: an append-only sequence of events in one
// bbolt file, each linked to the one before by hash and all of them leaves
// of an RFC 9162 Merkle tree whose completed subtrees are stored as they
// form. It knows nothing of tasks or MCP.
//
// Invariants:
//   - Events are stored once, as the canonical msgpack bytes of their
//     envelope, and hashed from those bytes (never from a re-encoding): the
//     event hash is SHA-256(0x00 ‖ bytes), which is also its Merkle leaf.
//   - Nothing rewrites or deletes an event or a Merkle node.
//   - A commit is durable (fsync'd) before Update returns; a failed or
//     panicking call is rolled back alone.
//   - The file is held (flock) only while a process has work, so many
//     processes share one ledger.
//   - Proof verification (VerifyInclusion, VerifyConsistency) needs no
//     database; Verify names the first bad seq of a damaged file.
//
// The bbolt code lives in store.go, tx.go, lock.go, snapshot.go, trash.go,
// spacerange.go, rawscan.go and mapped.go; the codec, hashing, Merkle math,
// proofs and verification logic are tested without a disk.
package ledger

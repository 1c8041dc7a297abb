// Package ledger is the FORMAT of logbook's log, with no storage engine: the
// event envelope and its canonical msgpack codec, the hashes, the hash
// chain, the RFC 9162 Merkle math over a tree whose completed subtrees are
// read through a NodeSource, proof verification, and the typed integrity
// problems a verifier reports. It knows nothing of tasks, MCP or bbolt, and
// builds for every GOOS; a storage engine lives in a package of its own
// (ledger/boltstore), and an auditor embeds this package without one.
//
// Invariants:
//   - Events are stored once, as the canonical msgpack bytes of their
//     envelope, and hashed from those bytes (never from a re-encoding): the
//     event hash is SHA-256(0x00 ‖ bytes), which is also its Merkle leaf.
//   - Event seq s stores in prev the hash of event s-1 (zeros for seq 1).
//   - Proof verification (VerifyInclusion, VerifyConsistency) and the chain
//     check (ChainChecker, CheckNode) read only what they are given.
package ledger

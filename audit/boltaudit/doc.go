// Package boltaudit is the part of auditing that reads a ledger file of the
// bbolt engine (ledger/boltstore): Verify (chain, tree, a signed checkpoint,
// and the projections refolded from the log into a scratch file and
// compared key by key), Replay, and the roots (Root) and proofs (Prove)
// made from the file. Everything that needs no database — the proof-file
// and checkpoint formats, their checks, the report and its typed problems —
// is in package audit, so a program that only checks proofs does not link
// bbolt.
//
// Invariants:
//   - Only reads: nothing here writes the ledger it verifies. The refold
//     goes to a scratch file of its own, deleted afterwards.
//   - Every read transaction is short (a chunk of events or of projection
//     keys), so agents keep writing while a ledger is verified.
//   - A ledger that does not hold is reported in the Report (OK false, a
//     typed *audit.Problem); a returned error is I/O, or an
//     *audit.OptionError for a request the ledger cannot answer (a seq or
//     size beyond its head, options that exclude each other).
package boltaudit

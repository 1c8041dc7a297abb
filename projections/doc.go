// Package projections folds the ledger's events into the read models the
// tools answer from: tasks, thoughts (per-task chains), audit sessions
// (leaves and frozen roots) and skills.
//
// Invariants:
//   - Projections never append events; they only read records and write
//     their own spaces in the ledger file.
//   - Apply is a pure function of the projection state and the record, so
//     folding the whole log from empty (Rebuild) gives exactly the state
//     that was built live, event by event (Fingerprint compares them).
//   - The state records the last folded seq (Applied). CatchUp folds any
//     events appended since, so a transaction always answers from a state
//     that includes every event before it.
//   - Payloads are decoded through their type's upcaster, so old payload
//     versions are read as the current one without rewriting history.
package projections

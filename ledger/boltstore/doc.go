// Package boltstore keeps a logbook ledger in one bbolt file: the embedded,
// default storage engine, and the only package that imports bbolt.
//
// The store keeps the storage contract every engine keeps: appends happen
// only at the head it read (the file lock makes the head it decided against
// the head it appends to), a commit is durable (fsync'd, or on Linux its
// journal record: journal.go, pending.go) before Update returns, and a
// read transaction of the Store sees every commit returned; events, Merkle nodes and the head are read by seq without
// loading the log. The same file holds projection spaces (Tx.Space), the
// read models folded from the log in the commit that appends their events.
// A file of format 3 (FormatVersion) stores the Merkle levels from baseLevel
// up, all in one key space in the order the nodes are completed, and hashes
// the nodes below from the events; format 2 stores the same levels in a
// bucket each, format 1 every level.
//
// Invariants:
//   - Nothing rewrites or deletes an event or a Merkle node.
//   - A failed or panicking call is rolled back alone; the other calls of
//     its group commit are committed without it.
//   - A process keeps the file (flock) only while no other process waits
//     for it (at most maxHold once one does), so many processes share one
//     ledger.
//   - Records and Space values returned inside a transaction are valid only
//     during it (they point into bbolt's mapping).
package boltstore

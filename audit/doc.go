// Package audit is what an auditor of a logbook ledger runs, importable by
// any Go program and free of any storage engine: the proof-file format and
// its checks (RFC 9162 inclusion and consistency), the C2SP signed
// checkpoint format (note body, Ed25519 signing and verification, key
// files), the report of a verification, and the typed problems every check
// reports. Reading a ledger file (verify, refold-and-compare, making proofs
// and checkpoints from it) is in audit/boltaudit, the one part that needs
// the bbolt engine: a program that only checks proofs and checkpoints does
// not link it, and this package builds for every GOOS.
//
// Invariants:
//   - Every check that fails returns a *Problem whose Kind is stable (the
//     same words verify and check-proof print): a caller switches on it with
//     errors.As, never on a message. A request a caller gets wrong (an
//     option out of range, options that exclude each other) is an
//     *OptionError naming the option; other errors are I/O.
//   - Nothing here trusts what it is given: a proof is checked against a
//     root the caller obtained elsewhere, a checkpoint against a verifier key.
//   - A proof file is canonical: decoding re-encodes and compares byte for
//     byte, so any edit that is not a valid proof fails to decode.
package audit

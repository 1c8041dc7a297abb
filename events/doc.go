// Package events holds the facts logbook records: the payload of each domain
// event type (TaskCreated, TaskUpdated, ThoughtRecorded, SessionStarted,
// SessionFinalized, SkillsLoaded, TokenIssued, TokenRevoked, FindingRecorded,
// LearningRecorded, LearningSuperseded, MemoryWritten, and ToolCalled, the audit
// record of every call), its type name, its
// current payload version and the upcasters that read older versions. The write side
// (commands) builds them; the read side (projections) folds them.
//
// Invariants: a payload version, once written to a ledger, is never changed:
// a new layout is a new version, with an upcaster from the old one. The
// package imports only ledger and the standard library.
package events

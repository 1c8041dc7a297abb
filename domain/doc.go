// Package domain holds logbook's own rules about tasks, thoughts and audit
// sessions, whatever the transport a request came by: the vocabularies
// (statuses, priorities, thought types), the forms of ids and project slugs,
// the bounds of every field, what counts as blank text, and the task state
// machine.
//
// The rules are data (a Command lists its Fields, each a Rule) so that an
// edge can publish them (the MCP layer generates its JSON Schemas from them)
// and functions (Command.ValidateArgs) so that the commands layer enforces
// them for every caller. A call's arguments are parsed once (ParseArgs)
// into a Value tree that keeps what the rules need and encoding/json loses:
// member order, repeated keys, invalid text, number literals, the bytes
// sent.
//
// The RFC 8785 canonical form of arguments (Canonical, their hash) is
// written from their text in two passes without a tree, so that arguments
// past the tree's limits are hashed in memory near their size.
//
// Invariants: beyond the standard library the package imports only
// golang.org/x/text and gowebpki/jcs (RFC 8785's numbers); it holds no
// state but pools of scratch space; a rule set never changes at run time.
package domain

// Package commands runs tool calls: each call validates its request against
// the current projections, decides the events to append, and appends them
// together with exactly one tool.called event in one atomic, durable commit.
//
// Invariants:
//   - A call's arguments are parsed once (domain.ParseArgs): the domain's
//     rules, the typed input of the command and the subjects of its
//     tool.called event are all read from that one tree; its args_sha256
//     is written from the text without one (domain.Canonical).
//   - A rejected call appends only its tool.called event: a handler that
//     fails after emitting events is rolled back and recorded again alone.
//   - Every event is folded into the projections in the commit that appends
//     it (projections.Apply), so reads in the next call see it.
//   - Replies are returned only after their commit is durable.
package commands

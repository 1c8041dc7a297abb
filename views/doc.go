// Package views computes what people look at: a task with its status history
// and decision trail as one timeline, and audit sessions with their leaves
// and roots. The CLI (`logbook show`, `logbook sessions`) and the web console
// render the same values, so they cannot tell different stories.
//
// Views are read in one read transaction of a ledger file and hold plain
// data with JSON tags (the CLI's --json output); rendering is the caller's.
package views

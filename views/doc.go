// Package views computes what people look at: a task with its status history
// and decision trail as one timeline, and audit sessions with their leaves
// and roots. The CLI (`logbook show`, `logbook sessions`) and the web console
// render the same values, so they cannot tell different stories.
//
// Views are read in one read transaction of a ledger file, from projections
// of this binary's version only (projections.Current: none, another
// version's, or the part of a set a cut-short rebuild left are an error,
// never a smaller ledger), and hold plain
// data with JSON tags (the CLI's --json output). Their text form for a
// terminal is here too (Screen: tables cut to the width, colour only on a
// terminal without NO_COLOR, control characters never passed through), with
// the verify report, the token table and the progress bar of long runs; the
// console renders the same values as HTML (server/console).
package views

// Package console is the read-only web console `logbook server` serves at
// "/": a task board by status, each task's status history and decision
// trail, the audit sessions with their roots, the ledger's head and root
// with a live verification, and per-event inclusion proofs to download.
//
// Invariants:
//
//   - Read-only by nature: every page is a GET that reads the ledger in one
//     read transaction; the only POSTs are logging in and out, which touch
//     nothing but a cookie and the process's sessions.
//   - Every request carries a token the server accepts (checked on every
//     request, so a revocation takes effect at once): a bearer header, or
//     the HttpOnly, SameSite=Strict cookie set after a login, which holds
//     a random session id the process maps to the token in memory, never
//     the token. A token given as ?token= is exchanged for the cookie and
//     removed from the address at once.
//   - Pages are html/template renderings (every value escaped) with their
//     CSS and JS embedded; a Content-Security-Policy allows no inline
//     script or style and nothing from another origin.
//   - The views are the CLI's (package views); the verification is
//     `logbook verify`'s (audit/boltaudit); a proof file is `logbook
//     prove`'s, which `logbook check-proof` accepts.
package console

// Package server is logbook's long-running ledger service: one process that
// owns the ledger file and serves the MCP tools to many agents over
// Streamable HTTP, each agent identified by a bearer token.
//
// Invariants:
//
//   - The actor of every event of a call is the agent of the token that
//     authenticated the request; what the client says about itself is only
//     recorded as a claim (commands.Call.Actor, mcp.Identity).
//   - Tokens exist only as token.issued / token.revoked events holding the
//     token's SHA-256, folded into the tokens projection. The secret is
//     printed once, to whoever issued it, and never stored or logged.
//   - Every HTTP request is checked against the projection as it stands, so
//     a revocation takes effect at the next request, without a restart.
//   - While a server holds the file (boltstore.Options.Hold), tokens are
//     issued and revoked through its admin socket, a Unix socket beside the
//     file with the file's own permissions (0600): whoever may write the
//     ledger may manage its tokens, nobody else.
//   - On shutdown the server stops accepting, answers every tool call
//     already received, and only then closes the ledger.
//   - "/" is the read-only web console (server/console), open to tokens
//     without a --tools limit.
//
// This package, server/console and mcp are the only importers of net/http.
package server

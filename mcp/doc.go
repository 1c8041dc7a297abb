// Package mcp is logbook's MCP edge: the only package that imports the MCP
// go-sdk. It publishes the tools of the contract (docs/CONTRACT.md) and the
// knowledge tools with their input and output JSON schemas (generated from
// the domain's rules, which commands enforces), owns the result envelope and the table from errors to ERR_*
// codes, and serves the tools over newline-delimited JSON-RPC on stdio
// (Server.Run), over Streamable HTTP behind bearer tokens
// (Server.HTTPHandler, for logbook server), and as a stdio bridge to such a
// server (Bridge). It implements no tool: every tools/call goes to
// commands.Service.Do.
//
// Invariants:
//
//   - Every tools/call that reaches a handler, valid or not and whether or
//     not the tool exists, goes through exactly one commands.Service.Do, which
//     parses its arguments once and checks them; a call to an unknown tool
//     carries a *commands.InvalidInputError in Call.Invalid, a call outside
//     a token's scope a forbidden error, and a read-only token sets
//     Call.ReadOnly. Calls
//     the SDK rejects before any handler (a malformed tools/call params
//     object, a call before initialize) are answered with JSON-RPC errors and
//     are not recorded.
//   - Every tool result is an envelope, {"ok":true,"data":{...}} or
//     {"ok":false,"error":{"code","message","details"}} with isError, present
//     both as structuredContent and as the one text content item, and its bytes
//     are exactly those that Server.Encode produced for the ledger to hash.
//   - Errors map to codes in one place (errors.go). An unmapped error or a
//     panic becomes ERR_INTERNAL with a generic message; the cause and stack go
//     to the slog logger (stderr), never to the client.
//   - Tool calls in flight run concurrently and share group commits; a client
//     that needs an order waits for each reply.
//   - Every request gets exactly one reply, under the exact bytes of its id
//     (ids.go): ids that are equal as float64s never share a reply.
//   - Stdout carries only protocol messages, one per line. A malformed line is
//     answered with a JSON-RPC error and the session goes on; a line longer
//     than Options.MaxMessageBytes is not kept in memory.
//   - Call.Args are the bytes the client sent ("{}" when absent or null).
//     The edge does not read them: commands accepts only an object of known
//     fields, each once, of the right types, in range, valid UTF-8, at most
//     64 levels deep — what the published input schema says, and the
//     domain's rules beyond it. Defaults in the schemas are documentation:
//     the edge does not fill them in, commands does.
//   - Over HTTP every request carries a bearer token that HTTPOptions.Authenticate
//     accepts (else 401); the token's identity is Call.Actor of its calls, a
//     tool outside its scope is neither listed nor run (ERR_FORBIDDEN), and
//     clientInfo.name is passed on only as Call.Client, a claim.
package mcp

package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
)

// Identity is who a bearer token proves an HTTP caller to be.
type Identity struct {
	Agent    string   // the actor of every event of the caller's calls
	Token    string   // the hex SHA-256 of the token, recorded in tool.called
	ReadOnly bool     // mutating tools answer ERR_READ_ONLY
	Tools    []string // the tools the caller may list and call; empty: all
}

func (id *Identity) allows(tool string) bool {
	return len(id.Tools) == 0 || slices.Contains(id.Tools, tool)
}

// ErrUnauthenticated is what HTTPOptions.Authenticate returns for a token
// that is unknown or revoked: the request is answered 401.
var ErrUnauthenticated = errors.New("unknown or revoked token")

// HTTPOptions configure HTTPHandler.
type HTTPOptions struct {
	// Authenticate maps a bearer token to its identity. It is asked on every
	// HTTP request, so a revoked token stops working at once. Required.
	Authenticate func(ctx context.Context, token string) (*Identity, error)
	// MaxBodyBytes bounds one request body (413 beyond); default
	// DefaultMaxMessageBytes, the stdio line limit.
	MaxBodyBytes int64
	// SessionTimeout closes sessions idle that long; default 30 minutes.
	SessionTimeout time.Duration
	// MaxSessionsPerToken bounds the sessions (protocol revisions before
	// 2026-07-28) one token keeps open: opening one more closes the one of
	// that token used least recently and not serving a request; default
	// DefaultMaxSessionsPerToken.
	MaxSessionsPerToken int
	// BodyTimeout bounds how long a request body may take to arrive once
	// its headers have (408 beyond); default 30 seconds.
	BodyTimeout time.Duration
	// MaxBodiesBytes bounds the request bodies held in memory at once, all
	// requests together: a request whose body would pass it waits for
	// room, at most BodyTimeout (then 503); default 16 × MaxBodyBytes.
	MaxBodiesBytes int64
	// MaxRequestsPerToken bounds the requests one token has in flight at
	// once (calls, their bodies arriving): one more is
	// answered 429 with Retry-After, so that no token holder can take
	// every connection the server may keep and hold the other clients out
	// (503). 0: no bound.
	MaxRequestsPerToken int
}

// HTTPHandler serves the tools over MCP Streamable HTTP (the go-sdk's
// handler): protocol revisions up to 2025-11-25 with sessions, and the
// sessionless 2026-07-28 one, each request carrying its own credentials.
// Every request must carry `Authorization: Bearer TOKEN` that Authenticate
// accepts (else 401 with WWW-Authenticate: Bearer); its identity is the actor
// of the calls it carries, and only the tools in its scope are listed or
// callable. Browser cross-origin requests are refused (403), as are
// requests reaching a loopback address under a foreign Host name (DNS
// rebinding: ForeignHost).
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = int64(s.maxLine)
	}
	// Bodies are counted in an int64: 16 of them (MaxBodiesBytes'
	// default), each a byte over (the byte that shows one too long), must
	// add up within it.
	opts.MaxBodyBytes = min(opts.MaxBodyBytes, math.MaxInt64/16-1)
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 30 * time.Second
	}
	if opts.MaxSessionsPerToken <= 0 {
		opts.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	if opts.MaxBodiesBytes <= 0 {
		opts.MaxBodiesBytes = 16 * opts.MaxBodyBytes
	}
	// A body is held whole (readBody, then the SDK's parsing) until its
	// request is answered. Without a bound on all of them together, any
	// token could send many bodies of MaxBodyBytes less a byte, each
	// finished only at its deadline, and hold that much memory per
	// connection until the process was killed for it.
	bodies := semaphore.NewWeighted(opts.MaxBodiesBytes)
	handler := func(stateless bool) http.Handler {
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
			Stateless: stateless,
			// ForeignHost below, on every request, instead.
			DisableLocalhostProtection: true,
			// Tools send no notifications: one JSON body per request is
			// simpler and cheaper than an event stream.
			JSONResponse:        true,
			Logger:              s.log,
			SessionTimeout:      opts.SessionTimeout,
			MaxRequestBodyBytes: opts.MaxBodyBytes,
		})
	}
	// The SDK serves the sessionless revision (2026-07-28, SEP-2575) only
	// from a stateless handler, and the older ones fully (clientInfo from
	// initialize, session bound to its token) only from a stateful one. A
	// request of the new revision names it in the MCP-Protocol-Version
	// header (the SDK requires it there), so the header picks the handler.
	stateful, stateless := handler(false), handler(true)
	sessions := newSessionCap(s.sdk, opts.MaxSessionsPerToken)
	ids := newIDKeeper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > opts.MaxBodyBytes {
			// Refused on its headers (as the SDK words it once read): a
			// body announced too long is not waited for, nor given room.
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", opts.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		// (A bound below one body of unknown length would refuse every
		// such body after its wait: it takes the whole bound.)
		n := min(bodyReserve(r, opts.MaxBodyBytes), opts.MaxBodiesBytes)
		if n > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), opts.BodyTimeout)
			err := bodies.Acquire(ctx, n)
			cancel()
			if err != nil {
				w.Header().Set("Connection", "close")
				w.Header().Set("Retry-After", "1")
				http.Error(w, "the server holds as many request bodies as it may; try again shortly", http.StatusServiceUnavailable)
				return
			}
			defer bodies.Release(n)
		}
		body, ok := readBody(w, r, opts)
		if !ok || !stillValid(w, r, opts.Authenticate, s.log) || !oneValue(w, body) || !idWithin(w, body) {
			return
		}
		alone, ok := batchWithin(w, body)
		if !ok {
			return
		}
		if !sameVersion(w, r, body, sessions) {
			return
		}
		sessionless := r.Header.Get("MCP-Protocol-Version") >= sessionlessRevision || namesRevision(body)
		if sessionless && !sessionNamed(w, r, sessions) {
			return
		}
		ew, er, eb := ids.exact(w, r, body)
		cw := &codedWriter{ResponseWriter: ew, body: eb}
		defer cw.finish()
		if sessionless {
			stateless.ServeHTTP(cw, er)
			return
		}
		serve := func(w http.ResponseWriter, r *http.Request) { sessions.serve(stateful, w, r) }
		if alone && r.Header.Get("MCP-Protocol-Version") < unbatchedRevision {
			serveBatch(w, r, body, serve, ids)
			return
		}
		serve(cw, er)
		if cw.batch {
			serveBatch(w, r, body, serve, ids)
		}
	})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		id, err := opts.Authenticate(ctx, token)
		switch {
		case errors.Is(err, ErrUnauthenticated) || (err == nil && id == nil):
			return nil, auth.ErrInvalidToken
		case err != nil:
			s.log.Error("token check failed", "err", err)
			return nil, errTokenCheck
		}
		// UserID binds a session to the token that opened it: the SDK
		// refuses the session to any other token.
		return &auth.TokenInfo{UserID: id.Token, Extra: map[string]any{identityKey: id}}, nil
	}
	inFlight := &perToken{max: opts.MaxRequestsPerToken, n: map[string]int{}}
	authed := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Del("WWW-Authenticate")
			if r.Method != http.MethodPost && r.Method != http.MethodDelete {
				// The server sends nothing of its own (no notifications, no
				// requests to the client): it offers no event stream (GET),
				// as the transport lets it say with 405. The SDK opened one
				// that never carried a message, yet held a connection, a
				// goroutine and one of the token's requests in flight for as
				// long as the client kept it.
				w.Header().Set("Allow", "POST, DELETE")
				http.Error(w, "this server sends no messages of its own and offers no event stream: POST requests, DELETE a session", http.StatusMethodNotAllowed)
				return
			}
			token := auth.TokenInfoFromContext(r.Context()).UserID
			if !inFlight.begin(token) {
				w.Header().Set("Retry-After", "1")
				http.Error(w, fmt.Sprintf("this token has %d requests in flight, as many as one token may; try again once one is answered", inFlight.max), http.StatusTooManyRequests)
				return
			}
			defer inFlight.end(token)
			h.ServeHTTP(w, r)
		}))
	// The SDK adds WWW-Authenticate only with OAuth metadata to point at;
	// a refusal carries it here, and a request that passes drops it above.
	challenge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="logbook"`)
		authed.ServeHTTP(w, r)
	})
	protected := http.NewCrossOriginProtection().Handler(challenge)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w = &noStoreWriter{ResponseWriter: w}
		if ForeignHost(r) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", domain.Clip(r.Host)), http.StatusForbidden)
			return
		}
		protected.ServeHTTP(w, r)
	})
}

// noStoreWriter makes its answer's Cache-Control no-store, as every other
// answer of the server's is (keep nothing of it: it may hold a ledger's
// contents, read with a token), whatever the SDK set: it sets no-cache
// (store, but revalidate) on its answers. An event stream (a sessionless
// subscriptions/listen, the one the SDK still opens) is also no-transform,
// as the SDK marks it: a proxy must not buffer or compress it.
type noStoreWriter struct {
	http.ResponseWriter
	set bool
}

func (w *noStoreWriter) noStore() {
	if w.set {
		return
	}
	w.set = true
	h := w.Header()
	if strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		h.Set("Cache-Control", "no-store, no-transform")
	} else {
		h.Set("Cache-Control", "no-store")
	}
}

func (w *noStoreWriter) WriteHeader(code int) {
	if code >= 200 { // (an informational answer precedes the answer)
		w.noStore()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *noStoreWriter) Write(p []byte) (int, error) {
	w.noStore()
	return w.ResponseWriter.Write(p)
}

func (w *noStoreWriter) Flush() {
	w.noStore()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *noStoreWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// perToken counts each token's requests in flight, at most max (0: no
// bound).
type perToken struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

// begin counts one more request of token; false (not counted) if it has
// max already.
func (p *perToken) begin(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.max > 0 && p.n[token] >= p.max {
		return false
	}
	p.n[token]++
	return true
}

func (p *perToken) end(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[token]--; p.n[token] <= 0 {
		delete(p.n, token)
	}
}

// ForeignHost reports whether r reached a loopback address under a Host
// that does not certainly name a loopback address: a page of a site whose
// name was rebound to 127.0.0.1 (DNS rebinding), which must not be served
// as if it were the server's own origin. The names taken are localhost (in
// any case: host names are case-insensitive, RFC 9110 §4.2.3; and
// fully qualified, "localhost."), and the loopback addresses (127.0.0.0/8,
// [::1]), each with a port or not. A request without a Host (HTTP/1.0) is
// taken: every browser sends one, so it is no page's request. (The SDK's
// own check, which this replaces, took "localhost" only as written and
// refused a request without a Host.)
func ForeignHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && isLoopback(local.String()) && r.Host != "" && !isLoopback(r.Host)
}

// isLoopback reports whether addr (a host, or host:port) is localhost or a
// loopback IP address.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// stillValid checks r's token again once its body is read: the token was
// checked when its headers came, and a body may take up to BodyTimeout to
// follow — a token revoked meanwhile wrote after its revocation (attack
// review). Refused: 401, as at the headers.
func stillValid(w http.ResponseWriter, r *http.Request, authenticate func(context.Context, string) (*Identity, error), log *slog.Logger) bool {
	// As the SDK reads it (auth.RequireBearerToken).
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "Bearer") {
		return true // (the SDK's check took it: nothing else to say)
	}
	id, err := authenticate(r.Context(), fields[1])
	switch {
	case errors.Is(err, ErrUnauthenticated) || (err == nil && id == nil):
		w.Header().Set("WWW-Authenticate", `Bearer realm="logbook", error="invalid_token"`)
		http.Error(w, "invalid token: revoked while its request was read", http.StatusUnauthorized)
		return false
	case err != nil:
		log.Error("token check failed", "err", err)
		http.Error(w, "the token could not be checked", http.StatusInternalServerError)
		return false
	}
	return true
}

// readBody reads r's body whole within opts.BodyTimeout, puts it back for
// the SDK and returns it: the server's own timeouts bound only the
// headers, and a client sending its body a byte at a time would otherwise
// hold the connection, and a drain, as long as it liked. It answers 408
// (false) if the body is late; one past MaxBodyBytes is left to the SDK's
// 413, so at most one byte more than that is read.
func readBody(w http.ResponseWriter, r *http.Request, opts HTTPOptions) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(opts.BodyTimeout)); err != nil {
		return nil, true // not a connection of net/http's server: nothing to bound
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, opts.MaxBodyBytes+1))
	if err != nil {
		// The deadline stays: the server's discarding what is left of the
		// body, before it answers, must not wait on the client either.
		w.Header().Set("Connection", "close")
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			http.Error(w, "the request body did not arrive within "+opts.BodyTimeout.String(), http.StatusRequestTimeout)
		} else {
			http.Error(w, "the request body could not be read", http.StatusBadRequest)
		}
		return nil, false
	}
	if int64(len(body)) <= opts.MaxBodyBytes {
		// Read whole: the deadline bounds the body alone, not the call.
		_ = rc.SetReadDeadline(time.Time{})
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// codedWriter gives the SDK's JSON-RPC errors without a code (0) their
// code, as coded does on stdio: over HTTP the SDK writes its answers
// itself (a second initialize, initialize's params unreadable or missing,
// a call before initialize), and a client reading code 0 cannot tell its
// request refused from the server failing. It bounds what the SDK's errors
// quote of the request, as bounded does on stdio, and so its plain-text
// refusals. Only an answer of JSON that holds an error is decoded; the
// others pass as written.
//
// It also answers as JSON-RPC what the SDK refuses in plain text (400)
// before any session or handler sees it (checkRequest): a request (with
// an id) of a method the server does not have gets error -32601, one not
// valid for its method (an id on a notification, params missing) -32600,
// as on stdio, as the JSON-RPC answer to a request (200, application/json:
// a client reads an answer of another status as the transport failing); a
// notification of a method the server does not have is accepted (202,
// no body), as the Streamable HTTP transport answers every notification it
// takes, and ignored, as on stdio; so is one of a method that wants an
// id (tools/call, initialize) sent without it, which JSON-RPC makes a
// notification, not served. (Revision 2026-07-28 has the SDK answer
// an unknown method itself: 404 with -32601, as SEP-2575 requires.) A batch
// (revision 2025-03-26 only) the SDK refuses whole for one of its messages
// is left to serveBatch (batch).
type codedWriter struct {
	http.ResponseWriter
	body  []byte // the request's body
	held  bool   // the SDK's 400 in plain text, not yet written
	batch bool   // body is a batch the SDK refused for one of its messages: nothing written
}

func (w *codedWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") && w.body != nil {
		w.held = true // decided on its text, the next write
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *codedWriter) Write(p []byte) (int, error) {
	if w.held {
		w.held = false
		if w.refused(p) {
			return len(p), nil
		}
		w.ResponseWriter.WriteHeader(http.StatusBadRequest)
	}
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") && len(p) > sdkRoom {
		clipped := strings.TrimSuffix(domain.ClipAt(strings.ToValidUTF8(string(p), "\uFFFD"), sdkRoom), "\n")
		if _, err := io.WriteString(w.ResponseWriter, clipped+"\n"); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if !bytes.Contains(p, anError) || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		return w.ResponseWriter.Write(p)
	}
	if _, err := w.ResponseWriter.Write(recode(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// refused answers, in place of the SDK's 400 saying text, the JSON-RPC
// refusal of the request's one message it describes; false if text is no
// such refusal.
func (w *codedWriter) refused(text []byte) bool {
	var code int64
	switch {
	case bytes.HasPrefix(text, notHandled):
		code = jsonrpc.CodeMethodNotFound
	case bytes.HasPrefix(text, invalidRequest), bytes.HasPrefix(text, malformed):
		code = jsonrpc.CodeInvalidRequest
	default:
		return false
	}
	h := w.Header()
	if isBatch(w.body) {
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		w.batch = true
		return true
	}
	if bytes.HasPrefix(text, malformed) {
		// Not a JSON-RPC message: answered as stdio answers such a line.
		id, message := notAMessage(w.body)
		h.Del("X-Content-Type-Options")
		h.Set("Content-Type", "application/json")
		w.ResponseWriter.WriteHeader(http.StatusBadRequest)
		_, _ = w.ResponseWriter.Write(errorResponse(id, jsonrpc.CodeInvalidRequest, message))
		return true
	}
	msg, err := jsonrpc.DecodeMessage(w.body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return false
	}
	h.Del("X-Content-Type-Options")
	if !req.IsCall() {
		// A notification, of a method the server does not have or of one
		// that wants an id (tools/call sent without one): JSON-RPC answers
		// no notification, and stdio ignores it unserved; the transport
		// takes every notification with 202.
		h.Del("Content-Type")
		w.ResponseWriter.WriteHeader(http.StatusAccepted)
		return true
	}
	message := domain.ClipAt(strings.TrimSpace(strings.ToValidUTF8(string(text), "\uFFFD")), sdkRoom)
	if code == jsonrpc.CodeMethodNotFound {
		message = fmt.Sprintf("method not found: %q", domain.Clip(req.Method)) // stdio's words
	}
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		return false
	}
	h.Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(http.StatusOK)
	_, _ = w.ResponseWriter.Write(out)
	return true
}

// sameVersion answers 400 with JSON-RPC error -32600 (by the request's id
// if body is one request, else null) a request in a session whose
// MCP-Protocol-Version header names another revision than the one the
// session negotiated, serving none of it; false if it did. The transport
// (2025-06-18, 2025-11-25) has the client send the negotiated revision on
// every request after initialize, and a server answer 400 to one invalid;
// the SDK took any revision it knows, and served the request by the
// session's. So is one of the sessionless revision naming a session (the
// header alone chose the sessionless handler, which ignored the session).
// A request without the header is taken (the transport has a server assume
// 2025-03-26 then, for clients older than the header). A session that is
// gone (deleted, timed out, being ended) is left to be answered 404,
// whatever the header says: the client, told so, opens another (by the
// SDK's stateful handler, or for the sessionless handler by sessionNamed,
// which also refuses another token's session, 403).
func sameVersion(w http.ResponseWriter, r *http.Request, body []byte, sessions *sessionCap) bool {
	sid, got := r.Header.Get("Mcp-Session-Id"), r.Header.Get("MCP-Protocol-Version")
	ti := auth.TokenInfoFromContext(r.Context())
	if sid == "" || got == "" || ti == nil {
		return true
	}
	want := sessions.version(ti.UserID, sid)
	if want == "" || got == want || !sessions.open(sid) {
		return true
	}
	id := callID(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	hint := ""
	if got >= sessionlessRevision {
		hint = ", or the request without Mcp-Session-Id" // its revision has no sessions
	}
	_, _ = w.Write(errorResponse(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
		"invalid request: the MCP-Protocol-Version header says %q, but this session negotiated %q at initialize: send that one%s; nothing of the request was served",
		domain.Clip(got), want, hint)))
	return false
}

// sessionNamed refuses a request bound for the sessionless handler whose
// Mcp-Session-Id names no session of its token's that is open, as the
// stateful handler refuses any request naming it (sessionCap.lookup): 404
// "session not found" for a session never opened or gone (deleted, timed
// out, ended by the cap), the answer a request of any other revision gets
// (sameVersion), upon which a client opens another; 403 "session user
// mismatch" for another token's; nothing of the request served (false).
// The sessionless handler ignores the header: it ran such a request, a
// tools/call recorded as the caller's, whatever session it named. A
// request naming its token's own open session is left to sameVersion
// (400 for another revision than the session's); one naming none passes.
func sessionNamed(w http.ResponseWriter, r *http.Request, sessions *sessionCap) bool {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		return true
	}
	token := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		token = ti.UserID
	}
	switch sessions.lookup(token, sid) {
	case http.StatusNotFound:
		http.Error(w, sessionNotFound, http.StatusNotFound)
		return false
	case http.StatusForbidden:
		http.Error(w, sessionMismatch, http.StatusForbidden)
		return false
	}
	return true
}

// MaxBatch is how many messages a JSON-RPC batch (revision 2025-03-26)
// may hold. The SDK holds several kilobytes per message of a batch while
// serving it (a batch of 90,000 pings, 3.6 MB, took the server from 47 MB
// to 410 MB resident, and 12.7 s), so a body bound that counts bytes
// does not bound a batch's memory; no client batches anywhere near this
// many.
const MaxBatch = 128

// idWithin answers 400 with a JSON-RPC error a body of one message that
// is no message (messageRefusal): a request whose id no request may carry
// (null, not a string or a number, too long, given twice: -32600, id
// null), a member given twice, a method no string, neither a request nor
// an answer (-32600 by its id), a member of params given twice (-32602),
// as stdio answers each; false if it did. The SDK took an id null for none
// (a plain-text 400 for a method that wants one, a notification served for
// one that wants none), refused an id of another type in plain text,
// served the last of two ids or of two methods, answered a method null
// -32601, and took an id without a method for an answer (202, never
// answered).
func idWithin(w http.ResponseWriter, body []byte) bool {
	id, code, refusal := messageRefusal(body)
	if refusal == "" {
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(errorResponse(id, code, refusal))
	return false
}

// oneValue refuses a body that is not one JSON value with a JSON-RPC parse
// error (-32700, id null, 400), as stdio answers a line that is not JSON.
// The SDK's decoder read the first value of such a body and served it,
// whatever followed (`{...}garbage`, `{...} {...}`: the second message
// neither served nor refused), and refused one not JSON at all in plain
// text.
func oneValue(w http.ResponseWriter, body []byte) bool {
	if len(body) == 0 || json.Valid(body) {
		return true // (no body: the SDK answers it)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(errorResponse(nil, jsonrpc.CodeParseError, parseErrorMessage))
	return false
}

// batchWithin answers 400 with JSON-RPC error -32600 (id null: it answers
// no one message), serving none of it, a batch of more than MaxBatch
// messages, or one in which two requests share an id (whose answers the
// client could not tell apart: the SDK ran both and dropped the second's
// answer unsaid; ids are compared as written, as on stdio: 1 and 1.0 are
// two); ok false if it did. alone: the batch holds a request whose id no
// request may carry (messageRefusal), which the SDK would take for a
// notification and leave unanswered, or one whose id the SDK would not
// keep (sdkKeeps: two such ids may be one to it), so it is served a
// message at a time (serveBatch), the first answered with its refusal, the
// second under its id, where batches are served at all (revisions before
// unbatchedRevision). Whether each message is one is left to the SDK.
func batchWithin(w http.ResponseWriter, body []byte) (alone, ok bool) {
	if !isBatch(body) {
		return false, true
	}
	var msgs []json.RawMessage
	if json.Unmarshal(body, &msgs) != nil {
		return false, true // not a batch after all: the SDK refuses it
	}
	refuse := func(message string) (bool, bool) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(errorResponse(nil, jsonrpc.CodeInvalidRequest, message))
		return false, false
	}
	if len(msgs) > MaxBatch {
		return refuse(fmt.Sprintf("a batch may hold at most %d messages; this one holds %d", MaxBatch, len(msgs)))
	}
	if len(msgs) == 0 {
		return refuse(invalidRequestMessage + ": the batch is empty") // as JSON-RPC 2.0 answers one
	}
	ids := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		id := callID(m)
		if rid, _, refusal := messageRefusal(m); refusal != "" {
			// Answered by its own error, under its id where it has one:
			// that id is one answer's too.
			alone, id = true, rid
		}
		if id == nil {
			continue
		}
		if ids[string(id)] {
			return refuse(fmt.Sprintf("invalid request: id %s is used by more than one request of this batch (each needs its own, to be told its answer); none of it was served",
				domain.Clip(string(id))))
		}
		ids[string(id)] = true
		alone = alone || !sdkKeeps(id)
	}
	return alone, true
}

// isBatch reports whether body is a JSON array (a JSON-RPC batch).
func isBatch(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// serveBatch answers a batch that the SDK refused whole, before serving
// any of it, because one of its messages was of a method the server does
// not have or not valid for its method (checkRequest), or that holds a
// request whose id no request may carry (batchWithin), as JSON-RPC 2.0
// answers a batch: each message is served by serve alone, in order, as if
// it had been sent alone (so a request refused gets its -32601 or -32600
// by its id, one whose id is refused -32600 by id null, and the others
// run), and the answers to its requests are
// returned together in one array (200, application/json); a notification
// gets no answer (one of a method that wants an id, sent without one,
// too: 202 alone), and a batch that holds only notifications is
// answered 202. A session its initialize
// opens is the one the messages after it are served in, and is named by
// the answer. A message answered otherwise
// than as JSON-RPC (the session ended meanwhile: 404) has its answer
// passed on as the batch's if no request got a JSON-RPC answer; else a
// request so answered is given -32603 with the answer's text.
func serveBatch(w http.ResponseWriter, r *http.Request, body []byte, serve func(http.ResponseWriter, *http.Request), ids *idKeeper) {
	var msgs []json.RawMessage
	if json.Unmarshal(body, &msgs) != nil {
		http.Error(w, "the batch could not be read", http.StatusBadRequest) // the SDK read it
		return
	}
	var answers []json.RawMessage
	var plain *batchAnswer // the first answer not JSON-RPC
	served := 0            // answers that are JSON-RPC
	sid := r.Header.Get("Mcp-Session-Id")
	for _, m := range msgs {
		if id, code, refusal := messageRefusal(m); refusal != "" {
			answers = append(answers, errorResponse(id, code, refusal))
			served++
			continue
		}
		one := r.Clone(r.Context())
		one.Body, one.ContentLength = io.NopCloser(bytes.NewReader(m)), int64(len(m))
		if sid != "" {
			one.Header.Set("Mcp-Session-Id", sid)
		}
		a := &batchAnswer{header: http.Header{}}
		ew, one, em := ids.exact(a, one, m)
		cw := &codedWriter{ResponseWriter: ew, body: em}
		serve(cw, one)
		cw.finish()
		if opened := a.header.Get("Mcp-Session-Id"); opened != "" && sid == "" {
			// The batch's initialize opened a session: the messages after
			// it are in it, as the SDK serves a batch, and the answer names it.
			sid = opened
			w.Header().Set("Mcp-Session-Id", sid)
		}
		msg, err := jsonrpc.DecodeMessage(em) // (the message served: an id the SDK reads)
		req, ok := msg.(*jsonrpc.Request)
		call := err == nil && ok && req.IsCall()
		if a.status == http.StatusAccepted || (!call && a.status == http.StatusBadRequest && !isResponse(a.body.Bytes())) {
			continue // a notification, taken or (invalid: 400 alone) not: no answer
		}
		if strings.HasPrefix(a.header.Get("Content-Type"), "application/json") && isResponse(a.body.Bytes()) {
			answers = append(answers, json.RawMessage(bytes.TrimSpace(a.body.Bytes())))
			served++
			continue
		}
		if plain == nil {
			plain = a
		}
		if call {
			text := domain.ClipAt(strings.TrimSpace(strings.ToValidUTF8(a.body.String(), "\uFFFD")), sdkRoom)
			if text == "" {
				text = http.StatusText(cmp.Or(a.status, http.StatusOK))
			}
			answers = append(answers, errorResponse(callID(m), jsonrpc.CodeInternalError, text))
		}
	}
	switch {
	case plain != nil && served == 0:
		plain.copyTo(w)
		return
	case len(answers) == 0:
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out, err := json.Marshal(answers)
	if err != nil {
		http.Error(w, "the batch's answers could not be encoded", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// isResponse reports whether data is one JSON-RPC response, whatever its
// id (the client's, which the SDK may not read: idKeeper).
func isResponse(data []byte) bool {
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	b := bytes.TrimSpace(data)
	return len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &r) == nil && r.JSONRPC == "2.0" && (r.Result != nil) != (r.Error != nil)
}

// batchAnswer holds the answer to one message of a batch (serveBatch).
type batchAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *batchAnswer) Header() http.Header { return a.header }

func (a *batchAnswer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}

func (a *batchAnswer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(p)
}

// copyTo writes the answer held to w.
func (a *batchAnswer) copyTo(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(cmp.Or(a.status, http.StatusOK))
	_, _ = w.Write(a.body.Bytes())
}

// finish writes the SDK's 400 if it is still held (written without text).
func (w *codedWriter) finish() {
	if w.held {
		w.held = false
		w.ResponseWriter.WriteHeader(http.StatusBadRequest)
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *codedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *codedWriter) Flush() {
	w.finish()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// How the SDK's plain-text refusals of a message begin (checkRequest:
// jsonrpc2.ErrNotHandled, jsonrpc2.ErrInvalidRequest).
var (
	notHandled     = []byte("JSON RPC not handled: ")
	invalidRequest = []byte("invalid request: ")
	malformed      = []byte("malformed payload: ") // (readBatch: no JSON-RPC message)
)

// notAMessage is how stdio refuses body (one JSON value, not a batch),
// which is no JSON-RPC message (conn.decode): -32600 by its id where one
// can be read, else null.
func notAMessage(body []byte) (json.RawMessage, string) {
	b := bytes.TrimSpace(body)
	if nestedDeeper(b, maxNesting) {
		var sc idScanner
		sc.feed(b)
		return sc.result(), invalidRequestMessage + ": nested deeper than " + strconv.Itoa(maxNesting) + " levels"
	}
	if len(b) > 0 && b[0] == '{' {
		return requestID(b), invalidRequestMessage
	}
	return nil, invalidRequestMessage
}

// anError is how the SDK writes a response's error.
var anError = []byte(`"error":{`)

// recode returns the JSON-RPC answer data (a response, or a batch of them)
// with each error of code 0 given its code and each error bounded; data as
// it is if that changes nothing.
func recode(data []byte) []byte {
	if b := bytes.TrimSpace(data); len(b) > 0 && b[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(b, &batch) != nil {
			return data
		}
		changed := false
		for i, m := range batch {
			if r, ok := recodeOne(m); ok {
				batch[i], changed = r, true
			}
		}
		if !changed {
			return data
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return data
		}
		return out
	}
	if r, ok := recodeOne(data); ok {
		return r
	}
	return data
}

// recodeOne gives one JSON-RPC response's error of code 0 its code and
// bounds it; false if that changes nothing.
func recodeOne(data []byte) ([]byte, bool) {
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *jsonrpc.Error  `json:"error"`
	}
	if json.Unmarshal(data, &resp) != nil || resp.Result != nil || resp.Error == nil {
		return nil, false
	}
	e := resp.Error
	if e.Code == 0 {
		e = coded(errors.New(resp.Error.Message)).(*jsonrpc.Error)
		e.Data = resp.Error.Data
	}
	if e = bounded(e); e == resp.Error {
		return nil, false
	}
	out, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{resp.JSONRPC, resp.ID, e})
	if err != nil {
		return nil, false
	}
	return out, true
}

// bodyReserve is the room r's body (announced within max) may take in
// memory: its Content-Length, or for a body of unknown length all it may
// be (max, and the byte more that shows it too long); 0 for none.
func bodyReserve(r *http.Request, max int64) int64 {
	switch {
	case r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0:
		return 0
	case r.ContentLength > 0:
		return r.ContentLength
	}
	return max + 1
}

// namesRevision reports whether body is one request whose params' _meta
// names its protocol revision, as only the sessionless revision's do
// (SEP-2575). Such a request goes to the stateless handler whatever its
// MCP-Protocol-Version header says, for the SDK's answer there: served if
// the header names the same revision, else 400 with -32020, the header
// missing or not matching. Without the header, or with an older one, the
// stateful handler answered -32022 "protocol version 2025-03-26 (or the
// header's) is not supported by this server", beside a list that holds it,
// and logged a warning for each such request.
func namesRevision(body []byte) bool {
	if !bytes.Contains(body, []byte("protocolVersion")) || isBatch(body) {
		return false // (the usual request: no decoding)
	}
	// Maps, not structs: their keys are matched exactly, as the SDK
	// matches them (encoding/json matches a struct's fields in any case).
	var msg, params, meta map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || msg["id"] == nil ||
		json.Unmarshal(msg["params"], &params) != nil || json.Unmarshal(params["_meta"], &meta) != nil {
		return false
	}
	_, ok := meta[sdk.MetaKeyProtocolVersion]
	return ok
}

// sessionlessRevision is the first protocol revision without sessions.
const sessionlessRevision = "2026-07-28"

// unbatchedRevision is the first protocol revision without batches: the
// SDK refuses a batch whose request names it or a later one in its
// MCP-Protocol-Version header (none: 2025-03-26).
const unbatchedRevision = "2025-06-18"

// errTokenCheck answers 500 without naming the cause (logged instead).
var errTokenCheck = errors.New("the token could not be checked")

const identityKey = "logbook.identity"

// identity is the caller of req as its bearer token proved it; nil over
// stdio.
func identity(req sdk.Request) *Identity {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	id, _ := extra.TokenInfo.Extra[identityKey].(*Identity)
	return id
}

// authorize binds call to the caller's identity, if it has one: the actor
// becomes the token's agent, and a tool outside its scope (ERR_FORBIDDEN,
// before anything else is checked) or a mutating tool on a read-only token
// (ERR_READ_ONLY, once the arguments are valid) is refused, still audited;
// server_health tells a read-only token's caller mode READONLY, and a
// scoped token's caller how many tools its scope holds.
func (s *Server) authorize(req *sdk.CallToolRequest, call *commands.Call) {
	id := identity(req)
	if id == nil {
		return
	}
	call.Actor, call.Token = id.Agent, id.Token
	switch {
	case !id.allows(call.Name):
		call.Invalid = &forbiddenError{call.Name}
	case id.ReadOnly:
		call.ReadOnly = true
	}
	if len(id.Tools) > 0 { // server_health counts the tools listed to it
		n := 0
		for _, t := range s.tools {
			if id.allows(t.name) {
				n++
			}
		}
		call.Encode = func(result any, err error) (string, []byte) { return s.encode(result, err, n) }
	}
}

// listTools answers tools/list with only the tools in the caller's scope.
func listTools(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	res, err := next(ctx, method, req)
	id := identity(req)
	list, ok := res.(*sdk.ListToolsResult)
	if err != nil || id == nil || !ok || len(id.Tools) == 0 {
		return res, err
	}
	scoped := *list
	scoped.Tools = slices.DeleteFunc(slices.Clone(list.Tools), func(t *sdk.Tool) bool { return !id.allows(t.Name) })
	return &scoped, nil
}

// forbiddenError is a call outside the caller's token scope: ERR_FORBIDDEN.
type forbiddenError struct{ tool string }

func (e *forbiddenError) Error() string {
	return "tool " + e.tool + " is outside this token's scope"
}

// quietHandler passes the SDK's log records on one level down: its Info
// records (a session connected, initialized) come once per HTTP session,
// i.e. per request in the sessionless protocol, and are debug detail here.
// So are the records of a client's mistakes (clientMistakes), which the
// SDK logs at ERROR: no failure of the server's.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, quieter(l))
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level = quieter(r.Level); clientMistakes[r.Message] {
		if r.Level = slog.LevelDebug; !h.Handler.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

// clientMistakes are the SDK's ERROR records of what a client sent out of
// turn, which it checks before any middleware (lifecycle answers the
// others by the session's state): a call before initialize (stdio), one
// of the methods the sessionless revision removed (initialize, ping) sent
// at that revision (any token holder over HTTP), notifications/initialized
// sent twice. Each was an ERROR record per request, that an operator's
// alert would fire on and anyone could fill the log with.
var clientMistakes = map[string]bool{
	"method invalid during initialization": true,
	"method removed in the new protocol":   true,
	"duplicate initialized notification":   true,
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}

func quieter(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

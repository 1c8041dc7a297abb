package mcp

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxSessionsPerToken is how many sessions one token keeps open
// unless HTTPOptions say otherwise: far more than the agents sharing a
// token use at once, few enough that no token holder can fill the
// server's memory with them (one is about 26 KB).
const DefaultMaxSessionsPerToken = 256

// sweepEvery is how many sessions are opened between two sweeps of the
// sessions closed otherwise (idle, deleted) out of every token's list.
const sweepEvery = 1024

// evicting, if not nil, is called when sessions chosen to end are about to
// be closed (tests).
var evicting func()

// sessionCap keeps each token's sessions (the revisions before 2026-07-28:
// the SDK's stateful handler keeps a session until it has been idle for
// SessionTimeout) to max: a session opened beyond it closes the token's
// least recently used one that serves no request, as an idle timeout would.
type sessionCap struct {
	max int
	srv *sdk.Server

	mu sync.Mutex
	// byToken lists each token's sessions, least recently used first.
	byToken map[string][]*capped
	byID    map[string]*capped
	opens   int // sessions opened, for sweepEvery
}

type capped struct {
	id, token string
	version   string // the protocol revision negotiated (initialize's answer); "" if not known
	busy      int    // requests being served in it
	n         int    // opens when it was recorded
	closing   bool   // chosen to end: no request may begin in it
}

func newSessionCap(srv *sdk.Server, max int) *sessionCap {
	return &sessionCap{max: max, srv: srv, byToken: map[string][]*capped{}, byID: map[string]*capped{}}
}

// serve runs a request of the stateful handler h through the cap: a
// request in a session marks it used (and busy while it runs); one that
// opened a session may close the token's least recently used one.
func (c *sessionCap) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil {
		h.ServeHTTP(w, r)
		return
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		// A call (POST) keeps its session open until answered (DELETE
		// closes it).
		busy := r.Method == http.MethodPost
		if !c.begin(ti.UserID, sid, busy) {
			// Chosen to end, not yet closed: answered as it will be once
			// closed, rather than run in a session closing under it.
			http.Error(w, sessionNotFound, http.StatusNotFound)
			return
		}
		if busy {
			defer c.end(sid)
		}
		h.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		h.ServeHTTP(w, r)
		return
	}
	// A session opened is recorded, and one beyond the cap ended, before
	// the answer naming it goes out; so is the revision it negotiated.
	sw := &sessionWriter{ResponseWriter: w, c: c, token: ti.UserID}
	h.ServeHTTP(sw, r)
	sw.record()
}

// sessionWriter records the session its answer names (opened), once,
// before the answer is written, and the protocol revision the answer (to
// initialize) says was negotiated in it.
type sessionWriter struct {
	http.ResponseWriter
	c              *sessionCap
	token, sid     string // sid: the session opened, once recorded
	recorded, read bool   // read: the answer's body was looked at for its revision
}

func (w *sessionWriter) record() {
	if !w.recorded {
		w.recorded = true
		if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
			w.sid = sid
			w.c.opened(w.token, sid)
		}
	}
}

func (w *sessionWriter) WriteHeader(code int) {
	w.record()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	w.record()
	if w.sid != "" && !w.read {
		// The answer (JSON: one body, written whole) goes out after.
		w.read = true
		if v := negotiatedIn(b); v != "" {
			w.c.negotiated(w.sid, v)
		}
	}
	return w.ResponseWriter.Write(b)
}

// negotiatedIn is the protocolVersion of the initialize result in body (a
// JSON-RPC answer, or a batch of them); "" if none.
func negotiatedIn(body []byte) string {
	type answer struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	var one answer
	if json.Unmarshal(body, &one) == nil {
		return one.Result.ProtocolVersion
	}
	var batch []answer
	_ = json.Unmarshal(body, &batch)
	for _, a := range batch {
		if v := a.Result.ProtocolVersion; v != "" {
			return v
		}
	}
	return ""
}

// negotiated records the protocol revision negotiated in session sid.
func (c *sessionCap) negotiated(sid, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.byID[sid]; s != nil {
		s.version = version
	}
}

// version is the protocol revision negotiated in token's session sid; ""
// if not known (not token's, closed by the cap or being closed by it, or
// no revision was read). A session closed otherwise (deleted, timed out)
// may still be known until the next sweep: see open.
func (c *sessionCap) version(token, sid string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.byID[sid]; s != nil && s.token == token && !s.closing {
		return s.version
	}
	return ""
}

// Session lookup failures, answered as the SDK's stateful handler answers
// them (its lookupSession), in plain text.
const (
	sessionNotFound = "session not found"     // 404
	sessionMismatch = "session user mismatch" // 403
)

// lookup is the status the SDK's stateful handler answers a request of
// token naming session sid with, if it does not serve it (its
// lookupSession): 404 if no session sid is open (never opened, deleted,
// timed out, ended or being ended by the cap), 403 if it is another
// token's; 0 if it is token's own and open. Every session the stateful
// handler opens is recorded (serve) before its id is answered, so one not
// recorded is none the client was told of.
func (c *sessionCap) lookup(token, sid string) int {
	c.mu.Lock()
	s := c.byID[sid]
	known, owner := s != nil && !s.closing, ""
	if s != nil {
		owner = s.token
	}
	c.mu.Unlock()
	switch {
	case !known || !c.open(sid):
		return http.StatusNotFound
	case owner != token:
		return http.StatusForbidden
	}
	return 0
}

// open reports whether session sid is open in the SDK's handler (it lists
// every session, so this is for the rare request that needs it).
func (c *sessionCap) open(sid string) bool {
	for ss := range c.srv.Sessions() {
		if ss.ID() == sid {
			return true
		}
	}
	return false
}

func (w *sessionWriter) Flush() {
	w.record()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// begin marks session sid, if token's, as used now, and busy if told; it
// is false if the session is being closed.
func (c *sessionCap) begin(token, sid string, busy bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.byID[sid]
	if s == nil || s.token != token {
		return true // not this token's (the SDK refuses it), or closed
	}
	if s.closing {
		return false
	}
	if busy {
		s.busy++
	}
	list := c.byToken[token]
	i := slices.Index(list, s)
	c.byToken[token] = append(slices.Delete(list, i, i+1), s)
	return true
}

func (c *sessionCap) end(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.byID[sid]; s != nil && s.busy > 0 {
		s.busy--
	}
}

// opened records token's new session sid, and closes the token's least
// recently used idle sessions beyond max.
func (c *sessionCap) opened(token, sid string) {
	c.mu.Lock()
	if c.byID[sid] != nil {
		c.mu.Unlock()
		return
	}
	c.opens++
	s := &capped{id: sid, token: token, n: c.opens}
	c.byID[sid] = s
	c.byToken[token] = append(c.byToken[token], s)
	over, sweep := len(c.byToken[token]) > c.max, c.opens%sweepEvery == 0
	// The sessions recorded so far are all in the SDK's list below, unless
	// closed; the ones recorded meanwhile may not be yet.
	seen := c.opens
	c.mu.Unlock()
	if !over && !sweep {
		return
	}

	// Forget the sessions already closed (timed out, deleted, never
	// initialized): this token's, or with a sweep every token's.
	open := map[string]*sdk.ServerSession{}
	for ss := range c.srv.Sessions() {
		if id := ss.ID(); id != "" {
			open[id] = ss
		}
	}
	c.mu.Lock()
	for t, list := range c.byToken {
		if t == token || sweep {
			c.forgetClosed(t, list, open, seen)
		}
	}
	// Then, over the cap, close the token's least recently used.
	// Each stays known, as closing, until closed: a request that begins
	// in it meanwhile is refused, not served by a session closing under it
	// (closing waits for the requests in flight).
	var closing []*capped
	list := c.byToken[token]
	for i := 0; len(list) > c.max && i < len(list); {
		if s := list[i]; s.busy == 0 && s.n < seen {
			s.closing = true
			closing = append(closing, s)
			list = slices.Delete(list, i, i+1)
			continue
		}
		i++
	}
	c.set(token, list)
	c.mu.Unlock()
	if len(closing) > 0 && evicting != nil {
		evicting()
	}
	// Closing removes the session from the SDK's handler: a request
	// naming it is answered 404, and the client opens another.
	for _, s := range closing {
		open[s.id].Close()
	}
	if len(closing) > 0 {
		c.mu.Lock()
		for _, s := range closing {
			delete(c.byID, s.id)
		}
		c.mu.Unlock()
	}
}

// forgetClosed drops from token's list the sessions recorded by the time
// open was listed (seen) that are not in it.
func (c *sessionCap) forgetClosed(token string, list []*capped, open map[string]*sdk.ServerSession, seen int) {
	c.set(token, slices.DeleteFunc(list, func(s *capped) bool {
		if s.n <= seen && open[s.id] == nil {
			delete(c.byID, s.id)
			return true
		}
		return false
	}))
}

func (c *sessionCap) set(token string, list []*capped) {
	if len(list) == 0 {
		delete(c.byToken, token)
	} else {
		c.byToken[token] = list
	}
}

package server

import (
	"bytes"
	"container/list"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/server/console"
)

// The HTTP edge: what every connection and request goes through before
// any route sees it.

// DefaultMaxConns is how many connections a server keeps open at once
// unless Options say otherwise: as many as the process may open file
// descriptors, less fdReserve for the ledger file, the admin socket,
// snapshots and the NATS connections (at least minMaxConns; 1024 where the
// limit is unknown). The cap is there so that a flood of connections is
// refused clearly before it takes the descriptors the server needs for
// itself; set lower (--max-conns), it also gives every client a lower
// ceiling to fill.
func DefaultMaxConns() int {
	n := fdLimit()
	switch {
	case n == 0:
		return 1024
	case n > 1<<20:
		n = 1 << 20
	case n < minMaxConns+fdReserve:
		return minMaxConns
	}
	return int(n - fdReserve)
}

const (
	fdReserve   = 128
	minMaxConns = 64
)

// fdLimit is how many file descriptors the process may hold (its soft
// RLIMIT_NOFILE, which the Go runtime raises to the hard one at start);
// 0 if unknown.
func fdLimit() uint64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return uint64(rl.Cur) // int64 on some BSDs
}

// readHeaderTimeout bounds how long a request's headers may take to arrive.
const readHeaderTimeout = 10 * time.Second

// writeChunk is how much of an answer one write deadline covers.
const writeChunk = 64 << 10

// newHTTPServer is the http.Server Run serves h with: headers bounded in
// size and time, every body in time (boundBody), every write in time
// (boundWrites), loopback Host names only on a loopback address
// (loopbackHost), and at most opts.MaxConns connections at once (conns).
// opts' defaults are set.
func newHTTPServer(h http.Handler, opts Options, log *slog.Logger) *http.Server {
	cs := &conns{max: int64(opts.MaxConns)}
	return &http.Server{
		Handler:           cs.h2Streams(baseHeaders(boundWrites(boundBody(cs.refuseOver(loopbackHost(unambiguous(cs.loginBodyWaits(h)))), opts.BodyTimeout), opts.WriteTimeout, opts.BodyTimeout))),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readHeaderTimeout + opts.BodyTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnContext:       cs.opened,
		ConnState:         cs.state,
	}
}

// conns counts the server's open connections. Each costs a file
// descriptor and a goroutine for as long as it is kept (IdleTimeout, or a
// stream); without a bound any client, with or without a token, could
// open them until the process had none left for its ledger file or its
// admin socket.
//
// One opened beyond max makes room by closing the connection that has
// waited longest without a request being served on it (idle between
// requests, or not yet through its first request's headers): otherwise
// anyone, without a token, could keep the server full with connections
// sending a request to /healthz every two minutes, or a header a byte at a
// time, and hold every other client out. Only when every connection is
// serving a request (which a request refused for its token is not for
// long) is one more answered 503 (Retry-After, Connection: close) whatever
// it asks, and closed: a clear refusal where a listener that stopped
// accepting would leave clients waiting in the kernel's backlog, and none
// could tell a full server from a dead one.
//
// net/http calls a connection active only once its request's headers are
// read: one closed as waiting may already hold a request, and its handler
// would commit the call on a connection that can no longer answer (a
// client's write done, and told nothing). Such a request is not served
// (refuseOver): the client sees the connection closed under a request the
// server never handled.
type conns struct {
	max  int64
	open atomic.Int64

	mu      sync.Mutex
	waiting list.List                  // of net.Conn serving no request, longest waiting first
	at      map[net.Conn]*list.Element // in waiting
	closed  map[net.Conn]bool          // by closeWaiting, until net/http sees it closed
	// HTTP/2: the requests each connection is serving (h2Streams), and of
	// them the login forms still being read (loginBodyWaits).
	streams, logins map[net.Conn]int
	// live: the connections net/http has not yet seen closed (StateNew
	// to StateClosed or StateHijacked).
	live map[net.Conn]bool
}

type (
	overKey struct{}
	connKey struct{}
)

// opened counts a connection as it is accepted (http.Server.ConnContext),
// closing the longest waiting one if it is one too many.
func (c *conns) opened(ctx context.Context, conn net.Conn) context.Context {
	ctx = context.WithValue(ctx, connKey{}, conn)
	if c.open.Add(1) > c.max && !c.closeWaiting() {
		return context.WithValue(ctx, overKey{}, true)
	}
	return ctx
}

// closeWaiting closes the connection that has waited longest without a
// request being served on it; false if there is none. (Counted until it
// is seen closed: a burst of connections closes as many waiting ones.)
func (c *conns) closeWaiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.waiting.Front()
	if e == nil {
		return false
	}
	conn := e.Value.(net.Conn)
	c.forgetLocked(conn)
	if c.closed == nil {
		c.closed = make(map[net.Conn]bool)
	}
	c.closed[conn] = true
	// Closed before closedUnder can see it closed: a request it refuses
	// must find no connection to be answered on (net/http would write an
	// empty 200).
	if tc, ok := conn.(*tls.Conn); ok {
		// At once, without a close_notify that a peer not reading could
		// hold: this runs in the server's accept loop.
		conn = tc.NetConn()
	}
	_ = conn.Close()
	return true
}

// state forgets a connection once closed or hijacked, and lifts the write
// deadline of one gone idle: the last answer is out, and an error answer
// net/http writes itself to its next request (400, 431) must not fail on
// a deadline set for the last one (http.Server.ConnState). A new or idle
// connection waits (closeWaiting); one serving a request does not.
func (c *conns) state(conn net.Conn, s http.ConnState) {
	if s == http.StateIdle {
		_ = conn.SetWriteDeadline(time.Time{})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(conn)
	switch s {
	case http.StateNew, http.StateIdle:
		if s == http.StateNew {
			if c.live == nil {
				c.live = make(map[net.Conn]bool)
			}
			c.live[conn] = true
		}
		if c.closed[conn] {
			// Closed while its last answer was being finished (the
			// client may have read it before net/http called the
			// connection idle): it waits for nothing, and closing it
			// again would make no room.
			return
		}
		c.pushLocked(conn)
	case http.StateClosed, http.StateHijacked:
		delete(c.closed, conn)
		delete(c.live, conn)
		delete(c.streams, conn)
		delete(c.logins, conn)
		c.open.Add(-1)
	}
}

// closedUnder reports whether closeWaiting closed the connection r came
// on. A connection goes active (state) before its request is served, so
// one not closed by then is no longer waiting and will not be.
func (c *conns) closedUnder(r *http.Request) bool {
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed[conn]
}

func (c *conns) forgetLocked(conn net.Conn) {
	if e, ok := c.at[conn]; ok {
		c.waiting.Remove(e)
		delete(c.at, conn)
	}
}

// maxLoginBody bounds the console's login form (console.maxLoginForm:
// larger ones it refuses on their headers).
const maxLoginBody = 4 << 10

// loginBodyWaits reads the body of a POST /login — the one request read
// whole before anything says who sends it: the console's login form —
// with its connection counted as waiting, as one still sending its
// headers is: closeWaiting may close it to make room. A client without a
// token sending that form a byte a second otherwise held a place only
// served requests hold, and sixty of them kept every token out of a
// server of 50 connections (attack review). Over HTTP/2 a connection
// carries other requests: it waits only while every request it serves is
// such a form (h2Streams counts them), and closing it ends only those.
// The handler then reads the body as it came, or its error. What is
// refused on its headers (another host, an encoded body: it runs inside
// those checks; a form from another site, too large: left to the console)
// is refused before any of the body is waited for.
func (c *conns) loginBodyWaits(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _ := r.Context().Value(connKey{}).(net.Conn)
		if r.Method != http.MethodPost || r.URL.Path != "/login" || conn == nil || r.ContentLength > maxLoginBody || !console.SameOrigin(r) {
			h.ServeHTTP(w, r)
			return
		}
		h2 := r.ProtoMajor == 2
		c.mu.Lock()
		if h2 {
			c.count(&c.logins, conn, 1)
			c.waitsIfLoginsLocked(conn)
		} else {
			c.pushLocked(conn)
		}
		c.mu.Unlock()
		body, err := io.ReadAll(io.LimitReader(r.Body, maxLoginBody+1))
		c.mu.Lock()
		closed := c.closed[conn]
		c.forgetLocked(conn)
		if h2 {
			c.count(&c.logins, conn, -1)
			c.waitsIfLoginsLocked(conn) // (its other forms still wait)
		}
		c.mu.Unlock()
		if closed {
			return // (closed to make room: no answer can reach it)
		}
		var rest io.Reader = bytes.NewReader(body)
		if err != nil {
			rest = io.MultiReader(rest, errReader{err})
		}
		r.Body = io.NopCloser(rest)
		h.ServeHTTP(w, r)
	})
}

// h2Streams counts the requests each HTTP/2 connection is serving: one
// serving any but login forms still being read is not waiting
// (loginBodyWaits). net/http calls an HTTP/2 connection active from its
// first open stream to its last.
func (c *conns) h2Streams(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _ := r.Context().Value(connKey{}).(net.Conn)
		if r.ProtoMajor != 2 || conn == nil {
			h.ServeHTTP(w, r)
			return
		}
		c.mu.Lock()
		c.count(&c.streams, conn, 1)
		c.forgetLocked(conn)
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.count(&c.streams, conn, -1)
			c.waitsIfLoginsLocked(conn)
			c.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// count adds n to conn's count in *m, forgetting it at 0 (or below: a
// request that outlived its connection, forgotten when it closed).
func (c *conns) count(m *map[net.Conn]int, conn net.Conn, n int) {
	if *m == nil {
		*m = make(map[net.Conn]int)
	}
	if (*m)[conn] += n; (*m)[conn] <= 0 {
		delete(*m, conn)
	}
}

// waitsIfLoginsLocked counts an HTTP/2 connection as waiting if every
// request it serves is a login form still being read — and the connection
// is not gone (live): a handler may outlive its connection, and a
// connection counted waiting once gone would stay so. (Not a request's
// context: one reset by its client (RST_STREAM) ends its own, on a
// connection still open whose other forms still wait.)
func (c *conns) waitsIfLoginsLocked(conn net.Conn) {
	if n := c.logins[conn]; n > 0 && n == c.streams[conn] && c.at[conn] == nil && !c.closed[conn] && c.live[conn] {
		c.pushLocked(conn)
	}
}

// pushLocked counts conn as waiting, the latest to.
func (c *conns) pushLocked(conn net.Conn) {
	if c.at == nil {
		c.at = make(map[net.Conn]*list.Element)
	}
	c.at[conn] = c.waiting.PushBack(conn)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// refuseOver answers 503 to a request on a connection beyond max, and
// does not serve one on a connection closed as waiting (conns).
func (c *conns) refuseOver(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.closedUnder(r) {
			return
		}
		if over, _ := r.Context().Value(overKey{}).(bool); over {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many connections to this server; try again shortly", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// boundWrites gives every write of an answer, whatever its route, timeout
// to reach the client: each writeChunk bytes written, and each flush, must
// be taken within it. The server's own WriteTimeout would bound the whole
// answer instead, cutting short the event streams (the console's
// verification, a sessionless subscriptions/listen) and long calls that
// are meant to last; without any bound a client that asked for an answer
// and never read it held its connection, its goroutine and (for a call)
// the drain for ever once the socket's buffers were full.
//
// No deadline is left set while the handler writes nothing: over HTTP/2
// (TLS) a stream's write deadline is a timer that resets the stream when it
// fires, whether anything is being written or not, so a deadline left from
// the last write (or the request's start) cut an idle event stream and a
// call running longer than timeout.
func boundWrites(h http.Handler, timeout, bodyTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if rc.SetWriteDeadline(time.Time{}) != nil {
			h.ServeHTTP(w, r) // not a connection of net/http's server
			return
		}
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, timeout: timeout}, r)
		// What is still buffered goes out once the handler returns, and
		// only once net/http has discarded what the handler left of the
		// body, which may take until the body's own deadline.
		_ = rc.SetWriteDeadline(time.Now().Add(bodyTimeout + timeout))
	})
}

// deadlineWriter sets its connection's write deadline before each chunk
// it writes and each flush, and lifts it once they are done.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	defer w.rc.SetWriteDeadline(time.Time{})
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), writeChunk)]
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
		m, err := w.ResponseWriter.Write(chunk)
		n += m
		if err != nil {
			return n, err
		}
		p = p[m:]
	}
	return n, nil
}

func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	_ = w.rc.Flush()
	_ = w.rc.SetWriteDeadline(time.Time{})
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// baseHeaders gives every answer, whatever answers it, headers that let a
// browser render nothing from it and keep nothing of it: answers the
// console does not write reach a browser too — net/http's own (the
// redirect of a path that is not clean, "/static/../x", 307, before any
// route is chosen), the refusals below, /healthz. The console sets its
// own policy over this one for its pages.
func baseHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// loopbackHost refuses (403), on every route, a request that reached a
// loopback address under a Host that names no loopback address
// (mcp.ForeignHost): a site whose name was rebound to 127.0.0.1 (DNS
// rebinding) would otherwise be served the console, its login form and
// /healthz as its own origin. It is the rule the MCP handler applies to
// /mcp, here for every route. A server reached on another address (beyond
// loopback, its name chosen by whoever runs it) takes any Host.
func loopbackHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mcp.ForeignHost(r) {
			w.Header().Set("Connection", "close")
			http.Error(w, "this server answers only to a loopback host name (localhost, 127.0.0.1, [::1])", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// onceHeaders are the headers the server decides by — who calls (a
// token), what the body is, which session, revision, method and tool, and
// where a browser's request comes from — each of which net/http reads the
// first of.
var onceHeaders = []string{"Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name",
	"Origin", "Sec-Fetch-Site"}

// unambiguous refuses, on every route and before any token is checked, a
// request the server could read otherwise than its sender (or a proxy in
// front) meant: one of onceHeaders given more than once (400; a token
// after another was ignored, so a proxy that checked the last one let the
// first through), or a body in a Content-Encoding (gzip: 415, with
// Accept-Encoding: identity, as RFC 9110 §15.5.16 says), which the server
// does not decode and used to read as sent: compressed JSON was a parse
// error, and a body marked gzip but sent plain was served. Nothing of
// such a request is read; its connection is closed.
func unambiguous(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range onceHeaders {
			if n := len(r.Header.Values(name)); n > 1 {
				w.Header().Set("Connection", "close")
				http.Error(w, fmt.Sprintf("the request carries %d %s headers: send one; nothing of it was served", n, name), http.StatusBadRequest)
				return
			}
		}
		for _, coding := range r.Header.Values("Content-Encoding") {
			for c := range strings.SplitSeq(coding, ",") {
				if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
					w.Header().Set("Connection", "close")
					w.Header().Set("Accept-Encoding", "identity")
					http.Error(w, fmt.Sprintf("the request body is in Content-Encoding %q, which this server does not decode: send it unencoded; nothing of it was served", domain.Clip(c)), http.StatusUnsupportedMediaType)
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// boundBody gives the body of every request, whatever its route and
// before any token is checked, timeout to arrive once its headers have.
// The server's own timeouts bound only the headers; a body is read by the
// handler, or else discarded by net/http before it answers, with no bound:
// a client announcing a body it never sends would hold the connection and
// its goroutine forever (the MCP handler bounds its own reading too, to
// answer 408). The deadline is lifted once the body has been read whole,
// so that it cannot cut a long answer (an event stream) short; a body
// still arriving at the deadline fails to read and its connection is
// closed once answered.
//
// A chunked body closes its connection once answered (RFC 9112 §6.1): net/http
// drops a Content-Length sent beside Transfer-Encoding and keeps the
// connection, so that a proxy in front reading the Content-Length instead
// would see the rest of the body as a request of its own (smuggling).
//
// An answer begun before the body was read to its end (a request refused
// on its headers) does not wait for the rest of it (unreadBodyWriter).
//
// A request without a body has its read deadline lifted: the server's
// ReadTimeout bounds only what net/http reads before any handler runs (the
// body of "OPTIONS *", which it answers itself).
func boundBody(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body != nil && r.Body != http.NoBody {
			if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
				body := &boundedBody{ReadCloser: r.Body, rc: rc}
				r.Body = body
				if r.ProtoMajor == 1 {
					w = &unreadBodyWriter{ResponseWriter: w, body: body}
				}
			}
		} else {
			_ = rc.SetReadDeadline(time.Time{})
		}
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// unreadBodyWriter stops the reading of its request's body once an answer
// begins before the body was read to its end (a request refused on its
// headers alone: no token, a foreign Host, a route that takes no body):
// what of the body has already arrived is discarded as before, keeping the
// connection, but the rest is not waited for; the connection is closed
// instead. Before, net/http read what was left of the body before it
// wrote the answer's headers, so that a client announcing a body it did
// not send got its 401 only once the body's deadline had passed. (HTTP/1
// only: an HTTP/2 stream's unread body is reset with the stream.)
type unreadBodyWriter struct {
	http.ResponseWriter
	body    *boundedBody
	started bool
}

func (w *unreadBodyWriter) begin() {
	if !w.started {
		w.started = true
		if !w.body.done.Load() {
			_ = w.body.rc.SetReadDeadline(time.Now())
		}
	}
}

func (w *unreadBodyWriter) WriteHeader(code int) {
	if code >= 200 {
		w.begin()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *unreadBodyWriter) Write(p []byte) (int, error) {
	w.begin()
	return w.ResponseWriter.Write(p)
}

func (w *unreadBodyWriter) Flush() {
	w.begin()
	_ = w.body.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *unreadBodyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// boundedBody lifts its request's read deadline once read to its end.
type boundedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done atomic.Bool // read to its end
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done.Swap(true) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

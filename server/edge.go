package server

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// The HTTP edge: what every connection and request goes through before
// any route sees it.

// loopbackHost refuses (403), on every route, a request that reached a
// loopback address under a Host that names no loopback address: a site
// whose name was rebound to 127.0.0.1 (DNS rebinding) would otherwise be
// served the console, its login form and /healthz as its own origin. It
// is the rule the go-sdk applies to /mcp (localhost, 127.0.0.0/8, ::1),
// here for every route. A server reached on another address (beyond
// loopback, its name chosen by whoever runs it) takes any Host.
func loopbackHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil &&
			isLoopback(local.String()) && !isLoopback(r.Host) {
			w.Header().Set("Connection", "close")
			http.Error(w, "this server answers only to a loopback host name (localhost, 127.0.0.1, [::1])", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isLoopback reports whether addr (a host, or host:port) is localhost or a
// loopback IP address.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
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
func boundBody(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
				r.Body = &boundedBody{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// boundedBody lifts its request's read deadline once read to its end.
type boundedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

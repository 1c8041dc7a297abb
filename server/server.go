package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/ledger/jetstream"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/server/console"
)

// DefaultListen is the address a server binds unless told otherwise:
// loopback only.
const DefaultListen = "127.0.0.1:7460"

// Options configure Run.
type Options struct {
	Store *boltstore.Store // the ledger, opened with Hold
	MCP   *mcp.Server      // the tools, running on Store
	// Listen is the TCP address (default DefaultListen). Listener, if set,
	// is used instead (tests pass one on port 0).
	Listen   string
	Listener net.Listener
	// TLSCert and TLSKey, both set, serve HTTPS directly: a key not
	// matching the certificate, or a certificate expired or not yet valid,
	// is refused (loadCertificate).
	TLSCert, TLSKey string
	certificate     *tls.Certificate // loaded by Serve before the ledger is opened
	// AdminSocket is the path of the Unix socket for token management
	// ("" for none); see AdminSocketPath.
	AdminSocket string
	// MaxBodyBytes bounds a request body; default mcp.DefaultMaxMessageBytes.
	MaxBodyBytes int64
	// BodyTimeout bounds how long a request body, on any route, may take to
	// arrive once its headers have; default 30 s.
	BodyTimeout time.Duration
	// WriteTimeout bounds how long each 64 KiB of an answer, and each
	// flush of a stream, may take to reach the client; default 30 s.
	WriteTimeout time.Duration
	// MaxConns bounds the connections open at once: one more is answered
	// 503 and closed; default DefaultMaxConns(). One token may have half
	// as many requests in flight on /mcp (429 beyond).
	MaxConns int
	// DrainTimeout bounds how long shutdown waits for calls in flight;
	// default 30 s.
	DrainTimeout time.Duration
	Logger       *slog.Logger
	// Ready, if set, is called once the server accepts connections.
	Ready func(addr net.Addr)
	// Replica, if set, is the replicated log Store copies
	// (boltstore.Options.Replica): tokens and projections follow what the
	// other nodes append, also while this node takes no calls.
	Replica *jetstream.Replica
}

// Run serves until ctx is cancelled, then drains: it stops accepting,
// answers every call already received (for at most DrainTimeout) and
// returns nil. It does not close Store.
func Run(ctx context.Context, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 30 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns()
	}
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cmp.Or(opts.Listen, DefaultListen)); err != nil {
			return err
		}
	}
	defer ln.Close()
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() && opts.TLSCert == "" {
		log.Warn("serving beyond loopback without TLS: bearer tokens cross the network in clear; use --tls-cert or a TLS proxy", "listen", ln.Addr().String())
	}
	if opts.Replica != nil {
		defer follow(ctx, opts.Replica, opts.Store, log)()
	}

	var streams inflight
	mux := http.NewServeMux()
	// One token may hold at most half the connections with requests in
	// flight: the other half stay for the other clients.
	mcpHandler := opts.MCP.HTTPHandler(mcp.HTTPOptions{Authenticate: authenticate(opts.Store),
		MaxBodyBytes: opts.MaxBodyBytes, BodyTimeout: opts.BodyTimeout, MaxRequestsPerToken: max(1, opts.MaxConns/2)})
	mux.Handle("/mcp", mcpHandler)
	// The read-only console at "/": its verification stream is ended on
	// shutdown, its pages are short reads.
	web := console.New(console.Options{Store: opts.Store, Authenticate: consoleReader(opts.Store), Logger: log})
	mux.Handle("/", web)
	mux.Handle("/ledger/verify", streams.track(web))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if streams.stopping() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"status":"draining"}`)
			return
		}
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	srv := newHTTPServer(mux, opts, log)

	var admin *adminServer
	if opts.AdminSocket != "" {
		var err error
		if admin, err = listenAdmin(opts.AdminSocket, opts.Store, log); err != nil {
			return err
		}
		defer admin.close()
	}

	if (opts.TLSCert != "" || opts.TLSKey != "") && opts.certificate == nil {
		var err error
		if opts.certificate, err = loadCertificate(opts.TLSCert, opts.TLSKey, time.Now(), log); err != nil {
			return err
		}
	}
	if opts.certificate != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*opts.certificate}, MinVersion: tls.VersionTLS12}
	}
	served := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()
	if opts.Ready != nil {
		opts.Ready(ln.Addr())
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}

	log.Info("draining: answering the calls in flight")
	// Event streams (the console's verification) may idle; ending them lets Shutdown
	// return as soon as every call taken has been answered.
	streams.stop()
	sctx, cancel := context.WithTimeout(context.Background(), opts.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("drain timed out with calls in flight", "timeout", opts.DrainTimeout)
		srv.Close()
	}
	<-served
	return nil
}

// authenticate checks a bearer token against the tokens projection.
func authenticate(l *boltstore.Store) func(context.Context, string) (*mcp.Identity, error) {
	return func(_ context.Context, token string) (*mcp.Identity, error) {
		if !strings.HasPrefix(token, TokenPrefix) {
			return nil, mcp.ErrUnauthenticated
		}
		sum := sha256.Sum256([]byte(token))
		var t projections.Token
		var ok bool
		err := l.View(func(tx *boltstore.Tx) error {
			var err error
			t, ok, err = projections.LookupToken(tx, sum)
			return err
		})
		switch {
		case err != nil:
			return nil, err
		case !ok || t.RevokedSeq != 0:
			return nil, mcp.ErrUnauthenticated
		}
		return &mcp.Identity{Agent: t.Agent, Token: t.SHA256, ReadOnly: t.ReadOnly, Tools: t.Tools}, nil
	}
}

// consoleReader accepts, for the web console, the tokens that may read the
// whole ledger: any valid one without a --tools limit (read-only ones
// included). A token limited to some tools was meant for less than every
// task, thought and session the console shows.
func consoleReader(l *boltstore.Store) func(context.Context, string) (bool, error) {
	auth := authenticate(l)
	return func(ctx context.Context, token string) (bool, error) {
		id, err := auth(ctx, token)
		switch {
		case errors.Is(err, mcp.ErrUnauthenticated):
			return false, nil
		case err != nil:
			return false, err
		}
		return len(id.Tools) == 0, nil
	}
}

// inflight tracks the event streams (GET, the console's verification)
// being served, so that shutdown can end them: they carry no calls, and
// would otherwise hold Shutdown, which waits for every request to finish,
// until its timeout. (/mcp offers none: GET is 405.)
type inflight struct {
	mu      sync.Mutex
	done    bool
	streams map[*http.Request]context.CancelFunc
}

func (f *inflight) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		r = r.WithContext(ctx)
		f.mu.Lock()
		if f.done {
			f.mu.Unlock()
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		if f.streams == nil {
			f.streams = make(map[*http.Request]context.CancelFunc)
		}
		f.streams[r] = cancel
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.streams, r)
			f.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

func (f *inflight) stopping() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

// stop ends every event stream and refuses new ones.
func (f *inflight) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = true
	for _, cancel := range f.streams {
		cancel()
	}
}

// ErrHeld: the ledger file is held by another process (a running server
// whose admin socket did not answer).
var ErrHeld = errors.New("the ledger file is held by another process")

// follow keeps l caught up with rep, folding what it ingests, until the
// returned stop is called.
func follow(ctx context.Context, rep *jetstream.Replica, l *boltstore.Store, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		err := rep.Follow(ctx, l, time.Second, func(tx *boltstore.Tx) error {
			_, err := projections.CatchUp(tx, 0)
			return err
		})
		if ctx.Err() == nil {
			log.Error("following the stream stopped", "err", err)
		}
	}()
	return func() { cancel(); <-followed }
}

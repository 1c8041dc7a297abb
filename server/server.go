package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/projections"
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
	// TLSCert and TLSKey, both set, serve HTTPS directly.
	TLSCert, TLSKey string
	// AdminSocket is the path of the Unix socket for token management
	// ("" for none); see AdminSocketPath.
	AdminSocket string
	// MaxBodyBytes bounds a request body; default mcp.DefaultMaxMessageBytes.
	MaxBodyBytes int64
	// DrainTimeout bounds how long shutdown waits for calls in flight;
	// default 30 s.
	DrainTimeout time.Duration
	Logger       *slog.Logger
	// Ready, if set, is called once the server accepts connections.
	Ready func(addr net.Addr)
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
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cmp.Or(opts.Listen, DefaultListen)); err != nil {
			return err
		}
	}
	defer ln.Close()

	var calls inflight
	mux := http.NewServeMux()
	mcpHandler := opts.MCP.HTTPHandler(mcp.HTTPOptions{Authenticate: authenticate(opts.Store), MaxBodyBytes: opts.MaxBodyBytes})
	mux.Handle("/mcp", calls.track(mcpHandler))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if calls.stopping() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"status":"draining"}`)
			return
		}
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}

	var admin *adminServer
	if opts.AdminSocket != "" {
		var err error
		if admin, err = listenAdmin(opts.AdminSocket, opts.Store, log); err != nil {
			return err
		}
		defer admin.close()
	}

	served := make(chan error, 1)
	go func() {
		if opts.TLSCert != "" || opts.TLSKey != "" {
			served <- srv.ServeTLS(ln, opts.TLSCert, opts.TLSKey)
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
	calls.stop()
	shutdown := make(chan error, 1)
	sctx, cancel := context.WithTimeout(context.Background(), opts.DrainTimeout)
	defer cancel()
	go func() { shutdown <- srv.Shutdown(sctx) }()
	// Shutdown alone would also wait for idle event streams (GET /mcp);
	// the calls are what must be answered.
	if !calls.wait(sctx) {
		log.Warn("drain timed out with calls in flight", "timeout", opts.DrainTimeout)
	}
	cancel()
	<-shutdown
	srv.Close()
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

// inflight counts the requests being served, so that shutdown waits for
// exactly those that carry calls (POST) and not for idle event streams.
type inflight struct {
	mu      sync.Mutex
	n       int
	done    bool
	drained chan struct{} // closed when done and n == 0
}

func (f *inflight) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		defer f.release()
		h.ServeHTTP(w, r)
	})
}

func (f *inflight) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.done && f.n == 0 && f.drained != nil {
		close(f.drained)
		f.drained = nil
	}
}

func (f *inflight) stopping() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

func (f *inflight) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = true
	f.drained = make(chan struct{})
	if f.n == 0 {
		close(f.drained)
		f.drained = nil
	}
}

// wait reports whether every tracked request ended before ctx did.
func (f *inflight) wait(ctx context.Context) bool {
	f.mu.Lock()
	ch := f.drained
	f.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// ErrHeld: the ledger file is held by another process (a running server
// whose admin socket did not answer).
var ErrHeld = errors.New("the ledger file is held by another process")

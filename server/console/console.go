package console

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// Options configure a console.
type Options struct {
	Store *boltstore.Store // the ledger the server holds
	// Authenticate reports whether token may read the console; an error is
	// a failure to tell (answered 500), not a refusal. Required.
	Authenticate func(ctx context.Context, token string) (bool, error)
	// ScratchDir is where "verify now" refolds the projections (default:
	// the system temp directory).
	ScratchDir string
	Logger     *slog.Logger
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// console serves the pages.
type console struct {
	opts  Options
	log   *slog.Logger
	pages map[string]*template.Template
	// verifying admits one "verify now" at a time: each reads the whole log.
	verifying sync.Mutex
	logins    sessions // the logins the cookies name
	// rendering admits maxRendering page builds at once (bounded).
	rendering chan struct{}
}

// maxRendering is how many pages are built at once: a page is built whole
// in memory (the board of 10k tasks: 2.2 MB of HTML, ~30 MB allocated),
// and 100 loads of it at once took the server to 5.9 GB (review). The
// others wait their turn, up to renderWait.
const maxRendering = 4

// renderWait is how long a page waits for its turn before it is answered
// 503 with Retry-After.
var renderWait = 10 * time.Second

// bounded lets h build a page once one of the maxRendering turns is free:
// 503 (Retry-After: 1) if none frees within renderWait, nothing if the
// client goes away first.
func (c *console) bounded(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wait := time.NewTimer(renderWait)
		defer wait.Stop()
		select {
		case c.rendering <- struct{}{}:
			defer func() { <-c.rendering }()
			h(w, r)
		case <-wait.C:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "the console is busy building other pages; try again in a moment", http.StatusServiceUnavailable)
		case <-r.Context().Done():
		}
	}
}

// New returns the console's handler, to be mounted at "/".
func New(opts Options) http.Handler { return newConsole(opts).routes() }

func newConsole(opts Options) *console {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &console{opts: opts, log: opts.Logger, pages: parsePages(), rendering: make(chan struct{}, maxRendering)}
}

// routes are the console's pages, each built in a turn of its own
// (bounded) but the login's, the 404 and "verify now" (one at a time).
func (c *console) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	// The three files by name only: a FileServer lists a directory, and
	// the console lists nothing it does not mean to.
	mux.Handle("GET /static/{file}", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	mux.Handle("GET /{$}", c.authed(c.bounded(c.board)))
	mux.Handle("GET /tasks/{id}", c.authed(c.bounded(c.task)))
	mux.Handle("GET /sessions", c.authed(c.bounded(c.sessions)))
	mux.Handle("GET /sessions/{id}", c.authed(c.bounded(c.session)))
	mux.Handle("GET /ledger", c.authed(c.bounded(c.ledger)))
	mux.Handle("GET /ledger/verify", c.authed(c.verify)) // one at a time already (verifying)
	mux.Handle("GET /proofs/{seq}", c.authed(c.bounded(c.proof)))
	mux.Handle("GET /", c.authed(func(w http.ResponseWriter, r *http.Request) {
		c.notFound(w, r, "There is no page at this address.")
	}))
	return secure(mux)
}

// csp allows this origin's own script, style and images and nothing else:
// no inline script or style, no other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secure sets the headers every answer carries.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		// A token may be in the address of the first request: never pass
		// the address to another origin. (no-referrer would also make a
		// browser send "Origin: null" with the login form, which
		// SameOrigin could not tell from a foreign one.)
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// parsePages parses each page with the layout around it.
func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err) // static data
	}
	pages := make(map[string]*template.Template)
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		pages[base] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", name))
	}
	return pages
}

// page is what every page's template gets.
type page struct {
	Title  string
	Nav    string // the section the page belongs to
	Authed bool   // a logout button is shown
	Data   any
}

// render writes the page named name with status code, or a 500 if the
// template fails (before anything was written).
func (c *console) render(w http.ResponseWriter, code int, name string, p page) {
	var b bytes.Buffer
	if err := c.pages[name].Execute(&b, p); err != nil {
		c.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	// The templates hold no bidirectional control, so each came from the
	// ledger's text (audit.NoBidi); it is never part of the markup, so
	// blanking it leaves the markup whole.
	w.Write(audit.NoBidi(b.Bytes()))
}

// problem is what the error page shows.
type problem struct{ Heading, Says string }

// notFound answers a request for something the ledger does not hold (an
// id, a project, an event beyond its head): 404.
func (c *console) notFound(w http.ResponseWriter, r *http.Request, msg string) {
	c.refuse(w, r, http.StatusNotFound, "Not found", msg)
}

// badRequest answers a request the console cannot read (a parameter it
// does not take, given twice, or not of its form, an id not an id): 400,
// whatever the ledger holds.
func (c *console) badRequest(w http.ResponseWriter, r *http.Request, msg string) {
	c.refuse(w, r, http.StatusBadRequest, "Bad request", msg)
}

// refuse answers code with msg: in plain text to what a script or a
// download asks for (scripted), else as the error page.
func (c *console) refuse(w http.ResponseWriter, r *http.Request, code int, title, msg string) {
	if scripted(r) {
		http.Error(w, msg, code)
		return
	}
	c.render(w, code, "error", page{Title: title, Authed: r.Context().Value(authedKey{}) != nil, Data: problem{title, msg}})
}

// scripted reports whether r asks for what a script or a download reads
// (the verification stream, a proof file), which gets its refusals in
// plain text, not as a page.
func scripted(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/proofs/") || r.URL.Path == "/ledger/verify"
}

// query reads r's query parameters: names only (token, which authed takes
// before any page, aside), each at most once, and nothing malformed. A
// query that breaks this is answered 400, naming what is wrong, and ok is
// false: a parameter the console would ignore (a misspelt "sise") or
// read one of (the first of two) would show the user another page than
// the one asked for, with nothing to say so.
func (c *console) query(w http.ResponseWriter, r *http.Request, names ...string) (q url.Values, ok bool) {
	if q, ok = c.parseQuery(w, r); !ok {
		return nil, false
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(names, k) && len(names) == 0:
			c.badRequest(w, r, fmt.Sprintf("This page takes no parameter; %q is not one.", domain.Clip(k)))
			return nil, false
		case !slices.Contains(names, k):
			c.badRequest(w, r, fmt.Sprintf("This page takes only %s; %q is not one.", strings.Join(names, ", "), domain.Clip(k)))
			return nil, false
		case len(q[k]) > 1:
			c.badRequest(w, r, fmt.Sprintf("The parameter %s is given %d times; give it once.", k, len(q[k])))
			return nil, false
		}
	}
	return q, true
}

// parseQuery is r's query, or, if it does not parse, false, answered 400.
func (c *console) parseQuery(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		c.badRequest(w, r, "The address's query is malformed: "+domain.Clip(err.Error())+".")
		return nil, false
	}
	return q, true
}

// fail answers an internal failure: the cause goes to the log only.
func (c *console) fail(w http.ResponseWriter, r *http.Request, err error) {
	c.log.Error("console: read the ledger", "path", r.URL.Path, "err", err)
	c.refuse(w, r, http.StatusInternalServerError, "Error", "The ledger could not be read; the cause is in the server's log.")
}

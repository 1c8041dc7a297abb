package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// cookieName holds the login's session id in the browser (sessions).
const cookieName = "logbook_console"

// maxTokenBytes bounds a token read from a form, header or cookie.
const maxTokenBytes = 512

// maxLoginForm bounds the login form's body.
const maxLoginForm = 4 << 10

// authed lets a request through to h if it carries an accepted token: a
// bearer header, or the console's cookie. A GET with ?token= that the user
// opened (typed, pasted, or followed from the console itself) is exchanged
// for the cookie and redirected to the same address without the token; one
// that another site sent the browser to only fills the login form in
// (loginPrompt).
func (c *console) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, ok := c.parseQuery(w, r)
		if !ok {
			return
		}
		if q.Has("token") {
			if len(q["token"]) > 1 {
				// Which one would log the browser in is not for the
				// console to guess (query answers the rest of a page's
				// parameters).
				c.badRequest(w, r, fmt.Sprintf("The parameter token is given %d times; give it once.", len(q["token"])))
				return
			}
			tok := q.Get("token")
			if !openedHere(r) {
				c.loginPrompt(w, tok)
				return
			}
			if !c.accept(w, r, tok) {
				return
			}
			c.setCookie(w, r, tok)
			q.Del("token")
			http.Redirect(w, r, sameAddress(r, q), http.StatusSeeOther)
			return
		}
		tok := bearer(r)
		// Every cookie of the name, not only the first: another server on
		// the host may have set one before the console's (its path, its
		// order), which would log the browser out.
		for _, ck := range r.CookiesNamed(cookieName) {
			if tok != "" {
				break
			}
			tok, _ = c.logins.token(ck.Value)
		}
		if tok == "" {
			c.unauthorized(w, r, "")
			return
		}
		if c.accept(w, r, tok) {
			h(w, r.WithContext(context.WithValue(r.Context(), authedKey{}, true)))
		}
	})
}

// sameAddress is r's address on this server, with the query q: a path,
// never one a browser reads as another host's. The decoded path of
// /%2fevil.com?token=… is //evil.com, which as a Location is a URL of the
// host evil.com (http.Redirect leaves it be): the console logged the
// browser in and sent it there. The path is given as the client escaped
// it, with one leading slash.
func sameAddress(r *http.Request, q url.Values) string {
	to := "/" + strings.TrimLeft(r.URL.EscapedPath(), "/\\")
	if len(q) > 0 {
		to += "?" + q.Encode()
	}
	return to
}

// authedKey marks a request's context once its token is accepted: its
// refusals show the console's navigation and logout.
type authedKey struct{}

// accept checks tok, answering the request itself (401 or 500) when false.
func (c *console) accept(w http.ResponseWriter, r *http.Request, tok string) bool {
	if tok == "" || len(tok) > maxTokenBytes {
		c.unauthorized(w, r, "That token is not valid.")
		return false
	}
	ok, err := c.opts.Authenticate(r.Context(), tok)
	switch {
	case err != nil:
		c.log.Error("console: authenticate", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return false
	case !ok:
		c.unauthorized(w, r, "That token is not valid (unknown, revoked, or not allowed to read the console).")
		return false
	}
	return true
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// unauthorized answers 401: the login form for a page, plain text for the
// verification stream and proofs, which a script or a download asks for.
func (c *console) unauthorized(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="logbook"`)
	if scripted(r) {
		http.Error(w, "a token is required", http.StatusUnauthorized)
		return
	}
	// A cookie that no longer works (a revoked token, a session this
	// process does not know) is dropped.
	if _, err := r.Cookie(cookieName); err == nil {
		c.clearCookie(w, r)
	}
	c.render(w, http.StatusUnauthorized, "login", page{Title: "Log in", Data: loginForm{Problem: msg}})
}

// loginForm is what the login page shows: a problem with the last token
// tried, or a token to log in with once the user confirms.
type loginForm struct{ Problem, Token string }

// loginPrompt answers an address carrying a token that the browser was
// sent to from elsewhere: a link on another site could otherwise log the
// victim's browser into the console as the link's author (login CSRF), so
// that what the victim then reads, and trusts, is what that author chose
// to show. The form is filled in; logging in takes the user's click, and
// the form is posted from this origin (login checks it). The console
// cannot be framed (frame-ancestors 'none'), so the click cannot be
// stolen.
func (c *console) loginPrompt(w http.ResponseWriter, tok string) {
	if len(tok) > maxTokenBytes {
		tok = ""
	}
	c.render(w, http.StatusOK, "login", page{Title: "Log in", Data: loginForm{Token: tok,
		Problem: "This address carries a token, but the browser was sent here from another site (or did not say from where). Log in with it only if you meant to."}})
}

// openedHere reports whether r is a navigation the user started (the
// address typed, pasted or opened from outside a page: Sec-Fetch-Site
// "none") or one from the console itself ("same-origin"). A browser that
// sends no Sec-Fetch-Site cannot tell, so it is not.
func openedHere(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	return site == "none" || site == "same-origin"
}

// setCookie logs the browser in with tok: a new session, whose id the
// cookie holds. The session the browser's cookie named, if any, ends: the
// cookie is replaced, and the id it held, sent to every web server on the
// host, would otherwise open the console until a restart, whatever the
// browser did after (logging out ends the new session only).
func (c *console) setCookie(w http.ResponseWriter, r *http.Request, tok string) {
	c.endSession(r)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: c.logins.add(tok), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// clearCookie logs the browser out: the session its cookie names ends,
// and the cookie is removed.
func (c *console) clearCookie(w http.ResponseWriter, r *http.Request) {
	c.endSession(r)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// endSession ends the sessions the browser's cookies name, if any.
func (c *console) endSession(r *http.Request) {
	for _, ck := range r.CookiesNamed(cookieName) {
		c.logins.drop(ck.Value)
	}
}

func (c *console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.query(w, r); !ok {
		return
	}
	c.render(w, http.StatusOK, "login", page{Title: "Log in", Data: loginForm{}})
}

// login takes the token from the form, so that it never appears in an
// address.
func (c *console) login(w http.ResponseWriter, r *http.Request) {
	if !SameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	if r.ContentLength > maxLoginForm {
		// Refused on its headers, as --max-body-bytes refuses one on /mcp:
		// not waited for until the read times out.
		http.Error(w, "the login form is larger than 4 KiB", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	if err := r.ParseForm(); err != nil {
		if me := (*http.MaxBytesError)(nil); errors.As(err, &me) {
			http.Error(w, "the login form is larger than 4 KiB", http.StatusRequestEntityTooLarge)
			return
		}
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			http.Error(w, "the form did not arrive in time", http.StatusRequestTimeout)
			return
		}
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if n := len(r.PostForm["token"]); n > 1 {
		c.badRequest(w, r, fmt.Sprintf("The form gives a token %d times; give one.", n))
		return
	}
	if len(r.URL.RawQuery) > 0 {
		// The form alone logs in: a token in the address beside it (which
		// one would it be?) or anything else there is refused, as an
		// address giving two tokens is.
		c.badRequest(w, r, "The login form is posted to /login with no parameters in the address.")
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	if !c.accept(w, r, tok) {
		return
	}
	c.setCookie(w, r, tok)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *console) logout(w http.ResponseWriter, r *http.Request) {
	if !SameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	c.clearCookie(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// SameOrigin refuses a form posted from another site (login CSRF): browsers
// send Origin with a POST, and Sec-Fetch-Site when they know it.
func SameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser, or a browser that sends none: the cookie is SameSite=Strict anyway
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host // "null" (an opaque origin) is refused too
}

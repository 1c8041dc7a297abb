package console

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestPagesNeedAToken: without an accepted token every page is the login
// form (401), and a proof or the verification stream a plain 401.
func TestPagesNeedAToken(t *testing.T) {
	f := newFixture(t)
	for _, tok := range []string{"", "lbk_wrong", strings.Repeat("x", maxTokenBytes+1)} {
		for _, p := range pages {
			res, body := f.get(t, p.path, tok)
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s with %q: status %d", p.path, tok, res.StatusCode)
			}
			if !strings.Contains(body, `<form method="post" action="/login">`) {
				t.Errorf("%s: no login form", p.path)
			}
			if strings.Contains(body, "Ship the ledger") {
				t.Errorf("%s: ledger content shown without a token", p.path)
			}
		}
		for _, path := range []string{"/proofs/1", "/ledger/verify"} {
			res, body := f.get(t, path, tok)
			if res.StatusCode != http.StatusUnauthorized || strings.Contains(body, "<form") {
				t.Errorf("%s with %q: status %d %q", path, tok, res.StatusCode, body)
			}
		}
	}
	// The stylesheet, script and icon are not secrets: the login page needs them.
	for _, path := range []string{"/static/console.css", "/static/console.js", "/static/favicon.svg"} {
		if res, _ := f.get(t, path, ""); res.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", path, res.StatusCode)
		}
	}
	// But no listing of them (attack5: /static/ listed the directory).
	for _, path := range []string{"/static/", "/static", "/static/./", "/static/x/"} {
		if res, body := f.get(t, path, ""); res.StatusCode == http.StatusOK || strings.Contains(body, `href="console.css"`) {
			t.Errorf("%s: status %d %.200q", path, res.StatusCode, body)
		}
	}
}

// navigate GETs path as a browser does when it was sent there from site
// (a Sec-Fetch-Site value, "" for a browser that sends none).
func (f *fixture) navigate(t *testing.T, path, site string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if site != "" {
		req.Header.Set("Sec-Fetch-Site", site)
	}
	return do(t, req)
}

// TestTokenInAddress: ?token= opened by the user is exchanged for an
// HttpOnly, SameSite=Strict cookie and the browser is sent to the same
// address without it; the cookie then opens every page.
func TestTokenInAddress(t *testing.T) {
	f := newFixture(t)
	res, _ := f.navigate(t, "/tasks/T-0002?token="+testToken+"&x=1", "none")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", res.StatusCode)
	}
	if loc := res.Header.Get("Location"); loc != "/tasks/T-0002?x=1" {
		t.Errorf("Location %q", loc)
	}
	ck := sessionCookie(t, res)
	for _, p := range pages {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+p.path, nil)
		req.AddCookie(ck)
		if res, _ := do(t, req); res.StatusCode != http.StatusOK {
			t.Errorf("%s with the cookie: status %d", p.path, res.StatusCode)
		}
	}
	// The address sent back to is this server's, whatever the path:
	// /%2fevil.com, decoded //evil.com, was a Location of the host
	// evil.com (an open redirect, logged in on the way: review).
	for path, want := range map[string]string{
		"/%2fevil.com":        "/%2fevil.com",
		"/%5c%5cevil.com":     "/%5c%5cevil.com",
		"/%2F%2Fevil.com/x":   "/%2F%2Fevil.com/x",
		"/tasks/T-0002?y=%2F": "/tasks/T-0002?y=%2F",
	} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
		req.URL.Opaque = path + sep + "token=" + testToken // sent as written
		req.URL.RawQuery = ""
		req.Header.Set("Sec-Fetch-Site", "none")
		res, _ := do(t, req)
		loc := res.Header.Get("Location")
		if u, err := url.Parse(loc); err != nil || u.Host != "" || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || loc != want {
			t.Errorf("%s?token=: Location %q, want %q (this server's)", path, loc, want)
		}
	}
	// A bad token in the address sets nothing.
	res, _ = f.navigate(t, "/?token=lbk_wrong", "same-origin")
	if res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("bad token: status %d, cookies %v", res.StatusCode, res.Cookies())
	}
	// A stray cookie of the name before the console's own (another server
	// on the host set it) neither logs the browser out nor is used.
	req0, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	req0.Header.Add("Cookie", cookieName+"=stray; "+cookieName+"="+ck.Value)
	if res, _ := do(t, req0); res.StatusCode != http.StatusOK || len(res.Cookies()) != 0 {
		t.Errorf("a stray cookie before the console's: status %d, cookies %v; want 200, none touched", res.StatusCode, res.Cookies())
	}
	// A cookie whose token stopped working is refused and dropped.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: "lbk_revoked"})
	res, _ = do(t, req)
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("stale cookie: status %d", res.StatusCode)
	}
	if cs := res.Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("stale cookie not cleared: %v", cs)
	}
}

// TestTokenInAddressFromAnotherSite: an address with ?token= that the
// browser was sent to by another site (a link, a redirect, an image, a
// form: Sec-Fetch-Site cross-site or same-site), or by a browser that does
// not say, sets no cookie: it shows the login form filled in, for the user
// to submit. Before, it logged the browser in at once, so a link on any
// site could log a victim into the console under the link author's token
// (login CSRF).
func TestTokenInAddressFromAnotherSite(t *testing.T) {
	f := newFixture(t)
	for _, site := range []string{"cross-site", "same-site", ""} {
		res, body := f.navigate(t, "/ledger?token="+testToken, site)
		if res.StatusCode != http.StatusOK || len(res.Cookies()) != 0 || res.Header.Get("Location") != "" {
			t.Errorf("sent from %q: status %d, cookies %v, Location %q", site, res.StatusCode, res.Cookies(), res.Header.Get("Location"))
		}
		if !strings.Contains(body, `<form method="post" action="/login">`) || !strings.Contains(body, `value="`+testToken+`"`) {
			t.Errorf("sent from %q: no login form filled in: %s", site, body)
		}
		if strings.Contains(body, "Ship the ledger") {
			t.Errorf("sent from %q: ledger content shown", site)
		}
	}
	// What is filled in is escaped, and an oversized token is not echoed.
	_, body := f.navigate(t, "/?token=%22%3E%3Cscript%3Ealert(1)%3C/script%3E", "cross-site")
	if strings.Contains(body, "<script>alert") {
		t.Errorf("token not escaped: %s", body)
	}
	big := strings.Repeat("x", maxTokenBytes+1)
	if _, body := f.navigate(t, "/?token="+big, "cross-site"); strings.Contains(body, big) {
		t.Error("an oversized token is echoed")
	}
}

// TestCookieIsNotTheToken: the console's cookie is a session id, not the
// token. Browsers send cookies to every port of a host, so a cookie
// holding the token handed it to any other web server on 127.0.0.1 that a
// logged-in browser visited (one an agent started, say): that server could
// call every tool over /mcp as the token's agent. Before, the cookie was
// the token. The id opens the console, and nothing else: not /mcp, not
// after logging out, not as a bearer token.
func TestCookieIsNotTheToken(t *testing.T) {
	f := newFixture(t)
	res, _ := f.navigate(t, "/?token="+testToken, "none")
	ck := sessionCookie(t, res)
	withCookie := func(c *http.Cookie) int {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/ledger", nil)
		req.AddCookie(c)
		res, _ := do(t, req)
		return res.StatusCode
	}
	if code := withCookie(ck); code != http.StatusOK {
		t.Fatalf("the session's cookie: %d", code)
	}
	// The token itself as the cookie's value (as before) opens nothing.
	if code := withCookie(&http.Cookie{Name: cookieName, Value: testToken}); code != http.StatusUnauthorized {
		t.Errorf("the token as cookie: %d", code)
	}
	// Nor does the id as a token.
	if res, _ := f.get(t, "/ledger", ck.Value); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the session id as a bearer token: %d", res.StatusCode)
	}
	// Two logins are two sessions; logging out ends one, not the other.
	res, _ = f.navigate(t, "/?token="+testToken, "none")
	other := sessionCookie(t, res)
	if other.Value == ck.Value {
		t.Fatal("two logins share a session id")
	}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/logout", nil)
	req.AddCookie(ck)
	if res, _ := do(t, req); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	if code := withCookie(ck); code != http.StatusUnauthorized {
		t.Errorf("the cookie after logging out: %d", code)
	}
	if code := withCookie(other); code != http.StatusOK {
		t.Errorf("the other login after the first logged out: %d", code)
	}
}

// TestLoginAgainEndsTheEarlierSession: a browser that logs in again (the
// address with ?token=, or the form) while it holds a session's cookie ends
// that session: its cookie is replaced, and the id it held, which every
// web server on the host was sent, opened the console until a restart,
// logging out (which ends the new one) included.
func TestLoginAgainEndsTheEarlierSession(t *testing.T) {
	f := newFixture(t)
	withCookie := func(c *http.Cookie) int {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/ledger", nil)
		req.AddCookie(c)
		res, _ := do(t, req)
		return res.StatusCode
	}
	res, _ := f.navigate(t, "/?token="+testToken, "none")
	first := sessionCookie(t, res)
	// Again through the address, the browser sending its cookie.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/?token="+testToken, nil)
	req.Header.Set("Sec-Fetch-Site", "none")
	req.AddCookie(first)
	res, _ = do(t, req)
	second := sessionCookie(t, res)
	if code := withCookie(first); code != http.StatusUnauthorized {
		t.Errorf("the first login's cookie after a second login: %d", code)
	}
	// Again through the form.
	req, _ = http.NewRequest(http.MethodPost, f.srv.URL+"/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(second)
	res, _ = do(t, req)
	third := sessionCookie(t, res)
	if code := withCookie(second); code != http.StatusUnauthorized {
		t.Errorf("the second login's cookie after a login through the form: %d", code)
	}
	if code := withCookie(third); code != http.StatusOK {
		t.Errorf("the last login's cookie: %d", code)
	}
	// Logging out then leaves no session of this browser open.
	req, _ = http.NewRequest(http.MethodPost, f.srv.URL+"/logout", nil)
	req.AddCookie(third)
	do(t, req)
	for i, ck := range []*http.Cookie{first, second, third} {
		if code := withCookie(ck); code != http.StatusUnauthorized {
			t.Errorf("login %d's cookie after logging out: %d", i+1, code)
		}
	}
}

// TestSessionsCapped: the console keeps at most maxSessions logins; one
// more forgets the login used longest ago, not the oldest login.
func TestSessionsCapped(t *testing.T) {
	var s sessions
	first := s.add("a")
	second := s.add("b")
	if _, ok := s.token(first); !ok { // the first login is used again
		t.Fatal("the first login is not kept")
	}
	for i := range maxSessions - 1 {
		s.add(fmt.Sprintf("t%d", i))
	}
	if len(s.byID) != maxSessions {
		t.Fatalf("%d sessions kept", len(s.byID))
	}
	if _, ok := s.token(second); ok {
		t.Error("the login used longest ago is kept beyond the cap")
	}
	if tok, ok := s.token(first); !ok || tok != "a" {
		t.Errorf("the oldest login, used since: %q %v", tok, ok)
	}
}

// TestSessionsPerToken: one token's logins beyond maxPerToken forget that
// token's least recently used ones, never another token's.
func TestSessionsPerToken(t *testing.T) {
	var s sessions
	other := s.add("other")
	var mine []string
	for range maxPerToken + 5 {
		mine = append(mine, s.add("t"))
	}
	if _, ok := s.token(other); !ok {
		t.Error("another token's login was pushed out by one token's logins")
	}
	kept := 0
	for i, id := range mine {
		_, ok := s.token(id)
		if ok {
			kept++
		}
		if i < 5 && ok {
			t.Errorf("login %d of the token, used longest ago, is kept", i)
		}
	}
	if kept != maxPerToken {
		t.Errorf("%d logins of one token kept, want %d", kept, maxPerToken)
	}
}

// TestSessionsIdle: a login no request used for idleTimeout ends; each use
// keeps it for another idleTimeout; a login never asked for again is
// forgotten by the next login (add), so idle logins do not pile up.
func TestSessionsIdle(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := sessions{now: func() time.Time { return now }}
	id := s.add("a")
	idle := s.add("b")
	s.add("never used") // forgotten by a later login, not by a request
	for range 3 {
		now = now.Add(idleTimeout - time.Minute)
		if _, ok := s.token(id); !ok {
			t.Fatal("a login used within the idle timeout ended")
		}
	}
	if _, ok := s.token(idle); ok {
		t.Error("a login idle for longer than the timeout still works")
	}
	now = now.Add(idleTimeout)
	if _, ok := s.token(id); ok {
		t.Error("a login idle for the timeout still works")
	}
	c := s.add("c")
	if len(s.byID) != 1 || s.byID[c] == nil {
		t.Errorf("%d sessions kept after a login; the idle ones should be forgotten", len(s.byID))
	}
}

func sessionCookie(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == cookieName {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path /", c)
			}
			if c.Value == "" || strings.Contains(c.Value, testToken) || strings.Contains(testToken, c.Value) {
				t.Errorf("cookie %+v: holds the token", c)
			}
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", cookieName, res.Header["Set-Cookie"])
	return nil
}

// TestLoginForm: the form posts the token (never in an address), sets the
// cookie and leads to the board; a post from another origin is refused;
// logging out clears the cookie.
func TestLoginForm(t *testing.T) {
	f := newFixture(t)
	post := func(path, tok, origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(url.Values{"token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, _ := do(t, req)
		return res
	}
	res := post("/login", testToken, f.srv.URL)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("login: status %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	sessionCookie(t, res)
	if res := post("/login", "lbk_wrong", f.srv.URL); res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("bad token: status %d", res.StatusCode)
	}
	for _, origin := range []string{"https://evil.example", "null"} {
		if res := post("/login", testToken, origin); res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
			t.Errorf("login from origin %s: status %d", origin, res.StatusCode)
		}
	}
	res = post("/logout", "", f.srv.URL)
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 || res.Cookies()[0].MaxAge >= 0 {
		t.Errorf("logout: status %d, cookies %v", res.StatusCode, res.Cookies())
	}
	if res, body := f.get(t, "/login", ""); res.StatusCode != http.StatusOK || !strings.Contains(body, "logbook token add") {
		t.Errorf("login page: status %d, or it does not name the command that issues tokens", res.StatusCode)
	}
	// A form larger than 4 KiB is refused on its headers (it was waited
	// for until the read timed out, 30 s), or once read past the bound.
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\ntoken=",
		strings.TrimPrefix(f.srv.URL, "http://"), 5<<20) // announced, never sent
	if res, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a form announced at 5 MiB: %v, %v; want 413 at once", res, err)
	}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/login", strings.NewReader("token="+strings.Repeat("x", 5000)))
	req.ContentLength = -1 // chunked: no length to refuse on
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res, _ := do(t, req); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a chunked form of 5 KB: status %d, want 413", res.StatusCode)
	}
}

// TestTokenGivenTwice: an address or login form giving two tokens is
// refused 400, no cookie set, rather than logging the browser in with the
// first: which one was meant is not the console's to guess. A refusal
// before any token is accepted shows no logout button. The login page
// takes no parameter (a token in its address is not read).
func TestTokenGivenTwice(t *testing.T) {
	f := newFixture(t)
	for _, site := range []string{"none", "cross-site"} {
		res, body := f.navigate(t, "/?token="+testToken+"&token=lbk_other", site)
		if res.StatusCode != http.StatusBadRequest || len(res.Cookies()) != 0 || !strings.Contains(body, "The parameter token is given 2 times") {
			t.Errorf("Sec-Fetch-Site %s, two tokens in the address: status %d, cookies %v", site, res.StatusCode, res.Cookies())
		}
		if strings.Contains(body, `action="/logout"`) {
			t.Errorf("Sec-Fetch-Site %s: a refusal before login shows the logout button", site)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/login", strings.NewReader(url.Values{"token": {testToken, "lbk_other"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, body := do(t, req)
	if res.StatusCode != http.StatusBadRequest || len(res.Cookies()) != 0 || !strings.Contains(body, "The form gives a token 2 times") {
		t.Errorf("two tokens in the form: status %d, cookies %v", res.StatusCode, res.Cookies())
	}
	if res, body := f.get(t, "/login?token="+testToken, ""); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "This page takes no parameter") {
		t.Errorf("/login?token=: status %d", res.StatusCode)
	}
	// A token in the address of the form's post, beside the form's: the
	// form's logged in, the other unsaid (review). Anything there: 400.
	for _, q := range []string{"?token=lbk_other", "?x=1"} {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/login"+q, strings.NewReader(url.Values{"token": {testToken}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if res, body := do(t, req); res.StatusCode != http.StatusBadRequest || len(res.Cookies()) != 0 || !strings.Contains(body, "no parameters in the address") {
			t.Errorf("POST /login%s: status %d, cookies %v", q, res.StatusCode, res.Cookies())
		}
	}
	// A token beside a query that does not parse: 400, not logged in
	// with what could be read of it.
	res, body = f.navigate(t, "/?token="+testToken+"&x=%zz", "none")
	if res.StatusCode != http.StatusBadRequest || len(res.Cookies()) != 0 || !strings.Contains(body, "The address&#39;s query is malformed") {
		t.Errorf("a token in a malformed query: status %d, cookies %v", res.StatusCode, res.Cookies())
	}
}

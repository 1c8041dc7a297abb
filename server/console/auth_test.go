package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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
	// A bad token in the address sets nothing.
	res, _ = f.navigate(t, "/?token=lbk_wrong", "same-origin")
	if res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("bad token: status %d, cookies %v", res.StatusCode, res.Cookies())
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

func sessionCookie(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == cookieName {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Value != testToken || c.Path != "/" {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path /", c)
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
	if res, _ := f.get(t, "/login", ""); res.StatusCode != http.StatusOK {
		t.Errorf("login page: status %d", res.StatusCode)
	}
}

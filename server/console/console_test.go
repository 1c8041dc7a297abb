package console

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/views"
)

// pages are every page of the fixture, with words each must show.
var pages = []struct {
	path string
	want []string
}{
	{"/", []string{"Ship the ledger", "Write the verifier", "Release notes", "T-0001", "T-0004", "in progress"}},
	{"/?project=docs", []string{"Release notes", "Tasks of docs"}},
	{"/tasks/T-0002", []string{"Write the verifier", "Status history", "Decision trail", "Hash everything, then walk the chain.",
		"Chunked reads of 8,192 events.", "Check every hash.\nThen every link.", "A-0001", "sub-task of"}},
	{"/tasks/T-0003", []string{"Release notes", longWord}},
	{"/tasks/T-0004", []string{"Decision trail", "discovery"}},
	{"/sessions", []string{"A-0001", "A-0002", "security-review", "docs-lead", "finalized", "open"}},
	{"/sessions/A-0001", []string{"release sign-off", "frozen", "task.updated", "logbook check-proof"}},
	{"/sessions/A-0002", []string{"not finalized", "docs-lead"}},
	{"/sessions/A-0003", []string{"not finalized", longWord[:100]}},
	{"/ledger", []string{"Verify now", "4 tasks, 3 audit sessions"}},
}

// TestPages fetches every page with a token: each is a 200 HTML page with
// its content, the security headers, and no inline script or style.
func TestPages(t *testing.T) {
	f := newFixture(t)
	for _, p := range pages {
		t.Run(p.path, func(t *testing.T) {
			res, body := f.get(t, p.path, testToken)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d\n%s", res.StatusCode, body)
			}
			for _, w := range p.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			checkHeaders(t, res)
			checkNoInline(t, body)
		})
	}
}

func checkHeaders(t *testing.T, res *http.Response) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": csp,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
		"Cache-Control":           "no-store",
	}
	for k, v := range want {
		if got := res.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self';") {
		t.Error("the CSP does not restrict scripts to this origin")
	}
}

var (
	scriptTag  = regexp.MustCompile(`(?is)<script\b[^>]*>(.*?)</script>`)
	inlineAttr = regexp.MustCompile(`(?i)<[^>]+\s(style|on[a-z]+)\s*=`)
)

// checkNoInline fails on an inline script, an inline event handler or a
// style attribute: the CSP would block them, so they would be dead code.
func checkNoInline(t *testing.T, body string) {
	t.Helper()
	for _, m := range scriptTag.FindAllStringSubmatch(body, -1) {
		if strings.TrimSpace(m[1]) != "" || !strings.Contains(m[0], ` src="/static/`) {
			t.Errorf("inline or foreign script: %s", m[0])
		}
	}
	if m := inlineAttr.FindString(body); m != "" {
		t.Errorf("inline style or handler: %s", m)
	}
}

// TestHostileTextIsEscaped: a title, description, thought and blocked reason
// made of markup come out as text on every page that shows them.
func TestHostileTextIsEscaped(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/", "/?project=docs", "/tasks/T-0004"} {
		_, body := f.get(t, path, testToken)
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the hostile title is not shown as text", path)
		}
		for _, raw := range []string{"<script>alert(", "<img src=x", "</dd><script>"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s: raw markup %q in the page", path, raw)
			}
		}
	}
	_, body := f.get(t, "/tasks/T-0004", testToken)
	for _, w := range []string{"&lt;img src=x onerror=alert(2)&gt;", "&lt;script&gt;alert(3)&lt;/script&gt;", "&lt;/dd&gt;&lt;script&gt;alert(4)"} {
		if !strings.Contains(body, w) {
			t.Errorf("task page lacks the escaped %q", w)
		}
	}
}

// TestBoardColumns: one column per status, in the order of a task's life,
// each task in the column of its status.
func TestBoardColumns(t *testing.T) {
	f := newFixture(t)
	_, body := f.get(t, "/", testToken)
	cols := regexp.MustCompile(`data-status="([a-z_]+)"`).FindAllStringSubmatch(body, -1)
	var got []string
	for _, c := range cols {
		got = append(got, c[1])
	}
	if !slices.Equal(got, domain.Statuses) {
		t.Fatalf("columns %v, want %v", got, domain.Statuses)
	}
	want := map[string]string{"T-0001": "backlog", "T-0002": "done", "T-0003": "todo", "T-0004": "blocked"}
	for id, st := range want {
		col := body[strings.Index(body, `data-status="`+st+`"`):]
		if end := strings.Index(col[1:], `data-status="`); end >= 0 {
			col = col[:end+1]
		}
		if !strings.Contains(col, `href="/tasks/`+id+`"`) {
			t.Errorf("%s is not in the %s column", id, st)
		}
	}
}

// TestTaskPageMatchesTheView: the task page shows every step of the view
// the CLI shows, in order, each with its seq, short hash and a proof link
// at the ledger size the page states.
func TestTaskPageMatchesTheView(t *testing.T) {
	f := newFixture(t)
	var v *views.Task
	var size uint64
	err := f.store.View(func(tx *boltstore.Tx) error {
		var err error
		v, err = views.ReadTask(tx, "T-0002")
		size = tx.Head().Seq
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, body := f.get(t, "/tasks/T-0002", testToken)
	at := 0
	for _, st := range v.Timeline {
		i := strings.Index(body[at:], `<span class="seq">seq `+itoa(st.Seq)+`</span>`)
		if i < 0 {
			t.Fatalf("step seq %d missing or out of order", st.Seq)
		}
		at += i
		for _, w := range []string{st.Hash[:12], `href="/proofs/` + itoa(st.Seq) + `?size=` + itoa(size) + `"`} {
			if !strings.Contains(body[at:], w) {
				t.Errorf("step seq %d lacks %q", st.Seq, w)
			}
		}
	}
	history := body[strings.Index(body, "Status history"):strings.Index(body, "Decision trail")]
	for _, st := range []string{"backlog", "todo", "in progress", "review", "done"} {
		if !strings.Contains(history, ">"+st+"<") {
			t.Errorf("status history lacks %s", st)
		}
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestTaskPageInPages: a long decision trail is shown stepsPerPage steps
// a page, in order, each page linking to its neighbours, the first and the
// last; together the pages show every step once; a page beyond the last
// is not found.
func TestTaskPageInPages(t *testing.T) {
	f := newFixture(t)
	steps := 2*stepsPerPage + 7
	for i := range steps - 1 { // and the task's creation
		f.call("thought_record", map[string]any{"task_id": "T-0003", "type": "analysis", "content": "step " + strconv.Itoa(i)})
	}
	var v *views.Task
	if err := f.store.View(func(tx *boltstore.Tx) error {
		var err error
		v, err = views.ReadTask(tx, "T-0003")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(v.Timeline) < steps {
		t.Fatalf("the task has %d steps, want at least %d", len(v.Timeline), steps)
	}
	pages := (len(v.Timeline) + stepsPerPage - 1) / stepsPerPage
	seen := 0
	for p := 1; p <= pages; p++ {
		res, body := f.get(t, "/tasks/T-0003?page="+strconv.Itoa(p), testToken)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("page %d: status %d", p, res.StatusCode)
		}
		if !strings.Contains(body, strconv.Itoa(len(v.Timeline))+" steps") || !strings.Contains(body, "page "+strconv.Itoa(p)+" of "+strconv.Itoa(pages)) {
			t.Errorf("page %d does not say it is page %d of %d of %d steps", p, p, pages, len(v.Timeline))
		}
		for _, link := range []struct {
			href string
			want bool
		}{{`href="?page=1"`, p > 1}, {`href="?page=` + strconv.Itoa(p-1) + `"`, p > 1},
			{`href="?page=` + strconv.Itoa(p+1) + `"`, p < pages}, {`href="?page=` + strconv.Itoa(pages) + `"`, p < pages}} {
			if strings.Contains(body, link.href) != link.want {
				t.Errorf("page %d: link %s there %v, want %v", p, link.href, !link.want, link.want)
			}
		}
		at := 0
		for _, st := range v.Timeline[(p-1)*stepsPerPage : min(len(v.Timeline), p*stepsPerPage)] {
			i := strings.Index(body[at:], `<span class="seq">seq `+itoa(st.Seq)+`</span>`)
			if i < 0 {
				t.Fatalf("page %d: step seq %d missing or out of order", p, st.Seq)
			}
			at += i
			seen++
		}
		if n := strings.Count(body, `<span class="seq">seq `); n != min(stepsPerPage, len(v.Timeline)-(p-1)*stepsPerPage) {
			t.Errorf("page %d shows %d steps", p, n)
		}
	}
	if seen != len(v.Timeline) {
		t.Errorf("the pages showed %d steps of %d", seen, len(v.Timeline))
	}
	for _, past := range []string{strconv.Itoa(pages + 1), "2147483648", "18446744073709551615"} {
		res, body := f.get(t, "/tasks/T-0003?page="+past, testToken)
		if res.StatusCode != http.StatusNotFound || !strings.Contains(body, "The decision trail of T-0003 has "+strconv.Itoa(pages)+" pages") {
			t.Errorf("page %s, past the last: status %d %.300q", past, res.StatusCode, body)
		}
	}
	// A short trail is one page, with no page links.
	if _, body := f.get(t, "/tasks/T-0002", testToken); strings.Contains(body, `href="?page=`) || strings.Contains(body, "page 1 of") {
		t.Errorf("a one-page trail shows page links")
	}
}

// TestSessionsShowRoots: the sessions list and each session page show the
// root the views compute (frozen for a finalized session).
func TestSessionsShowRoots(t *testing.T) {
	f := newFixture(t)
	var list []views.SessionSummary
	err := f.store.View(func(tx *boltstore.Tx) error {
		var err error
		list, err = views.Sessions(tx, "")
		return err
	})
	if err != nil || len(list) != 3 {
		t.Fatalf("sessions %v, %v", list, err)
	}
	_, all := f.get(t, "/sessions", testToken)
	for _, s := range list {
		if !strings.Contains(all, s.Root) {
			t.Errorf("the sessions page lacks %s's root %s", s.SessionID, s.Root)
		}
		_, one := f.get(t, "/sessions/"+s.SessionID, testToken)
		if !strings.Contains(one, s.Root) {
			t.Errorf("%s's page lacks its root", s.SessionID)
		}
	}
}

// TestNotFound: unknown ids, projects and addresses are 404 pages; other
// methods are refused.
func TestNotFound(t *testing.T) {
	f := newFixture(t)
	for path, says := range map[string]string{
		"/tasks/T-0099":    "The ledger has no task T-0099.",
		"/sessions/A-0099": "The ledger has no audit session A-0099.",
		"/?project=nope":   "The ledger has no task in project nope.",
		"/nowhere":         "There is no page at this address.",
	} {
		if res, body := f.get(t, path, testToken); res.StatusCode != http.StatusNotFound || !strings.Contains(body, says) {
			t.Errorf("%s: status %d, want 404 saying %q", path, res.StatusCode, says)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, f.srv.URL+"/tasks/T-0001", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		if res, _ := do(t, req); res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d, want 405", m, res.StatusCode)
		}
	}
}

// TestBadParameters: a page asked for with what it cannot read — an id
// not an id, a parameter it does not take, one given twice, one not of
// its form, a query that does not parse — is answered 400 saying what is
// wrong, whatever the ledger holds, and never taken as the page without
// it: pages as the error page, the proof downloads and the verification
// stream in plain text.
func TestBadParameters(t *testing.T) {
	f := newFixture(t)
	huge := strings.Repeat("9", 4000)
	for path, says := range map[string]string{
		"/tasks/nonsense":             "That is not a task id (T-0001).",
		"/tasks/T-1":                  "That is not a task id (T-0001).",
		"/tasks/A-0001":               "That is not a task id (T-0001).",
		"/sessions/T-0001":            "That is not an audit session id (A-0001).",
		"/sessions/A-" + huge:         "That is not an audit session id (A-0001).",
		"/?project=":                  "project= names no project",
		"/?project=Core":              `project &#34;Core&#34; is not a project slug`,
		"/?project=core&project=docs": "The parameter project is given 2 times",
		"/?projet=core":               `This page takes only project; &#34;projet&#34; is not one.`,
		"/?project=%zz":               "The address&#39;s query is malformed",
		"/?project=core;x=1":          "The address&#39;s query is malformed",
		"/tasks/T-0001?x=1":           `This page takes only page; &#34;x&#34; is not one.`,
		"/tasks/T-0001?page=0":        "the page must be a positive integer",
		"/tasks/T-0001?page=-1":       "the page must be a positive integer",
		"/tasks/T-0001?page=1.5":      "the page must be a positive integer",
		"/tasks/T-0001?page=" + huge:  "the page must be a positive integer",
		"/tasks/T-0001?page=1&page=2": "The parameter page is given 2 times",
		"/sessions?offset=-1":         `This page takes no parameter; &#34;offset&#34; is not one.`,
		"/sessions/A-0001?x":          `This page takes no parameter`,
		"/ledger?verify=1":            `This page takes no parameter`,
		"/ledger/verify?x=1":          `This page takes no parameter; "x" is not one.`,
		"/proofs/1?sise=3":            `This page takes only size; "sise" is not one.`,
		"/proofs/1?size=3&size=4":     "The parameter size is given 2 times",
		"/proofs/1?size=" + huge:      "the size must be a positive integer",
		"/proofs/" + huge:             "the seq must be a positive integer",
		"/proofs/-1":                  "the seq must be a positive integer",
		"/proofs/1?size=1.0":          "the size must be a positive integer",
		"/proofs/7?size=3":            "seq 7 is beyond the tree size 3",
		"/proofs/1?size=%":            "The address's query is malformed",
	} {
		res, body := f.get(t, path, testToken)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, says) {
			t.Errorf("%s: status %d %.300q, want 400 saying %q", path, res.StatusCode, body, says)
		}
	}
}

// TestProofDownload: a proof file for an event checks, with audit's proof
// checker (what `logbook check-proof` runs), against the ledger's root of
// the size asked for; out-of-range requests are refused.
func TestProofDownload(t *testing.T) {
	f := newFixture(t)
	var head uint64
	roots := map[uint64]ledger.Hash{}
	err := f.store.View(func(tx *boltstore.Tx) error {
		head = tx.Head().Seq
		for _, size := range []uint64{head, 10} {
			r, err := tx.Root(size)
			roots[size] = r
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ seq, size uint64 }{{1, head}, {7, 10}, {head, head}, {10, 10}} {
		q := "/proofs/" + itoa(c.seq) + "?size=" + itoa(c.size)
		res, body := f.get(t, q, testToken)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d %s", q, res.StatusCode, body)
		}
		if cd := res.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") {
			t.Errorf("%s: Content-Disposition %q", q, cd)
		}
		p, err := audit.DecodeProof([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if p.Seq != c.seq {
			t.Errorf("%s: proof of seq %d", q, p.Seq)
		}
		if _, err := p.Check(audit.Trusted{Root: roots[c.size], Size: c.size, SizeKnown: true}); err != nil {
			t.Errorf("%s: %v", q, err)
		}
		// The same proof against another root must not hold.
		other := roots[head]
		if c.size == head {
			other = roots[10]
		}
		if _, err := p.Check(audit.Trusted{Root: other}); err == nil {
			t.Errorf("%s: the proof holds against a wrong root", q)
		}
	}
	// Without a size: the whole ledger.
	_, body := f.get(t, "/proofs/3", testToken)
	if p, err := audit.DecodeProof([]byte(body)); err != nil || p.TreeSize != head {
		t.Errorf("default size: %v, %v", p, err)
	}
	// Each refusal says what is wrong: a size beyond the head was "no
	// event 1 in a ledger of 99 events" of a ledger of fewer, and a size of
	// 0 ("must be a positive integer") was taken as the whole ledger.
	for q, want := range map[string]struct {
		code int
		says string
	}{
		"/proofs/0": {400, "the seq must be a positive integer"}, "/proofs/x": {400, "the seq must be a positive integer"},
		"/proofs/1?size=-1": {400, "the size must be a positive integer"}, "/proofs/1?size=0": {400, "the size must be a positive integer"},
		"/proofs/1?size=":         {400, "the size must be a positive integer"},
		"/proofs/" + itoa(head+1): {404, "seq " + itoa(head+1) + " is beyond the tree size " + itoa(head)},
		"/proofs/5?size=4":        {400, "seq 5 is beyond the tree size 4"},
		"/proofs/" + itoa(head+2) + "?size=" + itoa(head+1): {400, "is beyond the tree size"},
		"/proofs/1?size=" + itoa(head+1):                    {404, "size " + itoa(head+1) + " is beyond the head " + itoa(head)},
	} {
		if res, body := f.get(t, q, testToken); res.StatusCode != want.code || !strings.Contains(body, want.says) {
			t.Errorf("%s: status %d %q, want %d %q", q, res.StatusCode, body, want.code, want.says)
		}
	}
}

// TestVerifyStream runs "verify now" and reads its Server-Sent Events:
// progress through both phases, then the report of a sound ledger whose
// root is the ledger's.
func TestVerifyStream(t *testing.T) {
	f := newFixture(t)
	var root ledger.Hash
	var size uint64
	err := f.store.View(func(tx *boltstore.Tx) error {
		size = tx.Head().Seq
		var err error
		root, err = tx.Root(size)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/ledger/verify", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := readEvents(t, bufio.NewScanner(res.Body))
	if len(events) < 3 {
		t.Fatalf("events %v", events)
	}
	phases := map[int]bool{}
	for _, e := range events[:len(events)-1] {
		if e.name != "progress" {
			t.Fatalf("event %q before the end", e.name)
		}
		var p progress
		if err := json.Unmarshal([]byte(e.data), &p); err != nil {
			t.Fatal(err)
		}
		if p.Total < size || p.Done > p.Total {
			t.Errorf("progress %+v of a ledger of %d", p, size)
		}
		phases[p.Phase] = true
	}
	if !phases[1] || !phases[2] {
		t.Errorf("phases %v, want 1 and 2", phases)
	}
	last := events[len(events)-1]
	if last.name != "report" {
		t.Fatalf("last event %s: %s", last.name, last.data)
	}
	var rep audit.Report
	if err := json.Unmarshal([]byte(last.data), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Size != size || rep.Root != root || rep.Projections == nil || !rep.Projections.Checked {
		t.Errorf("report %s", last.data)
	}
}

type sse struct{ name, data string }

func readEvents(t *testing.T, sc *bufio.Scanner) []sse {
	t.Helper()
	var out []sse
	var cur sse
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			out = append(out, cur)
			cur = sse{}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPagesRefuseIncompleteProjections: after a rebuild was cut between the
// drop of the live projections and the end of the copy, no page shows what
// is left as a smaller ledger (an empty board, "no task T-0001"): each is
// the error page.
func TestPagesRefuseIncompleteProjections(t *testing.T) {
	f := newFixture(t)
	if err := f.store.Update(func(tx *boltstore.Tx) error { return tx.DropSpaces() }); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/tasks/T-0001", "/sessions", "/sessions/A-0001", "/ledger"} {
		if res, body := f.get(t, path, testToken); res.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "could not be read") {
			t.Errorf("%s without projections: status %d, want the error page (500)", path, res.StatusCode)
		}
	}
}

// TestNoBidiControls: no page carries a bidirectional control character
// from the ledger's text: each is a space, as in the terminal views. An
// agent's override made "approved: \u202eon\u202c" read "approved: no", and one
// left open in a label or an assignee reordered the text after it (the
// next label, the rest of the line).
func TestNoBidiControls(t *testing.T) {
	isBidi := func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }
	for name := range parsePages() {
		raw, _ := templateFS.ReadFile("templates/" + name + ".html")
		if strings.ContainsFunc(string(raw), isBidi) {
			t.Errorf("the template %s holds a bidirectional control: the console would blank it", name)
		}
	}
	f := newFixture(t)
	for _, p := range pages {
		path := p.path
		res, body := f.get(t, path, testToken)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", path, res.StatusCode)
		}
		if i := strings.IndexFunc(body, isBidi); i >= 0 {
			t.Errorf("%s: a bidirectional control in %q", path, body[max(0, i-40):min(len(body), i+40)])
		}
	}
	_, body := f.get(t, "/tasks/T-0004", testToken)
	for _, w := range []string{"approved:  on  amount 100", "alice ", "a" + strings.Repeat(" ", len([]rune(bidiText))) + ", b"} {
		if !strings.Contains(body, w) {
			t.Errorf("the task page lacks %q", w)
		}
	}
}

// TestVerifyEventNoBidi: a verify event carries no bidirectional control
// from the ledger's text (a problem's detail quotes it), and stays JSON.
func TestVerifyEventNoBidi(t *testing.T) {
	var buf bytes.Buffer
	if err := writeEvent(&buf, "report", map[string]string{"detail": "approved: \u202eon\u202c amount 100"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.ContainsFunc(out, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }) {
		t.Errorf("the event carries a bidirectional control: %q", out)
	}
	data, ok := strings.CutPrefix(strings.TrimSuffix(out, "\n\n"), "event: report\ndata: ")
	var v map[string]string
	if !ok || json.Unmarshal([]byte(data), &v) != nil || v["detail"] != "approved:  on  amount 100" {
		t.Errorf("event %q: %v", out, v)
	}
}

// TestEveryPageWaitsItsTurn: with every turn taken, each page of the
// fixture (and the proof download) is answered 503, so none is built
// outside the bound.
func TestEveryPageWaitsItsTurn(t *testing.T) {
	defer func(d time.Duration) { renderWait = d }(renderWait)
	renderWait = 50 * time.Millisecond
	f := newFixture(t)
	for range maxRendering {
		f.console.rendering <- struct{}{}
	}
	for _, path := range append(slices.Collect(func(yield func(string) bool) {
		for _, p := range pages {
			yield(p.path)
		}
	}), "/proofs/1") {
		if res, _ := f.get(t, path, testToken); res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s with every turn taken: %d, want 503", path, res.StatusCode)
		}
	}
	for range maxRendering {
		<-f.console.rendering
	}
	if res, body := f.get(t, "/proofs/1", testToken); res.StatusCode != http.StatusOK {
		t.Errorf("/proofs/1 in its turn: %d\n%s", res.StatusCode, body)
	}
}

// TestPagesBuiltAtMostFewAtOnce: at most maxRendering pages are built at
// once; the rest wait their turn and, past renderWait, are answered 503
// with Retry-After (100 board loads at once took the server to 5.9 GB).
func TestPagesBuiltAtMostFewAtOnce(t *testing.T) {
	defer func(d time.Duration) { renderWait = d }(renderWait)
	renderWait = 200 * time.Millisecond
	c := &console{rendering: make(chan struct{}, maxRendering)}
	var building, most atomic.Int32
	release := make(chan struct{})
	h := c.bounded(func(w http.ResponseWriter, r *http.Request) {
		n := building.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		building.Add(-1)
	})
	const loads = maxRendering + 3
	codes := make(chan int, loads)
	for range loads {
		go func() {
			rec := httptest.NewRecorder()
			h(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			codes <- rec.Code
		}()
	}
	busy := 0
	for range loads - maxRendering {
		if code := <-codes; code == http.StatusServiceUnavailable {
			busy++
		}
	}
	close(release)
	for range maxRendering {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a page built in its turn: %d", code)
		}
	}
	if most.Load() != maxRendering || busy != loads-maxRendering {
		t.Errorf("%d built at once (want %d), %d answered 503 (want %d)", most.Load(), maxRendering, busy, loads-maxRendering)
	}
}

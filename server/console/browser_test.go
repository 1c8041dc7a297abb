package console

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	cdpage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium is the browser the test drives: Debian's chromium package.
const chromium = "/usr/bin/chromium"

// TestBrowser loads every page of a populated ledger in headless Chromium:
// each shows its content with no console error, no exception and no CSP
// violation; the hostile title is text and no dialog ever opens; "verify
// now" streams to an OK. Screenshots go to $LOGBOOK_SCREENSHOTS (default
// bin/screenshots). Run it with `make test-browser`.
func TestBrowser(t *testing.T) {
	if os.Getenv("LOGBOOK_BROWSER") == "" {
		t.Skip("the browser test runs with LOGBOOK_BROWSER=1 (make test-browser)")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("%s is absent: install it with apt-get install -y chromium", chromium)
	}
	shots := os.Getenv("LOGBOOK_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join("..", "..", "bin", "screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)

	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1440, 1000))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute) // a hung browser fails the test, it does not hang it
	defer cancel()

	var mu sync.Mutex
	var problems []string
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning || ev.Type == runtime.APITypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				problem("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			problem("exception: %s", ev.ExceptionDetails.Error())
		case *log.EventEntryAdded: // CSP violations, failed loads
			if ev.Entry.Level == log.LevelError || ev.Entry.Level == log.LevelWarning {
				problem("log %s: %s (%s)", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
			}
		case *cdpage.EventJavascriptDialogOpening:
			problem("a dialog opened: %q", ev.Message)
			go chromedp.Run(ctx, cdpage.HandleJavaScriptDialog(false))
		}
	})
	check := func(name string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("%s: %s", name, p)
		}
		problems = nil
	}

	// Log in through the address: the token must be gone from it at once.
	var landed string
	if err := chromedp.Run(ctx, log.Enable(),
		chromedp.Navigate(f.srv.URL+"/?token="+testToken),
		chromedp.WaitVisible("footer"),
		chromedp.Location(&landed)); err != nil {
		t.Fatal(err)
	}
	if landed != f.srv.URL+"/" {
		t.Errorf("after login the address is %q", landed)
	}
	check("login")

	for _, p := range pages {
		name := strings.Trim(strings.NewReplacer("/", "-", "?", "-", "=", "-").Replace(p.path), "-")
		if name == "" {
			name = "board"
		}
		var text string
		var shot []byte
		var wider bool
		err := chromedp.Run(ctx,
			chromedp.Navigate(f.srv.URL+p.path),
			chromedp.WaitVisible("footer"),
			chromedp.Text("main", &text, chromedp.ByQuery),
			chromedp.Evaluate(`document.documentElement.scrollWidth > document.documentElement.clientWidth`, &wider),
			chromedp.FullScreenshot(&shot, 100))
		if err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		if wider {
			t.Errorf("%s: the page is wider than the window (text without a space does not wrap)", p.path)
		}
		for _, w := range p.want {
			if !strings.Contains(text, strings.ReplaceAll(w, "\n", " ")) && !strings.Contains(text, w) {
				t.Errorf("%s: the page does not show %q", p.path, w)
			}
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
		check(p.path)
	}

	// The hostile title is a card's text; the only script is the console's.
	var title string
	var scripts int
	err := chromedp.Run(ctx,
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible("footer"),
		chromedp.Text(`a[href="/tasks/T-0004"] .title`, &title, chromedp.ByQuery),
		chromedp.Evaluate(`document.scripts.length`, &scripts))
	if err != nil {
		t.Fatal(err)
	}
	if title != hostileTitle || scripts != 1 {
		t.Errorf("hostile title shown as %q with %d scripts in the page", title, scripts)
	}
	check("hostile title")

	// Verify now: progress streams in, then the report of a sound ledger.
	var status, root, shownRoot string
	var shot []byte
	err = chromedp.Run(ctx,
		chromedp.Navigate(f.srv.URL+"/ledger"),
		chromedp.WaitVisible("#verify"),
		chromedp.Text("#root", &root, chromedp.ByQuery),
		chromedp.Click("#verify", chromedp.ByQuery),
		chromedp.WaitVisible("#verify-status.ok", chromedp.ByQuery),
		chromedp.Text("#verify-status", &status, chromedp.ByQuery),
		chromedp.Text("#verify-report dd:nth-of-type(3)", &shownRoot, chromedp.ByQuery),
		chromedp.FullScreenshot(&shot, 100))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(status, "OK") || shownRoot != root {
		t.Errorf("verify: status %q, root %q, want root %q", status, shownRoot, root)
	}
	if err := os.WriteFile(filepath.Join(shots, "ledger-verified.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	check("verify now")

	// Log out with the button, back in with the form.
	var out, in string
	err = chromedp.Run(ctx,
		chromedp.Click(".logout button", chromedp.ByQuery),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.Location(&out),
		chromedp.SendKeys("#token", testToken, chromedp.ByQuery),
		chromedp.Submit("#token", chromedp.ByQuery),
		chromedp.WaitVisible(".board", chromedp.ByQuery),
		chromedp.Location(&in))
	if err != nil {
		t.Fatal(err)
	}
	if out != f.srv.URL+"/login" || in != f.srv.URL+"/" {
		t.Errorf("logged out to %q, back in to %q", out, in)
	}
	check("log out and in")
	t.Logf("screenshots in %s", shots)
}

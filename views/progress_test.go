package views

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeProgress is a progress whose clock the test moves.
func fakeProgress(bar bool) (*Progress, *bytes.Buffer, *time.Time) {
	var b bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &Progress{w: &b, what: "verify", bar: bar, width: 80, now: func() time.Time { return now }}
	p.start, p.last = now, now
	return p, &b, &now
}

// TestProgressLines: away from a terminal, a line at most once a second
// and the total at the end; a run that ends within a second prints nothing.
func TestProgressLines(t *testing.T) {
	p, b, now := fakeProgress(false)
	*now = now.Add(500 * time.Millisecond)
	p.Report(10, 100)
	*now = now.Add(600 * time.Millisecond)
	p.Report(20, 100)
	*now = now.Add(100 * time.Millisecond)
	p.Report(30, 100)
	p.Report(100, 100)
	p.Report(100, 100) // the total again (verify's last checks): said once
	*now = now.Add(2 * time.Second)
	p.Report(100, 100)
	if want := "verify: 20/100 (20%)\nverify: 100/100 (100%)\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	quick, qb, _ := fakeProgress(false)
	quick.Report(5, 100)
	quick.Report(100, 100)
	if qb.Len() != 0 {
		t.Errorf("a run shorter than a second printed %q", qb.String())
	}
}

// TestProgressBar: on a terminal, frames redraw one line ("\r", no
// newline) and the finished bar ends it; end() closes a bar left half-way.
func TestProgressBar(t *testing.T) {
	p, b, now := fakeProgress(true)
	for _, done := range []uint64{25, 50} {
		*now = now.Add(time.Second)
		p.Report(done, 100)
	}
	*now = now.Add(10 * time.Millisecond)
	p.Report(60, 100) // within 100 ms of the last frame: not drawn
	p.Report(100, 100)
	frames := strings.Split(b.String(), "\r")
	if len(frames) != 4 || frames[0] != "" || !strings.HasSuffix(b.String(), "\n") || strings.Count(b.String(), "\n") != 1 {
		t.Fatalf("want 3 frames on one line ended by a newline, got %q", b.String())
	}
	for _, f := range frames[1:] {
		if n := utf8.RuneCountInString(strings.TrimSuffix(f, "\n")); n > 79 {
			t.Errorf("frame of %d columns on an 80-column terminal: %q", n, f)
		}
	}
	if !strings.Contains(frames[3], "100%  100/100") || !strings.Contains(frames[1], " 25%  25/100") {
		t.Errorf("frames do not show the counts: %q", frames)
	}

	half, hb, hnow := fakeProgress(true)
	*hnow = hnow.Add(time.Second)
	half.Report(40, 100)
	half.end()
	half.end()
	if !strings.HasPrefix(hb.String(), "\r") || strings.Count(hb.String(), "\n") != 1 || !strings.HasSuffix(hb.String(), "\n") {
		t.Errorf("end after a half-drawn bar: want its line ended once, got %q", hb.String())
	}
}

// TestBarLine pins one frame: the bar's cells fill in proportion, then the
// percentage, counts, rate and time left.
func TestBarLine(t *testing.T) {
	got := barLine("verify", 400000, 1000000, 2*time.Second, 80)
	want := "verify  [████████████░░░░░░░░░░░░░░░░░░░░]  40%  400000/1000000  200k/s  ETA 3s"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if narrow := barLine("snapshot: projections", 5, 10, time.Second, 30); utf8.RuneCountInString(narrow) > 29 {
		t.Errorf("frame wider than a 30-column terminal: %q", narrow)
	}
}

// TestProgressNotATerminal: a file or a pipe gets lines, never a bar.
func TestProgressNotATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if NewProgress(f, "verify").bar || NewProgress(&bytes.Buffer{}, "verify").bar {
		t.Error("a bar for a writer that is no terminal")
	}
}

// TestProgressBarPhases: when a run moves to its next phase (another total,
// or counting from the start again), the last frame of the phase before
// stays on its own line and the rate is measured afresh.
func TestProgressBarPhases(t *testing.T) {
	p, b, now := fakeProgress(true)
	*now = now.Add(10 * time.Second)
	p.Report(50, 200) // 5/s
	*now = now.Add(time.Second)
	p.Report(10, 100) // the next phase starts
	*now = now.Add(2 * time.Second)
	p.Report(50, 100) // 50 in its first 2 s
	frames := strings.Split(b.String(), "\r")
	if len(frames) != 4 || !strings.HasSuffix(frames[1], "\n") || strings.Contains(frames[2]+frames[3], "\n") {
		t.Fatalf("want the first phase's frame ended by a newline, then the second's: %q", b.String())
	}
	if !strings.Contains(frames[1], "  5/s") || !strings.Contains(frames[3], "  25/s") {
		t.Errorf("rates: want 5/s then 25/s, got %q", frames)
	}
}

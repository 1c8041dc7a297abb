package views

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress reports how far a long run (verify, rebuild, snapshot, migrate)
// is, on stderr. On a terminal it is a bar redrawn in place, at most ten times a
// second; anywhere else (a log file, CI) it is a plain line
// "what: done/total (p%)" at most once a second. Either way a run shorter
// than the first interval prints nothing.
type Progress struct {
	mu     sync.Mutex
	w      io.Writer
	what   string
	bar    bool // redraw a bar in place (w is a terminal)
	width  int  // of the terminal
	now    func() time.Time
	start  time.Time
	last   time.Time
	shown  bool // something was printed
	inLine bool // a bar is on the screen without its newline
	done   uint64
	total  uint64 // of the phase being reported
	// reported: done and total hold the last report's.
	reported bool
	printed  [2]uint64 // done and total last shown
}

// openBars are the bars drawn and not ended, so that EndBars can end their
// line before anything else is printed.
var openBars struct {
	sync.Mutex
	list []*Progress
}

// NewProgress reports on w the progress of what.
func NewProgress(w io.Writer, what string) *Progress {
	p := &Progress{w: w, what: what, now: time.Now, width: DefaultWidth}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = true
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 20 {
			p.width = width
		}
		openBars.Lock()
		openBars.list = append(openBars.list, p)
		openBars.Unlock()
	}
	p.start, p.last = p.now(), p.now()
	return p
}

// Report is a progress callback: done of total.
func (p *Progress) Report(done, total uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.reported && (done < p.done || total != p.total) {
		// A new phase (verify checks the chain, then the projections):
		// keep the last frame of the previous one on its own line.
		if p.inLine {
			fmt.Fprintln(p.w)
			p.inLine = false
		}
		p.start = now
	}
	p.done, p.total, p.reported = done, total, true
	every := time.Second
	if p.bar {
		every = 100 * time.Millisecond
	}
	finished := total > 0 && done >= total
	// The end of a run that showed progress is always shown, so the last
	// thing on screen is its total.
	if now.Sub(p.last) < every && !(p.shown && finished) {
		return
	}
	if p.shown && p.printed == [2]uint64{done, total} {
		return // said already (verify's last checks report the total again)
	}
	p.last, p.shown, p.printed = now, true, [2]uint64{done, total}
	if !p.bar {
		fmt.Fprintf(p.w, "%s: %d/%d (%.0f%%)\n", p.what, done, total, percent(done, total))
		return
	}
	line := barLine(p.what, done, total, now.Sub(p.start), p.width)
	if finished {
		fmt.Fprintf(p.w, "\r%s\n", line)
		p.inLine = false
		return
	}
	fmt.Fprintf(p.w, "\r%s", line)
	p.inLine = true
}

// end finishes a bar's line, if one is on the screen.
func (p *Progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inLine {
		fmt.Fprintln(p.w)
		p.inLine = false
	}
}

// EndBars ends the line of every bar still drawn: a command that failed
// half-way leaves its error on a line of its own.
func EndBars() {
	openBars.Lock()
	defer openBars.Unlock()
	for _, p := range openBars.list {
		p.end()
	}
	openBars.list = nil
}

func percent(done, total uint64) float64 {
	if total == 0 {
		return 100
	}
	return 100 * float64(done) / float64(total)
}

// barLine is one frame of a bar, at most width-1 columns (the last column
// of a terminal wraps on some terminals):
//
//	verify  [████████░░░░░░░░░░░░]  41%  410000/1000000  205k/s  ETA 3s
func barLine(what string, done, total uint64, elapsed time.Duration, width int) string {
	pct := percent(done, total)
	tail := fmt.Sprintf(" %3.0f%%  %d/%d", pct, done, total)
	if elapsed > 0 && done > 0 {
		r := float64(done) / elapsed.Seconds()
		tail += "  " + humanRate(r) + "/s"
		if total > done {
			eta := time.Duration(float64(total-done) / r * float64(time.Second))
			tail += "  ETA " + eta.Round(time.Second).String()
		}
	}
	cells := min(width-1-len(what)-len(tail)-4, 40)
	if cells < 5 {
		return cut(what+":"+tail, width-1)
	}
	full := min(int(float64(cells)*pct/100), cells)
	return what + "  [" + strings.Repeat("█", full) + strings.Repeat("░", cells-full) + "]" + tail
}

// humanRate is r with a k or M suffix.
func humanRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.0fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

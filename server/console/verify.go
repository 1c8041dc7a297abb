package console

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/audit/boltaudit"
)

// progress is one "progress" event of the verification stream: Done of
// Total units of work (events, Merkle nodes) in a phase. Phase 1 is the
// chain and the Merkle tree, read once for the refold of the projections
// too; phase 2 the refolded projections compared with the stored ones.
type progress struct {
	Phase int    `json:"phase"`
	Done  uint64 `json:"done"`
	Total uint64 `json:"total"`
}

// verify runs `logbook verify`'s checks (boltaudit.Verify, projections
// included) on the ledger the server holds and streams them as
// Server-Sent Events: "progress" events, then one "report" (the JSON of
// `logbook verify --json`) or one "failure" (the check could not run). A
// client that goes away cancels the run.
func (c *console) verify(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.query(w, r); !ok {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no") // a proxy must not hold the stream back
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex // Verify may report progress from its reading goroutine
	send := func(event string, v any) {
		mu.Lock()
		defer mu.Unlock()
		if err := writeEvent(w, event, v); err != nil {
			c.log.Error("console: verify event", "err", err)
			return
		}
		fl.Flush()
	}
	if !c.verifying.TryLock() {
		send("failure", map[string]string{"error": "a verification is already running; try again when it is done"})
		return
	}
	defer c.verifying.Unlock()

	// Report each percent once, so a long ledger gives ~200 events, not
	// one per chunk.
	var last progress
	lastPct := -1
	report := func(done, total uint64) {
		if last.Phase == 0 || done < last.Done || total != last.Total {
			last.Phase++
			lastPct = -1
		}
		last.Done, last.Total = done, total
		pct := 100
		if total > 0 {
			pct = int(done * 100 / total)
		}
		if pct != lastPct {
			lastPct = pct
			send("progress", last)
		}
	}
	rep, err := boltaudit.Verify(r.Context(), c.opts.Store, boltaudit.Options{Projections: true, ScratchDir: c.opts.ScratchDir, Progress: report})
	if err != nil {
		if r.Context().Err() == nil {
			c.log.Error("console: verify", "err", err)
		}
		send("failure", map[string]string{"error": "the verification could not run; the cause is in the server's log"})
		return
	}
	send("report", rep)
}

// writeEvent writes v as one Server-Sent Event, its bidirectional controls
// blanked as in the pages (audit.NoBidi): a problem's detail may quote the
// ledger's text, and the page shows it as it comes.
func writeEvent(w io.Writer, event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, audit.NoBidi(b))
	return err
}

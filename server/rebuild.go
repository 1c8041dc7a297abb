package server

import (
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// Rebuilt is what Rebuild did, as logbook rebuild --json prints it.
type Rebuilt struct {
	Events     uint64  `json:"events"` // folded: seq 1..events
	Version    uint64  `json:"version"`
	MS         float64 `json:"ms"`
	EventsPerS float64 `json:"events_per_s"`
	FreeMS     float64 `json:"free_ms"` // emptying the trash an older binary's rebuilds left, after the refold
	// HeldMS is how long the ledger file was held (other processes kept
	// out) to put the rebuilt projections in place of the old ones.
	HeldMS float64 `json:"held_ms"`
}

// Rebuild refolds every projection of l from the log, in chunks, so
// agents keep working meanwhile, and puts them in place of the old ones in
// one short hold of the file (commands.Rebuild, forced), then frees what
// an older binary's rebuilds left in the trash, in short transactions.
// Projections of a newer binary are projections.ErrNewerVersion.
func Rebuild(l *boltstore.Store, opts projections.RebuildOptions) (Rebuilt, error) {
	var res Rebuilt
	start := time.Now()
	rb, err := commands.Rebuild(l, projections.RebuildOptions{Force: true, PastHead: opts.PastHead, Progress: opts.Progress})
	if err != nil {
		return res, err
	}
	elapsed := time.Since(start)
	res.HeldMS = millis(rb.Held)
	if err := l.EmptyTrash(); err != nil {
		return res, err
	}
	res.FreeMS, res.MS = millis(time.Since(start)-elapsed), millis(elapsed)
	err = l.View(func(tx *boltstore.Tx) (err error) {
		res.Version, res.Events, err = projections.State(tx)
		return err
	})
	if elapsed > 0 {
		res.EventsPerS = float64(res.Events) / elapsed.Seconds()
	}
	return res, err
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

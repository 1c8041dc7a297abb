package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// proof downloads the inclusion proof of event {seq} in the ledger of
// ?size= events (default: all of them now), the file `logbook prove
// inclusion` writes and `logbook check-proof` checks.
func (c *console) proof(w http.ResponseWriter, r *http.Request) {
	q, ok := c.query(w, r, "size")
	if !ok {
		return
	}
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		c.badRequest(w, r, "the seq must be a positive integer")
		return
	}
	var size uint64
	if q.Has("size") {
		if size, err = strconv.ParseUint(q.Get("size"), 10, 64); err != nil || size == 0 {
			c.badRequest(w, r, "the size must be a positive integer")
			return
		}
		if seq > size {
			// Whatever the ledger holds: no tree of size events has
			// event seq.
			c.badRequest(w, r, fmt.Sprintf("seq %d is beyond the tree size %d: a proof of event %[1]d is in a tree of at least %[1]d events", seq, size))
			return
		}
	}
	var p *audit.Proof
	err = c.opts.Store.View(func(tx *boltstore.Tx) error {
		if !q.Has("size") {
			size = tx.Head().Seq
		}
		var err error
		p, err = boltaudit.Prove(tx, boltaudit.ProofRequest{Kind: audit.ProofInclusion, Seq: seq, Size: size, SizeKnown: true})
		return err
	})
	if oe := (*audit.OptionError)(nil); errors.As(err, &oe) {
		// The request was well formed (checked above) but asks for
		// events the ledger does not hold (yet): "size 99 is beyond the
		// head 45", "seq 46 is beyond the tree size 45".
		c.notFound(w, r, "no such proof: "+oe.Error())
		return
	}
	var raw []byte
	if err == nil {
		raw, err = p.Encode()
	}
	if err != nil {
		c.log.Error("console: prove", "seq", seq, "size", size, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="leaf-%d-size-%d.json"`, seq, size))
	w.Write(raw)
}

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
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		http.Error(w, "the seq must be a positive integer", http.StatusBadRequest)
		return
	}
	var size uint64
	q := r.URL.Query()
	if q.Has("size") {
		if size, err = strconv.ParseUint(q.Get("size"), 10, 64); err != nil || size == 0 {
			http.Error(w, "the size must be a positive integer", http.StatusBadRequest)
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
		// "size 99 is beyond the head 45", "seq 9 is beyond the tree size 4"
		http.Error(w, "no such proof: "+oe.Error(), http.StatusNotFound)
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

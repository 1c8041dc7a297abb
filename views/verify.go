package views

import (
	"fmt"
	"io"

	"github.com/logbook-dev/logbook/audit"
)

// VerifyReport prints what logbook verify found: "ok: …" with the
// projections and checkpoint checked, or "FAIL" and the first problem.
func VerifyReport(w io.Writer, out *audit.Report) {
	if p := out.Problem; !out.OK {
		fmt.Fprintf(w, "FAIL %v\n", p)
		if p.Want != nil && p.Got != nil {
			fmt.Fprintf(w, "  want %s\n  got  %s\n", p.Want, p.Got)
		}
		return
	}
	fmt.Fprintf(w, "ok: %s, head %s, root %s, %s (%.0f events/s)\n",
		plural(int(out.Size), "event"), out.Head, out.Root, plural(int(out.Nodes), "Merkle node"), out.Timing.ChainEventsPerS)
	if p := out.Projections; p != nil {
		if p.Checked {
			fmt.Fprintf(w, "projections: match a refold of the log (%d keys, at seq %d, fingerprint %s)\n", p.ComparedKeys, p.AppliedSeq, p.Fingerprint)
		} else {
			fmt.Fprintf(w, "projections: not compared: %s\n", p.Note)
		}
	}
	if c := out.Checkpoint; c != nil {
		fmt.Fprintf(w, "checkpoint: %s size %d root %s: the ledger extends it\n", c.Origin, c.Size, c.Root)
	}
}

package views

import (
	"io"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/domain"
)

// VerifyReport prints what logbook verify found: "ok: …" with the
// projections and checkpoint checked, or "FAIL" and the first problem.
func VerifyReport(w io.Writer, out *audit.Report) {
	s := &Screen{W: w}
	if p := out.Problem; !out.OK {
		s.printf("FAIL %s\n", error(p))
		if p.Want != nil && p.Got != nil {
			s.printf("  want %s\n  got  %s\n", p.Want, p.Got)
		}
		return
	}
	s.printf("ok: %s, head %s, root %s, %s (%.0f events/s)\n",
		domain.Plural(int(out.Size), "event"), out.Head, out.Root, domain.Plural(int(out.Nodes), "Merkle node"), out.Timing.ChainEventsPerS)
	if p := out.Projections; p != nil {
		if p.Checked {
			s.printf("projections: match a refold of the log (%d keys, at seq %d, fingerprint %s)\n", p.ComparedKeys, p.AppliedSeq, p.Fingerprint)
		} else {
			s.printf("projections: not compared: %s\n", p.Note)
		}
	}
	if c := out.Checkpoint; c != nil {
		s.printf("checkpoint: %s size %d root %s: the ledger extends it\n", c.Origin, c.Size, c.Root)
	}
}

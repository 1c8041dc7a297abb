package projections

import (
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

const (
	spFindings = "findings" // finding number → Finding

	counterFinding = "counter.finding"
)

// Finding is a recorded finding; it never changes once recorded. Hash is
// the hash of the event that recorded it.
type Finding struct {
	events.FindingRecorded
	Hash       string `json:"hash"`
	RecordedAt string `json:"recorded_at"`
	RecordedBy string `json:"recorded_by"`
	Seq        uint64 `json:"seq"`
}

func applyFindingRecorded(f *folder, r ledger.Record) error {
	var p events.FindingRecorded
	if err := decode(r, &p); err != nil {
		return err
	}
	fd := Finding{FindingRecorded: p, Hash: r.Hash.String(), RecordedAt: FormatTime(r.Time), RecordedBy: r.Actor, Seq: r.Seq}
	if _, err := putNumbered(f, domain.FindingPrefix, counterFinding, spFindings, p.FindingID, &fd); err != nil {
		return err
	}
	return nil // its index entry: indexEvent
}

// findingDoc is what the knowledge index holds of a finding.
func findingDoc(r ledger.Record, p *events.FindingRecorded) search.Doc {
	return search.Doc{ID: p.FindingID, Kind: search.Finding, Project: p.Project, Author: r.Actor, Seq: r.Seq, Hash: r.Hash,
		Fields: []search.Field{{Name: "summary", Text: p.Summary}, {Name: "details", Text: p.Details}, {Name: "files", Text: joinLines(p.Files)}}}
}

// NextFindingID is the id the next recorded finding gets.
func NextFindingID(tx *boltstore.Tx) (string, error) {
	n, err := nextNumber(tx, counterFinding)
	return domain.FormatID(domain.FindingPrefix, n), err
}

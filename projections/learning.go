package projections

import (
	"encoding/binary"
	"fmt"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

const (
	spLearnings     = "learnings"      // learning number → Learning
	spLiveLearnings = "live_learnings" // project ‖ 0 ‖ learning number → its shingles: the learnings not superseded

	counterLearning = "counter.learning"
)

// Learning is a recorded learning. SupersededBy is the id of the learning
// that replaced it ("" while it is live), SupersededSeq the seq of the
// event that said so.
type Learning struct {
	events.LearningRecorded
	Hash          string `json:"hash"`
	RecordedAt    string `json:"recorded_at"`
	RecordedBy    string `json:"recorded_by"`
	Seq           uint64 `json:"seq"`
	SupersededBy  string `json:"superseded_by,omitempty"`
	SupersededSeq uint64 `json:"superseded_seq,omitempty"`
}

func liveKey(project string, n uint64) []byte {
	return append(append([]byte(project), 0), u64(n)...)
}

func applyLearningRecorded(f *folder, r ledger.Record) error {
	var p events.LearningRecorded
	if err := decode(r, &p); err != nil {
		return err
	}
	l := Learning{LearningRecorded: p, Hash: r.Hash.String(), RecordedAt: FormatTime(r.Time), RecordedBy: r.Actor, Seq: r.Seq}
	n, err := putNumbered(f, domain.LearningPrefix, counterLearning, spLearnings, p.LearningID, &l)
	if err != nil {
		return err
	}
	live, err := f.tx.Space(spLiveLearnings)
	if err != nil {
		return err
	}
	// The shingles are kept packed so the near-duplicate check of the next
	// learning_record compares without decoding a record or re-reading text.
	shingles := domain.Shingles(domain.LearningText(p.Pattern, p.Context))
	packed := make([]byte, 0, 8*len(shingles))
	for _, sh := range shingles {
		packed = binary.BigEndian.AppendUint64(packed, sh)
	}
	if err := live.Put(liveKey(p.Project, n), packed); err != nil {
		return err
	}
	return nil // its index entry: indexEvent
}

// learningDoc is what the knowledge index holds of a learning.
func learningDoc(r ledger.Record, p *events.LearningRecorded) search.Doc {
	return search.Doc{ID: p.LearningID, Kind: search.Learning, Project: p.Project, Author: r.Actor, Seq: r.Seq, Hash: r.Hash,
		Fields: []search.Field{{Name: "pattern", Text: p.Pattern}, {Name: "context", Text: p.Context}, {Name: "tags", Text: joinLines(p.Tags)}}}
}

func applyLearningSuperseded(f *folder, r ledger.Record) error {
	var p events.LearningSuperseded
	if err := decode(r, &p); err != nil {
		return err
	}
	n, ok := domain.ParseID(domain.LearningPrefix, p.LearningID)
	if !ok {
		return fmt.Errorf("bad learning id %q", p.LearningID)
	}
	learnings, err := f.tx.Space(spLearnings)
	if err != nil {
		return err
	}
	var l Learning
	if ok, err := getRecord(learnings, u64(n), &l); err != nil || !ok {
		return fmt.Errorf("superseding unknown learning %q: %v", p.LearningID, err)
	}
	l.SupersededBy, l.SupersededSeq = p.By, r.Seq
	if err := putRecord(learnings, u64(n), &l); err != nil {
		return err
	}
	live, err := f.tx.Space(spLiveLearnings)
	if err != nil {
		return err
	}
	if err := live.Delete(liveKey(l.Project, n)); err != nil {
		return err
	}
	return nil // it leaves the index: indexEvent
}

// GetLearning reads a learning; ok is false if there is none with that id.
func GetLearning(tx *boltstore.Tx, id string) (l Learning, ok bool, err error) {
	ok, err = getNumbered(tx, domain.LearningPrefix, spLearnings, id, &l)
	return l, ok, err
}

// LiveLearnings calls fn with the id and the shingles (domain.Shingles of
// domain.LearningText) of each of the project's learnings that are not
// superseded, in ledger order, until fn returns false. shingles is only
// valid during the call.
func LiveLearnings(tx *boltstore.Tx, project string, fn func(id string, shingles []uint64) (bool, error)) error {
	live, err := tx.Space(spLiveLearnings)
	if err != nil {
		return err
	}
	var shingles []uint64
	prefix := append([]byte(project), 0)
	return live.Scan(prefix, false, func(k, v []byte) (bool, error) {
		if len(k) != len(prefix)+8 {
			return false, fmt.Errorf("live_learnings key %x: %w", k, boltstore.ErrDamaged)
		}
		if len(v)%8 != 0 {
			return false, fmt.Errorf("live learning %d: shingles of %d bytes", be64(k[len(k)-8:]), len(v))
		}
		shingles = shingles[:0]
		for i := 0; i < len(v); i += 8 {
			shingles = append(shingles, be64(v[i:]))
		}
		return fn(domain.FormatID(domain.LearningPrefix, be64(k[len(k)-8:])), shingles)
	})
}

// NextLearningID is the id the next recorded learning gets.
func NextLearningID(tx *boltstore.Tx) (string, error) {
	n, err := nextNumber(tx, counterLearning)
	return domain.FormatID(domain.LearningPrefix, n), err
}

package projections

import (
	"fmt"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

const (
	spLearnings     = "learnings"      // learning number → Learning
	spLiveLearnings = "live_learnings" // project ‖ 0 ‖ learning number → nothing: the learnings not superseded

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
	n, ok := domain.ParseID(domain.LearningPrefix, p.LearningID)
	if !ok {
		return fmt.Errorf("bad learning id %q", p.LearningID)
	}
	if err := seenNumber(f.tx, counterLearning, n); err != nil {
		return err
	}
	learnings, err := f.tx.Space(spLearnings)
	if err != nil {
		return err
	}
	l := Learning{LearningRecorded: p, Hash: r.Hash.String(), RecordedAt: FormatTime(r.Time), RecordedBy: r.Actor, Seq: r.Seq}
	if err := putRecord(learnings, u64(n), &l); err != nil {
		return err
	}
	live, err := f.tx.Space(spLiveLearnings)
	if err != nil {
		return err
	}
	return live.Put(liveKey(p.Project, n), nil)
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
	return live.Delete(liveKey(l.Project, n))
}

// GetLearning reads a learning; ok is false if there is none with that id.
func GetLearning(tx *boltstore.Tx, id string) (l Learning, ok bool, err error) {
	n, valid := domain.ParseID(domain.LearningPrefix, id)
	if !valid {
		return l, false, nil
	}
	learnings, err := tx.Space(spLearnings)
	if err != nil {
		return l, false, err
	}
	ok, err = getRecord(learnings, u64(n), &l)
	return l, ok, err
}

// LiveLearnings calls fn for the project's learnings that are not
// superseded, in ledger order, until fn returns false.
func LiveLearnings(tx *boltstore.Tx, project string, fn func(Learning) (bool, error)) error {
	live, err := tx.Space(spLiveLearnings)
	if err != nil {
		return err
	}
	learnings, err := tx.Space(spLearnings)
	if err != nil {
		return err
	}
	return live.Scan(append([]byte(project), 0), false, func(k, _ []byte) (bool, error) {
		var l Learning
		ok, err := getRecord(learnings, k[len(k)-8:], &l)
		if err == nil && !ok {
			err = fmt.Errorf("live learning %d missing from projection", be64(k[len(k)-8:]))
		}
		if err != nil {
			return false, err
		}
		return fn(l)
	})
}

// NextLearningID is the id the next recorded learning gets.
func NextLearningID(tx *boltstore.Tx) (string, error) {
	n, err := nextNumber(tx, counterLearning)
	return domain.FormatID(domain.LearningPrefix, n), err
}

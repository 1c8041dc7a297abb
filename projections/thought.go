package projections

import (
	"fmt"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

const (
	spThoughts        = "thoughts"         // thought number → Thought, its text left in its event
	spTaskThoughts    = "task_thoughts"    // task number ‖ chain position → thought number
	spSessionThoughts = "session_thoughts" // session number ‖ thought number → nothing

	counterThought = "counter.thought"
)

// Thought is a recorded thought. Hash is the hash of the event that
// recorded it (its Merkle leaf); PreviousHash is "" for a task's first.
type Thought struct {
	events.ThoughtRecorded
	Hash       string `json:"hash"`
	RecordedAt string `json:"recorded_at"`
	RecordedBy string `json:"recorded_by"`
	Seq        uint64 `json:"seq"`
}

func applyThoughtRecorded(f *folder, r ledger.Record) error {
	tx := f.tx
	var p events.ThoughtRecorded
	if err := decode(r, &p); err != nil {
		return err
	}
	// A thought is immutable and its event holds all of it: the projection
	// keeps what lists and chains need, and leaves the text (content, tests,
	// blockers, metadata) in the event, where reads find it by seq.
	th := Thought{ThoughtRecorded: p, Hash: r.Hash.String(), RecordedAt: FormatTime(r.Time), RecordedBy: r.Actor, Seq: r.Seq}
	th.Content, th.Branch, th.CommitSHA, th.TestsRun, th.Blockers, th.Metadata = "", "", "", nil, nil, ""
	n, err := putNumbered(f, domain.ThoughtPrefix, counterThought, spThoughts, p.ThoughtID, &th)
	if err != nil {
		return err
	}
	tn, valid := domain.ParseID(domain.TaskPrefix, p.TaskID)
	task, ok, err := f.task(tn)
	if err != nil || !ok || !valid {
		return fmt.Errorf("thought on unknown task %q: %v", p.TaskID, err)
	}
	task.Thoughts++
	if err := f.setTask(tn, task); err != nil {
		return err
	}
	chain, err := tx.Space(spTaskThoughts)
	if err != nil {
		return err
	}
	if err := chain.Put(key2(tn, p.ChainPosition), u64(n)); err != nil {
		return err
	}
	if p.SessionID != "" {
		sn, _ := domain.ParseID(domain.SessionPrefix, p.SessionID)
		bySession, err := tx.Space(spSessionThoughts)
		if err != nil {
			return err
		}
		if err := bySession.Put(key2(sn, n), nil); err != nil {
			return err
		}
	}
	return f.index(r, p.ThoughtID, search.Thought, task.Project, search.Field{Name: "content", Text: p.Content},
		search.Field{Name: "blockers", Text: joinLines(p.Blockers)})
}

func thoughtByNumber(tx *boltstore.Tx, n uint64) (Thought, error) {
	thoughts, err := tx.Space(spThoughts)
	if err != nil {
		return Thought{}, err
	}
	var th Thought
	ok, err := getRecord(thoughts, u64(n), &th)
	if err == nil && !ok {
		err = fmt.Errorf("thought %d missing from projection", n)
	}
	if err != nil {
		return th, err
	}
	withText(tx, &th)
	return th, nil
}

// withText fills in th's text from the event that recorded it. An event
// that no longer reads as that thought (a damaged ledger, which
// audit_verify_chain reports) leaves the text empty rather than fail the
// read.
func withText(tx *boltstore.Tx, th *Thought) {
	r, err := tx.Event(th.Seq)
	if err != nil || r.Type != events.TypeThoughtRecorded {
		return
	}
	var p events.ThoughtRecorded
	if decode(r, &p) != nil || p.ThoughtID != th.ThoughtID {
		return
	}
	th.Content, th.Branch, th.CommitSHA, th.TestsRun, th.Blockers, th.Metadata = p.Content, p.Branch, p.CommitSHA, p.TestsRun, p.Blockers, p.Metadata
}

// LastThought is the task's latest thought; ok false if it has none.
func LastThought(tx *boltstore.Tx, taskID string) (th Thought, ok bool, err error) {
	chain, tn, err := spaceOf(tx, spTaskThoughts, domain.TaskPrefix, taskID)
	if chain == nil {
		return th, false, err
	}
	err = chain.Scan(u64(tn), true, func(_, v []byte) (bool, error) {
		th, err = thoughtByNumber(tx, be64(v))
		ok = err == nil
		return false, err
	})
	return th, ok, err
}

// TaskThoughts calls fn for the task's thoughts in chain order.
func TaskThoughts(tx *boltstore.Tx, taskID string, fn func(Thought) bool) error {
	return listedThoughts(tx, spTaskThoughts, domain.TaskPrefix, taskID, func(_, v []byte) uint64 { return be64(v) }, fn)
}

// SessionThoughts calls fn for the thoughts recorded with the session id,
// in ledger order.
func SessionThoughts(tx *boltstore.Tx, sessionID string, fn func(Thought) bool) error {
	return listedThoughts(tx, spSessionThoughts, domain.SessionPrefix, sessionID, func(k, _ []byte) uint64 { return be64(k[8:]) }, fn)
}

// listedThoughts calls fn for the thoughts a space lists under the number
// of id (a prefix's id), in key order; number is a thought's number from
// its key and value there.
func listedThoughts(tx *boltstore.Tx, space, prefix, id string, number func(k, v []byte) uint64, fn func(Thought) bool) error {
	sp, n, err := spaceOf(tx, space, prefix, id)
	if sp == nil {
		return err
	}
	return sp.Scan(u64(n), false, func(k, v []byte) (bool, error) {
		th, err := thoughtByNumber(tx, number(k, v))
		if err != nil {
			return false, err
		}
		return fn(th), nil
	})
}

// Thoughts calls fn for every thought in ledger order.
func Thoughts(tx *boltstore.Tx, fn func(Thought) bool) error {
	thoughts, err := tx.Space(spThoughts)
	if err != nil {
		return err
	}
	return thoughts.Scan(nil, false, func(_, v []byte) (bool, error) {
		var th Thought
		if err := ledger.DecodePayload(v, &th); err != nil {
			return false, err
		}
		withText(tx, &th)
		return fn(th), nil
	})
}

// NextThoughtID is the id the next recorded thought gets.
func NextThoughtID(tx *boltstore.Tx) (string, error) {
	n, err := nextNumber(tx, counterThought)
	return domain.FormatID(domain.ThoughtPrefix, n), err
}

// ThoughtAt is the task's thought at a chain position; ok false if none.
func ThoughtAt(tx *boltstore.Tx, taskID string, position uint64) (th Thought, ok bool, err error) {
	chain, tn, err := spaceOf(tx, spTaskThoughts, domain.TaskPrefix, taskID)
	if chain == nil {
		return th, false, err
	}
	v := chain.Get(key2(tn, position))
	if len(v) != 8 {
		return th, false, nil
	}
	th, err = thoughtByNumber(tx, be64(v))
	return th, err == nil, err
}

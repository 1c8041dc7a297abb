package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// RecordThoughtInput is thought_record's arguments.
type RecordThoughtInput struct {
	TaskID    string          `json:"task_id"`
	Type      string          `json:"type"`
	Content   string          `json:"content"`
	SessionID string          `json:"session_id"`
	Branch    string          `json:"branch"`
	CommitSHA string          `json:"commit_sha"`
	TestsRun  []string        `json:"tests_run"`
	Blockers  []string        `json:"blockers"`
	Metadata  json.RawMessage `json:"metadata"`
}

// RecordThoughtResult is thought_record's answer.
type RecordThoughtResult struct {
	ThoughtID     string  `json:"thought_id"`
	TaskID        string  `json:"task_id"`
	Type          string  `json:"type"`
	Hash          string  `json:"hash"`
	PreviousHash  *string `json:"previous_hash"`
	RecordedAt    string  `json:"recorded_at"`
	RecordedBy    string  `json:"recorded_by"`
	ChainPosition uint64  `json:"chain_position"`
	Seq           uint64  `json:"seq"`
}

// RecordThought appends thought.recorded, linked to the task's previous
// thought. Closed tasks take thoughts too; a finalized session does not.
func (s *Service) RecordThought(tx *Tx, in RecordThoughtInput) (*RecordThoughtResult, error) {
	if strings.TrimSpace(in.Content) == "" {
		return nil, Invalid("content", "must not be only whitespace")
	}
	var metadata string
	if len(in.Metadata) > 0 && string(in.Metadata) != "null" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, in.Metadata); err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
			return nil, Invalid("metadata", "must be a JSON object")
		}
		if buf.Len() > domain.MaxMetadataBytes {
			return nil, Invalid("metadata", "is %d bytes as JSON; the limit is %d", buf.Len(), domain.MaxMetadataBytes)
		}
		metadata = buf.String()
	}
	if err := requireTask(tx, in.TaskID); err != nil {
		return nil, err
	}
	subjects := []string{"", in.TaskID}
	if in.SessionID != "" {
		sess, ok, err := projections.GetSession(tx.lt, in.SessionID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &NotFoundError{Kind: ErrSessionNotFound, ID: in.SessionID}
		}
		if sess.Final != nil {
			return nil, &FinalizedError{SessionID: in.SessionID}
		}
		subjects = append(subjects, in.SessionID)
	}
	id, err := projections.NextThoughtID(tx.lt)
	if err != nil {
		return nil, err
	}
	subjects[0] = id
	p := events.ThoughtRecorded{ThoughtID: id, TaskID: in.TaskID, Type: in.Type, Content: in.Content,
		SessionID: in.SessionID, Branch: in.Branch, CommitSHA: in.CommitSHA, TestsRun: in.TestsRun,
		Blockers: in.Blockers, Metadata: metadata, ChainPosition: 1}
	last, ok, err := projections.LastThought(tx.lt, in.TaskID)
	if err != nil {
		return nil, err
	}
	if ok {
		p.PreviousHash, p.ChainPosition = ledger.Digest(last.Hash), last.ChainPosition+1
	}
	stored := p.SubjectIDs() // its ids are the event's subjects
	rec, err := tx.emit(events.TypeThoughtRecorded, subjects, &stored)
	if err != nil {
		return nil, err
	}
	return &RecordThoughtResult{ThoughtID: id, TaskID: in.TaskID, Type: in.Type, Hash: rec.Hash.String(),
		PreviousHash: nullable(string(p.PreviousHash)), RecordedAt: projections.FormatTime(rec.Time), RecordedBy: rec.Actor,
		ChainPosition: p.ChainPosition, Seq: rec.Seq}, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ListThoughtsInput is thought_record_list's arguments.
type ListThoughtsInput struct {
	TaskID      string `json:"task_id"`
	SessionID   string `json:"session_id"`
	Type        string `json:"type"`
	Limit       *int   `json:"limit"`
	VerifyChain bool   `json:"verify_chain"`
}

// ThoughtView is one thought in thought_record_list.
type ThoughtView struct {
	ThoughtID     string  `json:"thought_id"`
	TaskID        string  `json:"task_id"`
	Type          string  `json:"type"`
	Content       string  `json:"content"`
	Hash          string  `json:"hash"`
	PreviousHash  *string `json:"previous_hash"`
	RecordedAt    string  `json:"recorded_at"`
	RecordedBy    string  `json:"recorded_by"`
	ChainPosition uint64  `json:"chain_position"`
	Seq           uint64  `json:"seq"`
}

// ListThoughtsResult is thought_record_list's answer.
type ListThoughtsResult struct {
	TaskID       string        `json:"task_id,omitempty"`
	SessionID    string        `json:"session_id,omitempty"`
	ThoughtCount int           `json:"thought_count"`
	Thoughts     []ThoughtView `json:"thoughts"`
	ChainValid   *bool         `json:"chain_valid,omitempty"`
	InvalidLinks []uint64      `json:"invalid_links,omitzero"` // present (maybe empty) with verify_chain
}

// ListThoughts lists thoughts in ledger order; with verify_chain it re-hashes
// each matching thought's event from its stored bytes and checks the link to
// the task's previous thought.
func (s *Service) ListThoughts(tx *Tx, in ListThoughtsInput) (*ListThoughtsResult, error) {
	limit, err := pageLimit(in.Limit, 100, 500)
	if err != nil {
		return nil, err
	}
	// all holds the page's thoughts — every match if the chain is to be
	// verified — and matched counts them all: a list of every thought
	// held them all (content included) to answer the first few.
	var all []projections.Thought
	matched := 0
	count := -1 // matched, unless counted apart
	keep := func(th projections.Thought) bool {
		if (in.Type == "" || th.Type == in.Type) && (in.TaskID == "" || th.TaskID == in.TaskID) &&
			(in.SessionID == "" || th.SessionID == in.SessionID) {
			if matched++; len(all) < limit || in.VerifyChain {
				all = append(all, th)
			}
		}
		return true
	}
	switch {
	case in.TaskID != "":
		if err := requireTask(tx, in.TaskID); err != nil {
			return nil, err
		}
		if in.SessionID != "" {
			if err := s.requireSession(tx, in.SessionID); err != nil {
				return nil, err
			}
		}
		if in.Type != "" || in.SessionID != "" || in.VerifyChain {
			err = projections.TaskThoughts(tx.lt, in.TaskID, keep)
			break
		}
		// Every thought of the chain is listed: the page's are read from
		// their events, the others only counted, from the chain.
		t := projections.Task{TaskState: projections.TaskState{ID: in.TaskID}}
		if err = projections.CountThoughts(tx.lt, &t); err == nil {
			count = int(t.Thoughts)
			err = projections.TaskThoughts(tx.lt, in.TaskID, func(th projections.Thought) bool { return keep(th) && len(all) < limit })
		}
	case in.SessionID != "":
		if err := s.requireSession(tx, in.SessionID); err != nil {
			return nil, err
		}
		err = projections.SessionThoughts(tx.lt, in.SessionID, keep)
	case in.Type == "" && !in.VerifyChain:
		// Every thought is listed: the page's are read from their
		// events, the others only counted.
		count, err = projections.ThoughtsPage(tx.lt, limit, func(th projections.Thought) { keep(th) })
	default:
		err = projections.Thoughts(tx.lt, keep)
	}
	if err != nil {
		return nil, err
	}
	if count < 0 {
		count = matched
	}
	res := &ListThoughtsResult{TaskID: in.TaskID, SessionID: in.SessionID, ThoughtCount: count, Thoughts: []ThoughtView{}}
	for _, th := range all[:min(limit, len(all))] {
		res.Thoughts = append(res.Thoughts, ThoughtView{ThoughtID: th.ThoughtID, TaskID: th.TaskID, Type: th.Type,
			Content: th.Content, Hash: th.Hash, PreviousHash: nullable(string(th.PreviousHash)), RecordedAt: th.RecordedAt,
			RecordedBy: th.RecordedBy, ChainPosition: th.ChainPosition, Seq: th.Seq})
	}
	if in.VerifyChain {
		res.InvalidLinks = []uint64{}
		for _, th := range all {
			ok, err := thoughtHolds(tx.lt, th)
			if err != nil {
				return nil, err
			}
			if !ok {
				res.InvalidLinks = append(res.InvalidLinks, th.ChainPosition)
			}
		}
		valid := len(res.InvalidLinks) == 0
		res.ChainValid = &valid
	}
	return res, nil
}

// thoughtHolds re-hashes the thought's event from the stored bytes and checks
// that it is the thought recorded, at its place in the task's chain.
func thoughtHolds(lt *boltstore.Tx, th projections.Thought) (bool, error) {
	rec, err := lt.Event(th.Seq)
	if err != nil {
		return false, nil
	}
	if rec.Hash.String() != th.Hash {
		return false, nil
	}
	committed, err := lt.Committed(th.Seq)
	if err != nil || committed != rec.Hash {
		return false, nil
	}
	var p events.ThoughtRecorded
	if rec.Type != events.TypeThoughtRecorded || ledger.DecodePayload(rec.Payload, &p) != nil ||
		events.Upcast(rec.Type, rec.Version, rec.Subjects, &p) != nil {
		return false, nil
	}
	if p.ThoughtID != th.ThoughtID || p.PreviousHash != th.PreviousHash || p.ChainPosition != th.ChainPosition {
		return false, nil
	}
	if th.ChainPosition == 1 {
		return p.PreviousHash == "", nil
	}
	prev, found, err := projections.ThoughtAt(lt, th.TaskID, th.ChainPosition-1)
	if errors.Is(err, boltstore.ErrDamaged) {
		return false, nil // the previous thought's event: its own link is reported
	}
	if err != nil || !found {
		return false, err
	}
	prevRec, err := lt.Event(prev.Seq)
	if err != nil {
		return false, nil
	}
	return ledger.DigestOf(prevRec.Hash) == p.PreviousHash, nil
}

func (s *Service) requireSession(tx *Tx, id string) error {
	_, ok, err := projections.GetSession(tx.lt, id)
	if err != nil {
		return err
	}
	if !ok {
		return &NotFoundError{Kind: ErrSessionNotFound, ID: id}
	}
	return nil
}

package views

import (
	"errors"
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// ErrNotFound is returned for an id the ledger does not hold.
var ErrNotFound = errors.New("not found")

// Task is a task as task_get answers it, its sub-tasks, the audit sessions on
// it, and its timeline.
type Task struct {
	Task     projections.Task `json:"task"`
	Children []string         `json:"children"`
	Sessions []string         `json:"sessions"`
	Timeline []Step           `json:"timeline"`
}

// Step is one event of a task's timeline: a change of the task, or a thought
// recorded on it.
type Step struct {
	Seq   uint64 `json:"seq"`
	Hash  string `json:"hash"`
	Time  string `json:"time"`
	Actor string `json:"actor"`
	Kind  string `json:"kind"` // "created", "updated" or "thought"
	// FromStatus → ToStatus, when the step changed the status (created: "" → backlog).
	FromStatus string `json:"from_status,omitempty"`
	ToStatus   string `json:"to_status,omitempty"`
	// Changes are the other fields an update set, as "name value".
	Changes     []string `json:"changes,omitempty"`
	ThoughtID   string   `json:"thought_id,omitempty"`
	ThoughtType string   `json:"thought_type,omitempty"`
	Content     string   `json:"content,omitempty"`
	SessionID   string   `json:"session_id,omitempty"`
}

// StatusChange reports whether the step moved the task to a status.
func (st Step) StatusChange() bool { return st.ToStatus != "" }

// ReadTask reads the task id and its timeline, oldest first; ErrNotFound
// (wrapped) if the ledger has no such task.
func ReadTask(tx *boltstore.Tx, id string) (*Task, error) {
	t, ok, err := projections.GetTask(tx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	v := &Task{Task: t, Sessions: []string{}, Timeline: []Step{}}
	if v.Children, err = projections.Children(tx, id); err != nil {
		return nil, err
	}
	if v.Children == nil {
		v.Children = []string{}
	}
	err = EachSession(tx, func(s projections.Session) {
		if s.TaskID == id {
			v.Sessions = append(v.Sessions, s.SessionID)
		}
	})
	if err != nil {
		return nil, err
	}
	seqs, err := projections.TaskEventSeqs(tx, id)
	if err != nil {
		return nil, err
	}
	var changes []Step
	for _, seq := range seqs {
		r, err := tx.Event(seq)
		if err != nil {
			return nil, err
		}
		st, err := taskStep(r)
		if err != nil {
			return nil, fmt.Errorf("seq %d: %w", seq, err)
		}
		changes = append(changes, st)
	}
	var thoughts []Step
	err = projections.TaskThoughts(tx, id, func(th projections.Thought) bool {
		thoughts = append(thoughts, Step{Seq: th.Seq, Hash: th.Hash, Time: th.RecordedAt, Actor: th.RecordedBy,
			Kind: "thought", ThoughtID: th.ThoughtID, ThoughtType: th.Type, Content: th.Content, SessionID: th.SessionID})
		return true
	})
	if err != nil {
		return nil, err
	}
	// Both lists are in ledger order: merge them.
	for len(changes) > 0 || len(thoughts) > 0 {
		if len(thoughts) == 0 || (len(changes) > 0 && changes[0].Seq < thoughts[0].Seq) {
			v.Timeline, changes = append(v.Timeline, changes[0]), changes[1:]
		} else {
			v.Timeline, thoughts = append(v.Timeline, thoughts[0]), thoughts[1:]
		}
	}
	return v, nil
}

// taskStep describes a task.created or task.updated event.
func taskStep(r ledger.Record) (Step, error) {
	st := Step{Seq: r.Seq, Hash: r.Hash.String(), Time: projections.FormatTime(r.Time), Actor: r.Actor}
	if r.Type == events.TypeTaskCreated {
		st.Kind, st.ToStatus = "created", "backlog"
		return st, nil
	}
	var p events.TaskUpdated
	if err := ledger.DecodePayload(r.Payload, &p); err != nil {
		return st, err
	}
	st.Kind = "updated"
	if p.Status != nil {
		st.ToStatus = *p.Status
		if p.PreviousStatus != nil {
			st.FromStatus = *p.PreviousStatus
		}
	}
	add := func(name string, v *string) {
		if v != nil {
			st.Changes = append(st.Changes, name+" "+fmt.Sprintf("%q", *v))
		}
	}
	if p.Progress != nil {
		st.Changes = append(st.Changes, fmt.Sprintf("progress %d%%", *p.Progress))
	}
	add("priority", p.Priority)
	add("assignee", p.Assignee)
	add("title", p.Title)
	add("description", p.Description)
	add("blocked_reason", p.BlockedReason)
	if p.Labels != nil {
		st.Changes = append(st.Changes, "labels ["+strings.Join(*p.Labels, ", ")+"]")
	}
	return st, nil
}

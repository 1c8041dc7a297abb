package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

func init() {
	register("show", "show a task and its decision trail (T-0001), or an audit session (A-0001)", show)
}

func show(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "show", `Show one task or one audit session (logbook show ID [flags]).
  logbook show T-0001   the task, then its history and its decision trail as one timeline,
                        oldest first: each step's ledger seq, short hash (12 hex digits), time,
                        actor, and what changed (status from → to) or what was thought
  logbook show A-0001   the audit session: its task, auditor, scope, leaves, current or frozen
                        root, and the commands that prove a leaf is in the ledger
An unknown id is exit 2.`)
	lf := addLedgerFlags(e, fs)
	asJSON := fs.Bool("json", false, "print the same as one JSON object")
	rest, done, err := parseArgs(e, fs, args, 1)
	if done {
		return err
	}
	var id string
	if len(rest) == 1 {
		id = rest[0]
	}
	_, isTask := domain.ParseID(domain.TaskPrefix, id)
	_, isSession := domain.ParseID(domain.SessionPrefix, id)
	if !isTask && !isSession {
		if id == "" {
			return usageErr("show: want a task id (T-0001) or an audit session id (A-0001)")
		}
		return usageErr("show: %q is neither a task id (T-0001) nor an audit session id (A-0001)", id)
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()
	var v interface{ text(*screen, string) }
	err = l.View(func(tx *boltstore.Tx) error {
		var err error
		if isTask {
			v, err = readTaskView(tx, id)
		} else {
			v, err = readSessionView(tx, id)
		}
		return err
	})
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return ioErr("show", err)
	}
	if *asJSON {
		return writeJSON(e.stdout, v)
	}
	v.text(newScreen(e), *lf.db)
	return nil
}

// taskView is `logbook show T-…`: the task as task_get answers it, its
// sub-tasks, the audit sessions on it, and its timeline.
type taskView struct {
	Task     projections.Task `json:"task"`
	Children []string         `json:"children"`
	Sessions []string         `json:"sessions"`
	Timeline []step           `json:"timeline"`
}

// step is one event of a task's timeline: a change of the task, or a thought
// recorded on it.
type step struct {
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

func readTaskView(tx *boltstore.Tx, id string) (*taskView, error) {
	t, ok, err := projections.GetTask(tx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, usageErr("show: no task %s in this ledger", id)
	}
	v := &taskView{Task: t, Sessions: []string{}, Timeline: []step{}}
	if v.Children, err = projections.Children(tx, id); err != nil {
		return nil, err
	}
	if v.Children == nil {
		v.Children = []string{}
	}
	err = eachSession(tx, func(s projections.Session) {
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
	var changes []step
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
	var thoughts []step
	err = projections.TaskThoughts(tx, id, func(th projections.Thought) bool {
		thoughts = append(thoughts, step{Seq: th.Seq, Hash: th.Hash, Time: th.RecordedAt, Actor: th.RecordedBy,
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
func taskStep(r ledger.Record) (step, error) {
	st := step{Seq: r.Seq, Hash: r.Hash.String(), Time: projections.FormatTime(r.Time), Actor: r.Actor}
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

func (v *taskView) text(s *screen, _ string) {
	t := v.Task
	fmt.Fprintf(s.w, "%s  %s\n", t.ID, clean(t.Title))
	s.field("status", "%s · priority %s · progress %d%%", s.paint(t.Status, t.Status), orDash(t.Priority), t.Progress)
	s.field("project", "%s", clean(t.Project))
	if t.ParentID != "" || len(v.Children) > 0 {
		s.field("family", "parent %s · sub-tasks %s", orDash(t.ParentID), orDash(strings.Join(v.Children, ", ")))
	}
	if t.Assignee != "" || len(t.Labels) > 0 {
		s.field("assigned", "%s · labels %s", orDash(clean(t.Assignee)), orDash(clean(strings.Join(t.Labels, ", "))))
	}
	if t.BlockedReason != "" {
		s.field("blocked", "%s", firstLine(t.BlockedReason))
	}
	s.field("created", "%s by %s (seq %d)", t.CreatedAt, clean(t.CreatedBy), t.CreatedSeq)
	s.field("updated", "%s by %s (seq %d)", t.UpdatedAt, clean(t.UpdatedBy), t.Seq)
	if len(v.Sessions) > 0 {
		s.field("audits", "%s (logbook show A-…)", strings.Join(v.Sessions, ", "))
	}
	if d := firstLine(t.Description); d != "" {
		s.field("about", "%s", cut(d, s.width-14))
	}
	fmt.Fprintf(s.w, "\nTimeline, oldest first (%s, %s):\n", plural(len(v.Timeline), "step"), plural(int(t.Thoughts), "thought"))
	tb := &table{header: []string{"SEQ", "HASH", "TIME (UTC)", "ACTOR", "WHAT"}, flex: 4, wrap: 3, painted: -1, right: map[int]bool{0: true}}
	for _, st := range v.Timeline {
		tb.rows = append(tb.rows, []string{fmt.Sprint(st.Seq), shortHash(st.Hash), shortTime(st.Time), st.Actor, st.what()})
	}
	s.print(tb)
}

// what is a step in words, for the WHAT column.
func (st step) what() string {
	switch st.Kind {
	case "created":
		return "created (backlog)"
	case "thought":
		w := fmt.Sprintf("thought %s %s: %s", st.ThoughtID, st.ThoughtType, firstLine(st.Content))
		if st.SessionID != "" {
			w = fmt.Sprintf("thought %s %s [%s]: %s", st.ThoughtID, st.ThoughtType, st.SessionID, firstLine(st.Content))
		}
		return w
	}
	var parts []string
	if st.ToStatus != "" {
		parts = append(parts, fmt.Sprintf("status %s → %s", orDash(st.FromStatus), st.ToStatus))
	}
	return strings.Join(append(parts, st.Changes...), ", ")
}

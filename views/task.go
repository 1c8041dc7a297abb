package views

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

var slugRE = regexp.MustCompile(domain.SlugPattern)

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
	if err := projections.Current(tx); err != nil {
		return nil, err
	}
	t, ok, err := projections.GetTask(tx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	if err := projections.CountThoughts(tx, &t); err != nil {
		return nil, err
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

// CheckProject refuses a project filter that no project could be named:
// not a slug. "" (every project) passes.
func CheckProject(project string) error {
	if project != "" && !slugRE.MatchString(project) {
		return fmt.Errorf("project %q is not a project slug (%s)", domain.Clip(project), domain.SlugPattern)
	}
	return nil
}

// Tasks lists the tasks in creation order: those of project only when
// project is not empty, and those in one of statuses only when statuses is
// not empty. A status that is not one of domain.Statuses, or a project
// that is not a slug (no task can be in it: a typo, Billing for billing),
// is an error naming it.
func Tasks(tx *boltstore.Tx, project string, statuses []string) ([]projections.Task, error) {
	if err := CheckProject(project); err != nil {
		return nil, err
	}
	for _, st := range statuses {
		if !slices.Contains(domain.Statuses, st) {
			return nil, fmt.Errorf("unknown status %q (want %s)", st, strings.Join(domain.Statuses, ", "))
		}
	}
	if err := projections.Current(tx); err != nil {
		return nil, err
	}
	list := []projections.Task{}
	err := projections.Tasks(tx, func(t projections.Task) bool {
		if (project == "" || t.Project == project) && (len(statuses) == 0 || slices.Contains(statuses, t.Status)) {
			list = append(list, t)
		}
		return true
	})
	for i := range list {
		if err == nil {
			err = projections.CountThoughts(tx, &list[i])
		}
	}
	return list, err
}

// TaskList prints tasks as a table: id, status, priority, progress,
// assignee and title (cut to the screen's width), or "no tasks".
func (s *Screen) TaskList(list []projections.Task) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(s.W, "no tasks")
		return err
	}
	t := &Table{Header: []string{"ID", "STATUS", "PRIORITY", "PROGRESS", "ASSIGNEE", "TITLE"}, Flex: 5, Painted: 1,
		Right: map[int]bool{3: true}, Names: []int{4}}
	for _, task := range list {
		t.Rows = append(t.Rows, []string{task.ID, task.Status, orDash(task.Priority),
			fmt.Sprintf("%d%%", task.Progress), orDash(task.Assignee), task.Title})
	}
	return s.Print(t)
}

// Task prints the task, then its timeline as a table, oldest first.
func (s *Screen) Task(v *Task) error {
	t := v.Task
	s.printf("%s  %s\n", t.ID, t.Title)
	s.field("status", "%s · priority %s · progress %d%%", s.paint(t.Status, t.Status), orDash(t.Priority), t.Progress)
	s.field("project", "%s", t.Project)
	if t.ParentID != "" || len(v.Children) > 0 {
		s.field("family", "parent %s · sub-tasks %s", orDash(t.ParentID), orDash(strings.Join(v.Children, ", ")))
	}
	if t.Assignee != "" || len(t.Labels) > 0 {
		s.field("assigned", "%s · labels %s", orDash(t.Assignee), orDash(strings.Join(t.Labels, ", ")))
	}
	if t.BlockedReason != "" {
		s.field("blocked", "%s", firstLine(t.BlockedReason))
	}
	s.field("created", "%s by %s (seq %d)", t.CreatedAt, t.CreatedBy, t.CreatedSeq)
	s.field("updated", "%s by %s (seq %d)", t.UpdatedAt, t.UpdatedBy, t.Seq)
	if len(v.Sessions) > 0 {
		s.field("audits", "%s (logbook show A-…)", strings.Join(v.Sessions, ", "))
	}
	if d := firstLine(t.Description); d != "" {
		s.field("about", "%s", cut(d, s.Width-14))
	}
	s.printf("\nTimeline, oldest first (%s, %s):\n", domain.Plural(len(v.Timeline), "step"), domain.Plural(int(t.Thoughts), "thought"))
	tb := &Table{Header: []string{"SEQ", "HASH", "TIME (UTC)", "ACTOR", "WHAT"}, Flex: 4, Wrap: 3, Painted: -1, Right: map[int]bool{0: true}, Names: []int{3}}
	for _, st := range v.Timeline {
		tb.Rows = append(tb.Rows, []string{fmt.Sprint(st.Seq), shortHash(st.Hash), shortTime(st.Time), st.Actor, st.what()})
	}
	return s.Print(tb)
}

// what is the step in words, for the WHAT column.
func (st Step) what() string {
	switch st.Kind {
	case "created":
		return "created (backlog)"
	case "thought":
		if st.SessionID != "" {
			return fmt.Sprintf("thought %s %s [%s]: %s", st.ThoughtID, st.ThoughtType, st.SessionID, firstLine(st.Content))
		}
		return fmt.Sprintf("thought %s %s: %s", st.ThoughtID, st.ThoughtType, firstLine(st.Content))
	}
	var parts []string
	if st.ToStatus != "" {
		parts = append(parts, fmt.Sprintf("status %s → %s", orDash(st.FromStatus), st.ToStatus))
	}
	return strings.Join(append(parts, st.Changes...), ", ")
}

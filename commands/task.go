package commands

import (
	"cmp"
	"slices"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// CreateTaskInput is task_create's arguments.
type CreateTaskInput struct {
	Title         string   `json:"title"`
	Project       string   `json:"project"`
	Description   string   `json:"description"`
	ParentID      string   `json:"parent_id"`
	Priority      string   `json:"priority"`
	Labels        []string `json:"labels"`
	Assignee      string   `json:"assignee"`
	EstimateHours *float64 `json:"estimate_hours"`
}

// CreateTaskResult is task_create's answer.
type CreateTaskResult struct {
	TaskID    string `json:"task_id"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	CreatedBy string `json:"created_by"`
	Sequence  uint64 `json:"sequence"`
	Seq       uint64 `json:"seq"`
}

// CreateTask appends task.created for a new task in backlog.
func (s *Service) CreateTask(tx *Tx, in CreateTaskInput) (*CreateTaskResult, error) {
	if in.ParentID != "" {
		parent, err := getTask(tx, in.ParentID)
		if err != nil {
			return nil, err
		}
		if parent.Project != in.Project {
			return nil, Invalid("parent_id", "parent %s is in project %q, not %q", in.ParentID, parent.Project, in.Project)
		}
		depth, err := projections.Depth(tx.lt, in.ParentID)
		if err != nil {
			return nil, err
		}
		if depth+1 > projections.MaxDepth {
			return nil, Invalid("parent_id", "sub-tasks nest at most %d levels deep", projections.MaxDepth)
		}
	}
	id, err := projections.NextTaskID(tx.lt)
	if err != nil {
		return nil, err
	}
	project, _, err := projections.GetProject(tx.lt, in.Project)
	if err != nil {
		return nil, err
	}
	p := events.TaskCreated{
		TaskID: id, Project: in.Project, Sequence: project.Tasks + 1, Title: in.Title,
		Description: in.Description, ParentID: in.ParentID, Priority: cmp.Or(in.Priority, "normal"),
		Labels: dedupe(in.Labels), Assignee: cmp.Or(in.Assignee, "unassigned"), EstimateHours: in.EstimateHours,
	}
	rec, err := tx.emit(events.TypeTaskCreated, []string{id}, p)
	if err != nil {
		return nil, err
	}
	return &CreateTaskResult{TaskID: id, Status: "backlog", CreatedAt: projections.FormatTime(rec.Time),
		CreatedBy: rec.Actor, Sequence: p.Sequence, Seq: rec.Seq}, nil
}

// dedupe removes repeated labels, keeping the first of each.
func dedupe(labels []string) []string {
	out := []string{}
	for _, l := range labels {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// UpdateTaskInput is task_update's arguments; nil fields are not changed.
type UpdateTaskInput struct {
	TaskID        string    `json:"task_id"`
	Status        *string   `json:"status"`
	Progress      *int      `json:"progress"`
	Title         *string   `json:"title"`
	Description   *string   `json:"description"`
	Priority      *string   `json:"priority"`
	Assignee      *string   `json:"assignee"`
	Labels        *[]string `json:"labels"`
	BlockedReason *string   `json:"blocked_reason"`
}

// UpdateTaskResult is task_update's answer.
type UpdateTaskResult struct {
	TaskID         string   `json:"task_id"`
	Status         string   `json:"status"`
	Progress       int      `json:"progress"`
	UpdatedAt      string   `json:"updated_at"`
	UpdatedBy      string   `json:"updated_by"`
	PreviousStatus string   `json:"previous_status,omitempty"`
	Warnings       []string `json:"warnings"`
	Seq            uint64   `json:"seq"`
}

// UpdateTask applies the state machine and the writeback rule, and appends
// task.updated with the fields that actually change (none: no event).
func (s *Service) UpdateTask(tx *Tx, in UpdateTaskInput) (*UpdateTaskResult, error) {
	t, err := getTask(tx, in.TaskID)
	if err != nil {
		return nil, err
	}
	if domain.Closed(t.Status) {
		return nil, &TaskClosedError{TaskID: t.ID, Status: t.Status}
	}
	var p events.TaskUpdated
	p.TaskID = t.ID
	status := t.Status
	if in.Status != nil && *in.Status != t.Status {
		if !domain.CanTransition(t.Status, *in.Status) {
			return nil, &TransitionError{From: t.Status, To: *in.Status, Allowed: domain.Transitions(t.Status)}
		}
		status = *in.Status
		p.Status, p.PreviousStatus = &status, &t.Status
	}
	switch {
	case status == "blocked" && p.Status != nil:
		if in.BlockedReason == nil || domain.IsBlank(*in.BlockedReason) {
			return nil, Invalid("blocked_reason", "is required when status becomes blocked")
		}
	case status == "blocked":
		if in.BlockedReason != nil && domain.IsBlank(*in.BlockedReason) {
			return nil, Invalid("blocked_reason", "must not be blank while the task is blocked")
		}
	case in.BlockedReason != nil:
		return nil, Invalid("blocked_reason", "only a blocked task has a blocked_reason (status is %s)", status)
	case t.Status == "blocked": // leaving blocked clears the reason
		empty := ""
		p.BlockedReason = &empty
	}
	if in.BlockedReason != nil && *in.BlockedReason != t.BlockedReason {
		p.BlockedReason = in.BlockedReason
	}
	progress := t.Progress
	if in.Progress != nil {
		progress = *in.Progress
	}
	if status == "done" && p.Status != nil {
		if err := projections.CountThoughts(tx.lt, &t); err != nil {
			return nil, err
		}
		if t.Thoughts == 0 {
			return nil, &WritebackError{TaskID: t.ID, Missing: []string{"thought_record"}}
		}
		progress = 100
	}
	if progress != t.Progress {
		p.Progress = &progress
	}
	p.Title = changed(in.Title, t.Title)
	p.Description = changed(in.Description, t.Description)
	p.Priority = changed(in.Priority, t.Priority)
	p.Assignee = changed(in.Assignee, t.Assignee)
	if in.Labels != nil {
		if labels := dedupe(*in.Labels); !slices.Equal(labels, t.Labels) {
			p.Labels = &labels
		}
	}
	res := &UpdateTaskResult{TaskID: t.ID, Status: status, Progress: progress, UpdatedAt: t.UpdatedAt,
		UpdatedBy: t.UpdatedBy, Warnings: []string{}, Seq: t.Seq}
	if progress == 100 && status != "done" && status != "review" && status != "cancelled" {
		res.Warnings = append(res.Warnings, "progress is 100 but status is "+status)
	}
	if p == (events.TaskUpdated{TaskID: t.ID}) {
		return res, nil // the request matches the current state: nothing changes
	}
	rec, err := tx.emit(events.TypeTaskUpdated, []string{t.ID}, p)
	if err != nil {
		return nil, err
	}
	res.UpdatedAt, res.UpdatedBy, res.Seq = projections.FormatTime(rec.Time), rec.Actor, rec.Seq
	if p.PreviousStatus != nil {
		res.PreviousStatus = *p.PreviousStatus
	}
	return res, nil
}

// changed returns v if it differs from cur, else nil.
func changed(v *string, cur string) *string {
	if v == nil || *v == cur {
		return nil
	}
	return v
}

// GetTaskInput is task_get's arguments.
type GetTaskInput struct {
	TaskID              string  `json:"task_id"`
	IncludeThoughtTrail bool    `json:"include_thought_trail"`
	IncludeDependents   bool    `json:"include_dependents"`
	AsOfSeq             *uint64 `json:"as_of_seq"`
}

// TaskView is task_get's answer.
type TaskView struct {
	projections.TaskState
	ThoughtTrail []string `json:"thought_trail,omitzero"` // present (maybe empty) when asked
	Dependents   []string `json:"dependents,omitzero"`    // present (maybe empty) when asked
}

// GetTask answers from the projection, or with as_of_seq from the log.
func (s *Service) GetTask(tx *Tx, in GetTaskInput) (*TaskView, error) {
	var t projections.Task
	var ok bool
	var err error
	asOf := tx.lt.Head().Seq
	if in.AsOfSeq != nil {
		if *in.AsOfSeq > asOf {
			return nil, Invalid("as_of_seq", "is beyond the ledger head %d", asOf)
		}
		asOf = *in.AsOfSeq
		t, ok, err = projections.TaskAsOf(tx.lt, in.TaskID, asOf)
	} else {
		t, ok, err = projections.GetTask(tx.lt, in.TaskID)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &NotFoundError{Kind: ErrTaskNotFound, ID: in.TaskID}
	}
	v := &TaskView{TaskState: t.TaskState}
	if in.IncludeThoughtTrail {
		v.ThoughtTrail = []string{}
		err := projections.TaskTrail(tx.lt, t.ID, func(id string, seq uint64) bool {
			if seq <= asOf {
				v.ThoughtTrail = append(v.ThoughtTrail, id)
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	if in.IncludeDependents {
		v.Dependents = []string{}
		children, err := projections.Children(tx.lt, t.ID)
		if err != nil {
			return nil, err
		}
		for _, id := range children {
			c, _, err := projections.GetTask(tx.lt, id)
			if err != nil {
				return nil, err
			}
			if c.CreatedSeq <= asOf {
				v.Dependents = append(v.Dependents, id)
			}
		}
	}
	return v, nil
}

// getTask is the task with id, or a NotFoundError.
func getTask(tx *Tx, id string) (projections.Task, error) {
	t, ok, err := projections.GetTask(tx.lt, id)
	if err == nil && !ok {
		err = &NotFoundError{Kind: ErrTaskNotFound, ID: id}
	}
	return t, err
}

// requireTask fails with a NotFoundError unless the task exists.
func requireTask(tx *Tx, id string) error {
	ok, err := projections.HasTask(tx.lt, id)
	if err == nil && !ok {
		err = &NotFoundError{Kind: ErrTaskNotFound, ID: id}
	}
	return err
}

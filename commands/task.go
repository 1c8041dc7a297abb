package commands

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/projections"
)

// transitions is the task state machine: the only status changes allowed.
var transitions = map[string][]string{
	"backlog":     {"todo", "cancelled"},
	"todo":        {"in_progress", "blocked", "cancelled"},
	"in_progress": {"review", "blocked", "cancelled"},
	"blocked":     {"todo", "in_progress", "cancelled"},
	"review":      {"done", "backlog", "blocked", "cancelled"},
	"done":        {},
	"cancelled":   {},
}

// priorityRank orders priorities, critical first.
var priorityRank = map[string]int{"critical": 0, "high": 1, "normal": 2, "low": 3}

func closed(status string) bool { return status == "done" || status == "cancelled" }

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
	if strings.TrimSpace(in.Title) == "" {
		return nil, Invalid("title", "must not be blank")
	}
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
	p := projections.TaskCreated{
		TaskID: id, Project: in.Project, Sequence: project.Tasks + 1, Title: in.Title,
		Description: in.Description, ParentID: in.ParentID, Priority: cmp.Or(in.Priority, "normal"),
		Labels: dedupe(in.Labels), Assignee: cmp.Or(in.Assignee, "unassigned"), EstimateHours: in.EstimateHours,
	}
	rec, err := tx.emit(projections.TypeTaskCreated, []string{id}, p)
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
	if closed(t.Status) {
		return nil, &TaskClosedError{TaskID: t.ID, Status: t.Status}
	}
	if in.Status == nil && in.Progress == nil && in.Title == nil && in.Description == nil &&
		in.Priority == nil && in.Assignee == nil && in.Labels == nil && in.BlockedReason == nil {
		return nil, Invalid("", "give at least one of status, progress, title, description, priority, assignee, labels, blocked_reason")
	}
	var p projections.TaskUpdated
	p.TaskID = t.ID
	status := t.Status
	if in.Status != nil && *in.Status != t.Status {
		allowed := transitions[t.Status]
		if !slices.Contains(allowed, *in.Status) {
			return nil, &TransitionError{From: t.Status, To: *in.Status, Allowed: allowed}
		}
		status = *in.Status
		p.Status, p.PreviousStatus = &status, &t.Status
	}
	if in.Title != nil && strings.TrimSpace(*in.Title) == "" {
		return nil, Invalid("title", "must not be blank")
	}
	switch {
	case status == "blocked" && p.Status != nil:
		if in.BlockedReason == nil || strings.TrimSpace(*in.BlockedReason) == "" {
			return nil, Invalid("blocked_reason", "is required when status becomes blocked")
		}
	case status == "blocked":
		if in.BlockedReason != nil && strings.TrimSpace(*in.BlockedReason) == "" {
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
	if p == (projections.TaskUpdated{TaskID: t.ID}) {
		return res, nil // the request matches the current state: nothing changes
	}
	rec, err := tx.emit(projections.TypeTaskUpdated, []string{t.ID}, p)
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
	TaskID        string   `json:"task_id"`
	Title         string   `json:"title"`
	Description   string   `json:"description"`
	Project       string   `json:"project"`
	Status        string   `json:"status"`
	Priority      string   `json:"priority"`
	Progress      int      `json:"progress"`
	Assignee      string   `json:"assignee"`
	Labels        []string `json:"labels"`
	EstimateHours *float64 `json:"estimate_hours,omitempty"`
	CreatedAt     string   `json:"created_at"`
	UpdatedAt     string   `json:"updated_at"`
	CreatedBy     string   `json:"created_by"`
	UpdatedBy     string   `json:"updated_by"`
	ParentID      string   `json:"parent_id,omitempty"`
	BlockedReason string   `json:"blocked_reason,omitempty"`
	Sequence      uint64   `json:"sequence"`
	Seq           uint64   `json:"seq"`
	ThoughtTrail  []string `json:"thought_trail,omitzero"` // present (maybe empty) when asked
	Dependents    []string `json:"dependents,omitzero"`    // present (maybe empty) when asked
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
	v := &TaskView{TaskID: t.ID, Title: t.Title, Description: t.Description, Project: t.Project, Status: t.Status,
		Priority: t.Priority, Progress: t.Progress, Assignee: t.Assignee, Labels: t.Labels, EstimateHours: t.EstimateHours,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, CreatedBy: t.CreatedBy, UpdatedBy: t.UpdatedBy,
		ParentID: t.ParentID, BlockedReason: t.BlockedReason, Sequence: t.Sequence, Seq: t.Seq}
	if in.IncludeThoughtTrail {
		v.ThoughtTrail = []string{}
		err := projections.TaskThoughts(tx.lt, t.ID, func(th projections.Thought) bool {
			if th.Seq <= asOf {
				v.ThoughtTrail = append(v.ThoughtTrail, th.ThoughtID)
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

// ListTasksInput is task_list's arguments.
type ListTasksInput struct {
	Project       string   `json:"project"`
	Status        []string `json:"status"`
	Priority      []string `json:"priority"`
	Assignee      string   `json:"assignee"`
	Label         string   `json:"label"`
	CreatedAfter  string   `json:"created_after"`
	CreatedBefore string   `json:"created_before"`
	Search        string   `json:"search"`
	Limit         *int     `json:"limit"`
	Offset        int      `json:"offset"`
	SortBy        string   `json:"sort_by"`
	SortOrder     string   `json:"sort_order"`
}

// TaskSummary is one row of task_list.
type TaskSummary struct {
	TaskID    string `json:"task_id"`
	Title     string `json:"title"`
	Project   string `json:"project"`
	Status    string `json:"status"`
	Priority  string `json:"priority"`
	Progress  int    `json:"progress"`
	Assignee  string `json:"assignee"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// ListTasksResult is task_list's answer.
type ListTasksResult struct {
	Tasks         []TaskSummary `json:"tasks"`
	TotalCount    int           `json:"total_count"`
	ReturnedCount int           `json:"returned_count"`
	Offset        int           `json:"offset"`
	Limit         int           `json:"limit"`
}

// ListTasks filters, sorts and pages the tasks.
func (s *Service) ListTasks(tx *Tx, in ListTasksInput) (*ListTasksResult, error) {
	limit, err := pageLimit(in.Limit, 50, 500)
	if err != nil {
		return nil, err
	}
	if in.Offset < 0 {
		return nil, Invalid("offset", "must be at least 0")
	}
	after, err := parseTime("created_after", in.CreatedAfter)
	if err != nil {
		return nil, err
	}
	before, err := parseTime("created_before", in.CreatedBefore)
	if err != nil {
		return nil, err
	}
	words := strings.Fields(strings.ToLower(in.Search))
	var rows []projections.Task
	err = projections.Tasks(tx.lt, func(t projections.Task) bool {
		created, _ := time.Parse(time.RFC3339, t.CreatedAt)
		text := strings.ToLower(t.Title + "\n" + t.Description)
		switch {
		case in.Project != "" && t.Project != in.Project,
			len(in.Status) > 0 && !slices.Contains(in.Status, t.Status),
			len(in.Priority) > 0 && !slices.Contains(in.Priority, t.Priority),
			in.Assignee != "" && t.Assignee != in.Assignee,
			in.Label != "" && !slices.Contains(t.Labels, in.Label),
			!after.IsZero() && !created.After(after),
			!before.IsZero() && !created.Before(before),
			!containsAll(text, words):
			return true
		}
		rows = append(rows, t)
		return true
	})
	if err != nil {
		return nil, err
	}
	key := func(t projections.Task) int64 {
		switch in.SortBy {
		case "created":
			return int64(t.CreatedSeq)
		case "priority":
			return int64(-priorityRank[t.Priority]) // ascending = lowest priority first
		case "progress":
			return int64(t.Progress)
		}
		return int64(t.Seq)
	}
	desc := in.SortOrder != "asc"
	slices.SortStableFunc(rows, func(a, b projections.Task) int {
		c := cmp.Compare(key(a), key(b))
		if desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.CreatedSeq, b.CreatedSeq))
	})
	res := &ListTasksResult{Tasks: []TaskSummary{}, TotalCount: len(rows), Offset: in.Offset, Limit: limit}
	for i := in.Offset; i < len(rows) && len(res.Tasks) < limit; i++ {
		t := rows[i]
		res.Tasks = append(res.Tasks, TaskSummary{TaskID: t.ID, Title: t.Title, Project: t.Project, Status: t.Status,
			Priority: t.Priority, Progress: t.Progress, Assignee: t.Assignee, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt})
	}
	res.ReturnedCount = len(res.Tasks)
	return res, nil
}

func parseTime(path, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, Invalid(path, "must be an RFC 3339 time such as 2026-04-08T22:15:30Z")
	}
	return t, nil
}

func containsAll(text string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// NextActionsInput is task_next_actions' arguments.
type NextActionsInput struct {
	Project        string `json:"project"`
	Limit          *int   `json:"limit"`
	IncludeBlocked bool   `json:"include_blocked"`
}

// NextAction is one todo task worth starting.
type NextAction struct {
	TaskID            string   `json:"task_id"`
	Title             string   `json:"title"`
	Priority          string   `json:"priority"`
	Assignee          string   `json:"assignee"`
	EstimateHours     *float64 `json:"estimate_hours,omitempty"`
	ParentID          string   `json:"parent_id,omitempty"`
	DependenciesUnmet int      `json:"dependencies_unmet"`
}

// BlockedTask is one blocked task with its reason.
type BlockedTask struct {
	TaskID        string `json:"task_id"`
	Title         string `json:"title"`
	BlockedReason string `json:"blocked_reason"`
}

// NextActionsResult is task_next_actions' answer. Project is null when the
// answer covers every project.
type NextActionsResult struct {
	NextActions []NextAction  `json:"next_actions"`
	Count       int           `json:"count"`
	Project     *string       `json:"project"`
	Blocked     []BlockedTask `json:"blocked,omitzero"` // present (maybe empty) with include_blocked
}

// NextActions ranks the todo tasks: fewest open sub-tasks, then priority,
// then age.
func (s *Service) NextActions(tx *Tx, in NextActionsInput) (*NextActionsResult, error) {
	project := cmp.Or(in.Project, s.opts.Project)
	limit, err := pageLimit(in.Limit, 20, 100)
	if err != nil {
		return nil, err
	}
	if project != "" {
		if _, ok, err := projections.GetProject(tx.lt, project); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			return nil, &NotFoundError{Kind: ErrProjectNotFound, ID: project}
		}
	}
	var todo []projections.Task
	unmet := map[string]int{}
	res := &NextActionsResult{NextActions: []NextAction{}}
	if project != "" {
		res.Project = &project
	}
	if in.IncludeBlocked {
		res.Blocked = []BlockedTask{}
	}
	err = projections.Tasks(tx.lt, func(t projections.Task) bool {
		if project != "" && t.Project != project {
			return true
		}
		if t.ParentID != "" && !closed(t.Status) {
			unmet[t.ParentID]++
		}
		switch t.Status {
		case "todo":
			todo = append(todo, t)
		case "blocked":
			if in.IncludeBlocked {
				res.Blocked = append(res.Blocked, BlockedTask{TaskID: t.ID, Title: t.Title, BlockedReason: t.BlockedReason})
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(todo, func(a, b projections.Task) int {
		return cmp.Or(cmp.Compare(unmet[a.ID], unmet[b.ID]),
			cmp.Compare(priorityRank[a.Priority], priorityRank[b.Priority]),
			cmp.Compare(a.CreatedSeq, b.CreatedSeq))
	})
	for _, t := range todo[:min(limit, len(todo))] {
		res.NextActions = append(res.NextActions, NextAction{TaskID: t.ID, Title: t.Title, Priority: t.Priority,
			Assignee: t.Assignee, EstimateHours: t.EstimateHours, ParentID: t.ParentID, DependenciesUnmet: unmet[t.ID]})
	}
	res.Count = len(res.NextActions)
	return res, nil
}

// pageLimit is a list's limit: def when absent, else within [1, max]. The
// edge's schema enforces the same range; this keeps a direct caller from
// slicing out of bounds.
func pageLimit(limit *int, def, max int) (int, error) {
	if limit == nil {
		return def, nil
	}
	if *limit < 1 || *limit > max {
		return 0, Invalid("limit", "must be between 1 and %d", max)
	}
	return *limit, nil
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
	_, err := getTask(tx, id)
	return err
}

package commands

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// The task queries: task_list and task_next_actions.

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
	Seq       uint64 `json:"seq"`
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
	words := strings.Fields(domain.FoldCase(in.Search))
	// The matching tasks' sort keys, 24 bytes each: sorted, and only the
	// page's tasks read again, rather than every matching task kept whole.
	var order []listKey
	// Decoded in place: nothing of a task is kept but numbers. Only the
	// tasks the indexed filters name are read (perhaps more: each filter
	// is checked here).
	filter := projections.TaskFilter{Project: in.Project, Status: in.Status, Priority: in.Priority, Assignee: in.Assignee, Label: in.Label}
	err = projections.TasksMatching(tx.lt, filter, func(t *projections.Task) bool {
		switch {
		case in.Project != "" && t.Project != in.Project,
			len(in.Status) > 0 && !slices.Contains(in.Status, t.Status),
			len(in.Priority) > 0 && !slices.Contains(in.Priority, t.Priority),
			in.Assignee != "" && t.Assignee != in.Assignee,
			in.Label != "" && !slices.Contains(t.Labels, in.Label),
			!createdWithin(t.CreatedAt, after, before),
			len(words) > 0 && !containsAll(t.Title, t.Description, words):
			return true
		}
		n, _ := domain.ParseID(domain.TaskPrefix, t.ID)
		order = append(order, listKey{key: sortKey(in.SortBy, t), created: t.CreatedSeq, n: n})
		return true
	})
	if err != nil {
		return nil, err
	}
	desc := in.SortOrder != "asc"
	// created seqs are unique: a total order, the same as a stable sort's.
	slices.SortFunc(order, func(a, b listKey) int {
		c := cmp.Compare(a.key, b.key)
		if desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.created, b.created))
	})
	res := &ListTasksResult{Tasks: []TaskSummary{}, TotalCount: len(order), Offset: in.Offset, Limit: limit}
	for i := in.Offset; i < len(order) && len(res.Tasks) < limit; i++ {
		id := domain.FormatID(domain.TaskPrefix, order[i].n)
		t, ok, err := projections.GetTask(tx.lt, id)
		if err != nil {
			return nil, err
		}
		if !ok { // listed a moment ago, in this very transaction
			return nil, fmt.Errorf("task_list: task %s: %w", id, boltstore.ErrDamaged)
		}
		res.Tasks = append(res.Tasks, TaskSummary{TaskID: t.ID, Title: t.Title, Project: t.Project, Status: t.Status,
			Priority: t.Priority, Progress: t.Progress, Assignee: t.Assignee, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Seq: t.Seq})
	}
	res.ReturnedCount = len(res.Tasks)
	return res, nil
}

func parseTime(path, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := domain.ParseDateTime(v)
	if err != nil {
		return t, Invalid(path, "must be an RFC 3339 time such as 2026-04-08T22:15:30Z")
	}
	return t, nil
}

// listKey is a matching task's place in task_list's order (its sort key,
// then its creation) and its number.
type listKey struct {
	key     int64
	created uint64
	n       uint64
}

// sortKey is t's key for task_list's sort_by.
func sortKey(sortBy string, t *projections.Task) int64 {
	switch sortBy {
	case "created":
		return int64(t.CreatedSeq)
	case "priority":
		return int64(-domain.PriorityRank(t.Priority)) // ascending = lowest priority first
	case "progress":
		return int64(t.Progress)
	}
	return int64(t.Seq)
}

// createdWithin reports whether a task created at createdAt (RFC 3339) was
// created after after and before before, each when not zero; it parses the
// time only when asked.
func createdWithin(createdAt string, after, before time.Time) bool {
	if after.IsZero() && before.IsZero() {
		return true
	}
	created, _ := time.Parse(time.RFC3339, createdAt)
	return (after.IsZero() || created.After(after)) && (before.IsZero() || created.Before(before))
}

// containsAll reports whether each of the folded words occurs in the
// title or the description, folded: a word (no white space) cannot span
// the two, and text folds piece by piece across a line break (a starter,
// which nothing composes with), so this is a search of the two joined by
// one. ASCII text is searched as it is, without a folded copy.
func containsAll(title, description string, words []string) bool {
	var folded [2]string
	for _, w := range words {
		found := false
		for i, text := range [2]string{title, description} {
			if isASCII(text) {
				found = indexFoldASCII(text, w)
			} else {
				if folded[i] == "" {
					folded[i] = domain.FoldCase(text)
				}
				found = strings.Contains(folded[i], w)
			}
			if found {
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// isASCII reports whether s is ASCII, looking at 8 bytes at a time (one
// load: a byte at a time was most of a search of ASCII text once the
// search itself looked only where a word can begin).
func isASCII(s string) bool {
	for ; len(s) >= 8; s = s[8:] {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// indexFoldASCII reports whether word, folded (as FoldCase folds), occurs
// in the ASCII text as strings.ToLower would lower it: a word holding a
// rune past ASCII cannot. It looks only where the word's first byte is,
// in either case (strings.IndexByte, for each case, kept until passed):
// comparing at every byte was most of a search of ASCII text.
func indexFoldASCII(text, word string) bool {
	if !isASCII(word) {
		return false
	}
	if word == "" {
		return true
	}
	first := [2]byte{word[0], word[0]} // the word is folded: lower case
	if 'a' <= first[0] && first[0] <= 'z' {
		first[1] -= 'a' - 'A'
	}
	next := [2]int{-1, -1} // where each case of first is next, from i; len(text) when nowhere
	for i := 0; i+len(word) <= len(text); i++ {
		for c := range next {
			if next[c] < i {
				if k := strings.IndexByte(text[i:], first[c]); k >= 0 {
					next[c] = i + k
				} else {
					next[c] = len(text)
				}
			}
		}
		if i = min(next[0], next[1]); i+len(word) > len(text) {
			return false
		}
		j := 1
		for j < len(word) && lowerASCII(text[i+j]) == word[j] {
			j++
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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
	Seq               uint64   `json:"seq"`
}

// BlockedTask is one blocked task with its reason.
type BlockedTask struct {
	TaskID        string `json:"task_id"`
	Title         string `json:"title"`
	BlockedReason string `json:"blocked_reason"`
	Seq           uint64 `json:"seq"`
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
		if t.ParentID != "" && !domain.Closed(t.Status) {
			unmet[t.ParentID]++
		}
		switch t.Status {
		case "todo":
			todo = append(todo, t)
		case "blocked":
			if in.IncludeBlocked {
				res.Blocked = append(res.Blocked, BlockedTask{TaskID: t.ID, Title: t.Title, BlockedReason: t.BlockedReason, Seq: t.Seq})
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(todo, func(a, b projections.Task) int {
		return cmp.Or(cmp.Compare(unmet[a.ID], unmet[b.ID]),
			cmp.Compare(domain.PriorityRank(a.Priority), domain.PriorityRank(b.Priority)),
			cmp.Compare(a.CreatedSeq, b.CreatedSeq))
	})
	for _, t := range todo[:min(limit, len(todo))] {
		res.NextActions = append(res.NextActions, NextAction{TaskID: t.ID, Title: t.Title, Priority: t.Priority,
			Assignee: t.Assignee, EstimateHours: t.EstimateHours, ParentID: t.ParentID, DependenciesUnmet: unmet[t.ID], Seq: t.Seq})
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

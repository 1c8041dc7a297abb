package projections

import (
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

const (
	spTasks      = "tasks"       // task number → Task; and the task index (taskindex.go)
	spTaskEvents = "task_events" // task number ‖ seq → nothing: the task.updated events that changed it (its task.created is Task.CreatedSeq)
	spChildren   = "children"    // parent number ‖ child number → nothing
	spProjects   = "projects"    // project name → Project

	counterTask = "counter.task"
)

// Task is the current state of a task: what task_get shows of it, and how
// far the projection has folded it.
type Task struct {
	TaskState
	CreatedSeq uint64 `json:"created_seq"` // event that created it
	// Thoughts is the number of thoughts on the task, for the views that
	// show it: not stored (each thought rewrote its task's record, in the
	// largest space a thought_record touched), but counted from the
	// task's chain by CountThoughts; zero as GetTask and Tasks read it.
	Thoughts uint64 `json:"thoughts" msgpack:"-"`
}

// TaskState is a task as task_get shows it.
type TaskState struct {
	ID            string   `json:"task_id"`
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
	Seq           uint64   `json:"seq"` // event that last changed it
}

// Project is a project's counters. A project exists from its first task.
type Project struct {
	Name  string `json:"name"`
	Tasks uint64 `json:"tasks"`
}

// timeLayout is the contract's RFC 3339 UTC form with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders an event time as the contract's RFC 3339 UTC form with
// milliseconds: t.UTC().Format(timeLayout), written digit by digit for the
// years 0 to 9999 (a fold formats the time of every task event; Format
// took 5% of a rebuild's fold).
func FormatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(timeLayout)
	}
	hour, minute, sec := t.Clock()
	b := [len(timeLayout)]byte{4: '-', 7: '-', 10: 'T', 13: ':', 16: ':', 19: '.', 23: 'Z'}
	digits := func(at, v, n int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	digits(0, year, 4)
	digits(5, int(month), 2)
	digits(8, day, 2)
	digits(11, hour, 2)
	digits(14, minute, 2)
	digits(17, sec, 2)
	digits(20, t.Nanosecond()/1e6, 3)
	return string(b[:])
}

// foldTask applies a task event to t. It is the one place task state
// changes, used live, by rebuilds and by time travel.
func foldTask(t *Task, r ledger.Record) error {
	switch r.Type {
	case events.TypeTaskCreated:
		var p events.TaskCreated
		if err := decode(r, &p); err != nil {
			return err
		}
		foldTaskCreated(t, r, &p)
	case events.TypeTaskUpdated:
		var p events.TaskUpdated
		if err := decode(r, &p); err != nil {
			return err
		}
		foldTaskUpdated(t, r, &p)
	default:
		return fmt.Errorf("not a task event: %s", r.Type)
	}
	return nil
}

func foldTaskCreated(t *Task, r ledger.Record, p *events.TaskCreated) {
	*t = Task{TaskState: TaskState{
		ID: p.TaskID, Title: p.Title, Description: p.Description, Project: p.Project,
		Status: "backlog", Priority: p.Priority, Assignee: p.Assignee, Labels: p.Labels,
		EstimateHours: p.EstimateHours, ParentID: p.ParentID, Sequence: p.Sequence,
		CreatedAt: FormatTime(r.Time), CreatedBy: r.Actor,
	}, CreatedSeq: r.Seq}
	if t.Labels == nil {
		t.Labels = []string{}
	}
	t.UpdatedAt, t.UpdatedBy, t.Seq = FormatTime(r.Time), r.Actor, r.Seq
}

func foldTaskUpdated(t *Task, r ledger.Record, p *events.TaskUpdated) {
	set(&t.Status, p.Status)
	set(&t.Progress, p.Progress)
	set(&t.Title, p.Title)
	set(&t.Description, p.Description)
	set(&t.Priority, p.Priority)
	set(&t.Assignee, p.Assignee)
	set(&t.Labels, p.Labels)
	set(&t.BlockedReason, p.BlockedReason)
	t.UpdatedAt, t.UpdatedBy, t.Seq = FormatTime(r.Time), r.Actor, r.Seq
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func applyTaskCreated(f *folder, r ledger.Record) error {
	tx := f.tx
	c, err := payloadOf(f, r, decodeAny[events.TaskCreated])
	if err != nil {
		return err
	}
	t := new(Task)
	foldTaskCreated(t, r, c)
	n, ok := domain.ParseID(domain.TaskPrefix, t.ID)
	if !ok {
		return fmt.Errorf("bad task id %q", t.ID)
	}
	above, err := f.seenNumber(counterTask, n)
	if err != nil {
		return err
	}
	// A number a log creates twice (not above every one before): the
	// task as stored is what its index entries were made of (setTask). A
	// number above them all has no task yet.
	if !above {
		if _, _, err := f.task(n); err != nil {
			return err
		}
	}
	if err := f.countTask(t.Project); err != nil {
		return err
	}
	if t.ParentID != "" {
		pn, _ := domain.ParseID(domain.TaskPrefix, t.ParentID)
		children, err := tx.Space(spChildren)
		if err != nil {
			return err
		}
		if err := children.Put(key2(pn, n), nil); err != nil {
			return err
		}
	}
	if f.tasks == nil {
		// Live: a new task's key is the highest yet, so its leaf is
		// packed full, as a batch packs it, not split half empty. Half
		// as many leaves, so half the entries in the branch node every
		// create rewrites.
		tasks, err := f.tx.Space(spTasks)
		if err != nil {
			return err
		}
		tasks.AppendOnly()
	}
	// The task's first event is its CreatedSeq: task_events keeps only
	// its updates, so a create touches one space fewer.
	return f.setTask(n, t)
}

func applyTaskUpdated(f *folder, r ledger.Record) error {
	p, err := payloadOf(f, r, decodeAny[events.TaskUpdated])
	if err != nil {
		return err
	}
	n, valid := domain.ParseID(domain.TaskPrefix, p.TaskID)
	t, ok, err := f.task(n)
	if err != nil || !ok || !valid {
		return fmt.Errorf("update of unknown task %q: %v", p.TaskID, err)
	}
	foldTaskUpdated(t, r, p)
	events, err := f.writeOnly(spTaskEvents, false)
	if err != nil {
		return err
	}
	if err := events.Put(key2(n, r.Seq), nil); err != nil {
		return err
	}
	return f.setTask(n, t)
}

// countTask counts a new task in its project's counters (in a batch, kept
// decoded and written at flush: a few projects take every task).
func (f *folder) countTask(project string) error {
	p, ok := f.projects[project]
	if !ok {
		projects, err := f.tx.Space(spProjects)
		if err != nil {
			return err
		}
		p = new(Project)
		if _, err := getRecord(projects, []byte(project), p); err != nil {
			return err
		}
	}
	p.Name, p.Tasks = project, p.Tasks+1
	if f.projects != nil {
		f.projects[project], f.dirtyProjects[project] = p, true
		return nil
	}
	projects, err := f.tx.Space(spProjects)
	if err != nil {
		return err
	}
	return putRecord(projects, []byte(project), p)
}

// GetTask returns the current state of the task with id; ok is false if
// there is none.
func GetTask(tx *boltstore.Tx, id string) (t Task, ok bool, err error) {
	tasks, n, err := spaceOf(tx, spTasks, domain.TaskPrefix, id)
	if tasks == nil {
		return t, false, err
	}
	ok, err = getTask(tasks, n, &t)
	return t, ok, err
}

// getTask reads task number n into t; false if there is none.
func getTask(tasks *boltstore.Space, n uint64, t *Task) (bool, error) {
	b := tasks.Get(u64(n))
	if b == nil {
		return false, nil
	}
	return true, decodeTask(t, n, b, nil)
}

// HasTask reports whether the task exists, without decoding it.
func HasTask(tx *boltstore.Tx, id string) (bool, error) {
	tasks, n, err := spaceOf(tx, spTasks, domain.TaskPrefix, id)
	if tasks == nil {
		return false, err
	}
	return tasks.Get(u64(n)) != nil, nil
}

// TaskAsOf folds the task's events up to and including seq from the log
// itself (time travel). ok is false if the task did not exist yet.
func TaskAsOf(tx *boltstore.Tx, id string, seq uint64) (t Task, ok bool, err error) {
	err = eachTaskEvent(tx, id, func(s uint64) (bool, error) {
		if s > seq {
			return false, nil
		}
		r, err := tx.Event(s)
		if err != nil {
			return false, err
		}
		ok = true
		return true, foldTask(&t, r)
	})
	return t, ok, err
}

// eachTaskEvent calls fn with the seq of each event that created or
// updated the task, in ledger order, until fn returns false: the task's
// CreatedSeq, then its task_events keys.
func eachTaskEvent(tx *boltstore.Tx, id string, fn func(seq uint64) (bool, error)) error {
	t, ok, err := GetTask(tx, id)
	if err != nil || !ok {
		return err
	}
	if more, err := fn(t.CreatedSeq); err != nil || !more {
		return err
	}
	events, n, err := spaceOf(tx, spTaskEvents, domain.TaskPrefix, id)
	if events == nil {
		return err
	}
	return events.Scan(u64(n), false, func(k, _ []byte) (bool, error) {
		if len(k) != 16 {
			return false, fmt.Errorf("task_events key %x: %w", k, boltstore.ErrDamaged)
		}
		return fn(be64(k[8:]))
	})
}

// Tasks calls fn for every task in creation order until fn returns false.
func Tasks(tx *boltstore.Tx, fn func(Task) bool) error {
	tasks, err := tx.Space(spTasks)
	if err != nil {
		return err
	}
	return tasks.Scan(nil, false, func(k, v []byte) (bool, error) {
		if isIndexKey(k) { // a block's index entry
			return true, nil
		}
		var t Task
		n, err := taskNumber(k)
		if err == nil {
			err = decodeTask(&t, n, v, nil)
		}
		if err != nil {
			return false, err
		}
		return fn(t), nil
	})
}

// TasksInPlace calls fn for every task as Tasks does, each decoded in
// place: its strings and labels point into the transaction's pages (its
// id into a buffer reused for the next task), valid only until fn
// returns, and the *Task is reused for the next task. A
// scan that keeps nothing of most tasks (task_list's filters) is spared a
// copy of every record.
func TasksInPlace(tx *boltstore.Tx, fn func(*Task) bool) error {
	tasks, err := tx.Space(spTasks)
	if err != nil {
		return err
	}
	var t Task
	var id []byte
	return tasks.Scan(nil, false, func(k, v []byte) (bool, error) {
		if isIndexKey(k) { // a block's index entry
			return true, nil
		}
		n, err := taskNumber(k)
		if err == nil {
			err = decodeTask(&t, n, v, &id)
		}
		if err != nil {
			return false, err
		}
		return fn(&t), nil
	})
}

// taskNumber is the task number of a tasks key.
func taskNumber(k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, fmt.Errorf("tasks key %x: %w", k, boltstore.ErrDamaged)
	}
	return be64(k), nil
}

// Children returns the ids of the task's direct sub-tasks in creation order.
func Children(tx *boltstore.Tx, id string) ([]string, error) {
	children, n, err := spaceOf(tx, spChildren, domain.TaskPrefix, id)
	if children == nil {
		return nil, err
	}
	var ids []string
	err = children.Scan(u64(n), false, func(k, _ []byte) (bool, error) {
		if len(k) != 16 {
			return false, fmt.Errorf("children key %x: %w", k, boltstore.ErrDamaged)
		}
		ids = append(ids, domain.FormatID(domain.TaskPrefix, be64(k[8:])))
		return true, nil
	})
	return ids, err
}

// IsWithin reports whether task id is ancestor itself or one of its
// descendants.
func IsWithin(tx *boltstore.Tx, id, ancestor string) (bool, error) {
	return isWithin(id, ancestor, func(id string) (Task, bool, error) { return GetTask(tx, id) })
}

// MaxDepth is the most levels of sub-tasks below a top-level task; task
// creation refuses deeper nesting, so walks up a parent chain are bounded.
const MaxDepth = 1000

// Depth is the number of ancestors of the task (0 for a top-level task).
func Depth(tx *boltstore.Tx, id string) (int, error) {
	depth := -1
	err := walkUp(id, func(id string) (Task, bool, error) { return GetTask(tx, id) }, func(string) bool {
		depth++
		return true
	})
	return max(depth, 0), err
}

func isWithin(id, ancestor string, get func(string) (Task, bool, error)) (bool, error) {
	found := false
	err := walkUp(id, get, func(id string) bool {
		found = id == ancestor
		return !found
	})
	return found, err
}

// walkUp calls visit with id and then each of its ancestors, nearest first,
// until visit returns false or the top is reached (at most MaxDepth+1
// tasks; a longer chain is an error). get reads a task.
func walkUp(id string, get func(string) (Task, bool, error), visit func(string) bool) error {
	for range MaxDepth + 1 {
		if !visit(id) {
			return nil
		}
		t, ok, err := get(id)
		if err != nil || !ok || t.ParentID == "" {
			return err
		}
		id = t.ParentID
	}
	return errParentChain(id, MaxDepth)
}

func errParentChain(id string, depth int) error {
	return fmt.Errorf("parent chain of %s longer than %d", id, depth)
}

// GetProject returns the project's counters; ok is false if it has no task.
func GetProject(tx *boltstore.Tx, name string) (p Project, ok bool, err error) {
	projects, err := tx.Space(spProjects)
	if err != nil {
		return p, false, err
	}
	ok, err = getRecord(projects, []byte(name), &p)
	return p, ok, err
}

// NextTaskID is the id the next created task gets.
func NextTaskID(tx *boltstore.Tx) (string, error) {
	n, err := nextNumber(tx, counterTask)
	return domain.FormatID(domain.TaskPrefix, n), err
}

// TaskEventSeqs are the seqs of the events that created or updated the task.
func TaskEventSeqs(tx *boltstore.Tx, id string) ([]uint64, error) {
	var seqs []uint64
	err := eachTaskEvent(tx, id, func(seq uint64) (bool, error) {
		seqs = append(seqs, seq)
		return true, nil
	})
	return seqs, err
}

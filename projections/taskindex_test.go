package projections_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// indexHistory appends tasks whose indexed values change after creation:
// status moves, reassignments, labels added, removed and given twice,
// priorities changed, a project of their own for a few, and a task number
// the log creates a second time with other values; each folded live.
func indexHistory(t *testing.T, l *boltstore.Store, tasks int) {
	t.Helper()
	s := func(v string) *string { return &v }
	labels := func(ls ...string) *[]string { return &ls }
	statuses := []string{"todo", "in_progress", "review", "blocked", "todo", "cancelled"}
	for i := 1; i <= tasks; i++ {
		id := domain.FormatID(domain.TaskPrefix, uint64(i))
		appendRaw(t, l, events.TypeTaskCreated, 2, []string{id}, events.TaskCreated{TaskID: id, Project: fmt.Sprintf("p%d", i%3), Sequence: uint64(i),
			Title: "task", Priority: domain.Priorities[i%4], Labels: []string{fmt.Sprintf("l%d", i%5), "x"}, Assignee: fmt.Sprintf("agent-%d", i%7)})
		// Earlier tasks change, some across a rebuild's chunks.
		u := 1 + (uint64(i)*2654435761>>7)%uint64(i)
		uid := domain.FormatID(domain.TaskPrefix, u)
		upd := events.TaskUpdated{TaskID: uid, Status: s(statuses[i%len(statuses)])}
		switch i % 4 {
		case 0:
			upd.Assignee = s(fmt.Sprintf("agent-%d", i%3))
		case 1:
			upd.Labels = labels(fmt.Sprintf("l%d", i%4), "y", "y")
		case 2:
			upd.Labels, upd.Priority = labels(), s(domain.Priorities[(i+1)%4])
		}
		appendRaw(t, l, events.TypeTaskUpdated, 1, []string{uid}, upd)
	}
	again := domain.FormatID(domain.TaskPrefix, 2)
	appendRaw(t, l, events.TypeTaskCreated, 2, []string{again}, events.TaskCreated{TaskID: again, Project: "p9", Sequence: 1,
		Title: "again", Priority: "low", Labels: []string{"z"}, Assignee: "someone"})
}

// taskIndexOf is l's task_index keys; it fails t unless they are exactly
// the keys its tasks' records make.
func taskIndexOf(t *testing.T, l *boltstore.Store, when string) []string {
	t.Helper()
	var stored, want []string
	err := l.View(func(tx *boltstore.Tx) (err error) { stored, want, err = projections.TaskIndex(tx); return })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stored, want) {
		t.Errorf("%s: task_index holds %d keys, its tasks make %d:\n%q\n%q", when, len(stored), len(want), stored, want)
	}
	return stored
}

// TestTaskIndexRebuiltEqualsLive: the task index folded live, event by
// event, holds exactly the keys the tasks' records make, whatever changed
// them; a rebuild in chunks of any size, and verify's refold (tasks carried
// from chunk to chunk), fold the same keys.
func TestTaskIndexRebuiltEqualsLive(t *testing.T) {
	l := openFolded(t)
	indexHistory(t, l, 200)
	live := taskIndexOf(t, l, "live")
	if len(live) != 4 { // tasks 1 to 200: blocks 0 to 3
		t.Fatalf("task_index holds %d blocks for 200 tasks, want 4", len(live))
	}
	for _, chunk := range []uint64{1, 3, 17, 64, 0} {
		rebuild(t, l, chunk)
		if got := taskIndexOf(t, l, fmt.Sprintf("rebuilt in chunks of %d", chunk)); !slices.Equal(got, live) {
			t.Errorf("rebuilt in chunks of %d: task_index differs from the live one", chunk)
		}
	}
	for _, batch := range []int{1, 7, 1000} {
		for _, prepare := range []bool{false, true} {
			scratch := refoldWith(t, l, batch, prepare)
			if got := taskIndexOf(t, scratch, "refolded"); !slices.Equal(got, live) {
				t.Errorf("refolded in batches of %d (prepared %v): task_index differs from the live one", batch, prepare)
			}
		}
	}
}

// TestTasksMatching: for each filter and pairs of them, the tasks
// TasksMatching offers include every task that matches (and, the filters
// being narrow, few others), after status moves, reassignments and label
// changes.
func TestTasksMatching(t *testing.T) {
	l := openFolded(t)
	indexHistory(t, l, 200)
	var all []projections.Task
	l.View(func(tx *boltstore.Tx) error {
		return projections.Tasks(tx, func(t projections.Task) bool { all = append(all, t); return true })
	})
	matches := func(t *projections.Task, f projections.TaskFilter) bool {
		return (f.Project == "" || t.Project == f.Project) && (len(f.Status) == 0 || slices.Contains(f.Status, t.Status)) &&
			(len(f.Priority) == 0 || slices.Contains(f.Priority, t.Priority)) && (f.Assignee == "" || t.Assignee == f.Assignee) &&
			(f.Label == "" || slices.Contains(t.Labels, f.Label))
	}
	var filters []projections.TaskFilter
	for _, t := range all {
		filters = append(filters, projections.TaskFilter{Assignee: t.Assignee}, projections.TaskFilter{Status: []string{t.Status}},
			projections.TaskFilter{Project: t.Project, Status: []string{t.Status, "todo"}}, projections.TaskFilter{Priority: []string{t.Priority}, Assignee: t.Assignee})
		for _, label := range t.Labels {
			filters = append(filters, projections.TaskFilter{Label: label}, projections.TaskFilter{Label: label, Project: t.Project})
		}
	}
	filters = append(filters, projections.TaskFilter{Assignee: "nobody"}, projections.TaskFilter{Label: "l1", Project: "p9"},
		projections.TaskFilter{Status: []string{"done", "done"}})
	narrow := 0
	for _, f := range filters {
		var want, got []string
		for _, t := range all {
			if matches(&t, f) {
				want = append(want, t.ID)
			}
		}
		offered := 0
		err := l.View(func(tx *boltstore.Tx) error {
			return projections.TasksMatching(tx, f, func(t *projections.Task) bool {
				offered++
				if matches(t, f) {
					got = append(got, strings.Clone(t.ID)) // t is the scan's, reused
				}
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: matched %q, want %q", f, got, want)
		}
		if len(want) <= len(all)/4 {
			narrow++
			if offered != len(want) {
				t.Errorf("%+v: %d tasks read for %d matching", f, offered, len(want))
			}
		}
	}
	if narrow < len(filters)/2 {
		t.Errorf("only %d of %d filters narrow enough for the index", narrow, len(filters))
	}
}

// TestTaskIndexDamaged: a task index entry the fold cannot have written
// (cut short, a length past its end, a bitmap of no task, entries out of
// order or twice, an empty block) is a damaged file to a filtered read and
// to a fold that would change it, which then writes nothing; the tasks
// themselves still read.
func TestTaskIndexDamaged(t *testing.T) {
	l := openFolded(t)
	indexHistory(t, l, 10)
	k := []byte{0, 0, 0, 0, 0, 0, 0, 63, 'i'} // block 0: tasks 1 to 63
	var good []byte
	l.View(func(tx *boltstore.Tx) error {
		sp, _ := tx.Space("tasks")
		good = slices.Clone(sp.Get(k))
		return nil
	})
	first := 2 + int(good[1]) + 8 // the first entry: kind, length (< 128), value, bitmap
	if len(good) <= first {
		t.Fatalf("block 0 holds %x", good)
	}
	for _, c := range []struct {
		name  string
		value []byte
	}{
		{"cut short", good[:len(good)-1]},
		{"length past the end", append([]byte{'a', 0x7f}, good[2:]...)},
		{"bitmap of no task", append(slices.Clone(good[:first-8]), make([]byte, 8)...)},
		{"out of order", append(slices.Clone(good[first:]), good[:first]...)},
		{"twice", append(slices.Clone(good[:first]), good...)},
		{"empty", []byte{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := l.Update(func(tx *boltstore.Tx) error {
				sp, _ := tx.Space("tasks")
				return sp.Put(k, c.value)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Update(func(tx *boltstore.Tx) error {
				sp, _ := tx.Space("tasks")
				return sp.Put(k, good)
			})
			var tasks int
			err = l.View(func(tx *boltstore.Tx) error {
				if err := projections.Tasks(tx, func(projections.Task) bool { tasks++; return true }); err != nil {
					return err
				}
				return projections.TasksMatching(tx, projections.TaskFilter{Status: []string{"done"}}, func(*projections.Task) bool { return true })
			})
			if tasks != 10 || !errors.Is(err, boltstore.ErrDamaged) {
				t.Errorf("%d tasks read; a filtered read: %v", tasks, err)
			}
			id := domain.FormatID(domain.TaskPrefix, 3)
			status := "done"
			err = l.Update(func(tx *boltstore.Tx) error {
				return appendApplied(tx, events.TypeTaskUpdated, 1, []string{id}, events.TaskUpdated{TaskID: id, Status: &status})
			})
			if !errors.Is(err, boltstore.ErrDamaged) {
				t.Errorf("a fold changing block 0: %v", err)
			}
		})
	}
}

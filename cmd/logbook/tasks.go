package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

func init() {
	register("tasks", "list the tasks as a table (--project, --status, --json)", tasks)
}

func tasks(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tasks", `List the ledger's tasks in creation order: id, status, priority, progress, assignee
and title (cut to the terminal's width; 100 columns when printed to a pipe or a file).
Status is coloured on a terminal unless NO_COLOR is set. logbook show T-0001 shows one.`)
	lf := addLedgerFlags(e, fs)
	project := fs.String("project", "", "only the tasks of this project")
	status := fs.String("status", "", "only tasks in these statuses, comma-separated (e.g. todo,in_progress)")
	asJSON := fs.Bool("json", false, `print {"tasks":[…]}, each task as task_get answers it`)
	if done, err := parse(e, fs, args); done {
		return err
	}
	var want []string
	if *status != "" {
		for _, st := range strings.Split(*status, ",") {
			if !isTaskStatus(st) {
				return usageErr("tasks: unknown status %q (want %s)", st, statusNames())
			}
			want = append(want, st)
		}
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()
	list := []projections.Task{}
	err = l.View(func(tx *boltstore.Tx) error {
		return projections.Tasks(tx, func(t projections.Task) bool {
			if (*project == "" || t.Project == *project) && (want == nil || slices.Contains(want, t.Status)) {
				list = append(list, t)
			}
			return ctx.Err() == nil
		})
	})
	if err != nil {
		return ioErr("tasks", err)
	}
	if *asJSON {
		return writeJSON(e.stdout, map[string]any{"tasks": list})
	}
	scr := newScreen(e)
	if len(list) == 0 {
		_, err := fmt.Fprintln(e.stdout, "no tasks")
		return err
	}
	t := &table{header: []string{"ID", "STATUS", "PRIORITY", "PROGRESS", "ASSIGNEE", "TITLE"}, flex: 5, painted: 1,
		right: map[int]bool{3: true}}
	for _, task := range list {
		t.rows = append(t.rows, []string{task.ID, task.Status, orDash(task.Priority),
			fmt.Sprintf("%d%%", task.Progress), orDash(task.Assignee), task.Title})
	}
	return scr.print(t)
}

func isTaskStatus(s string) bool {
	return slices.ContainsFunc(taskStatuses, func(st struct{ name, sgr string }) bool { return st.name == s })
}

func statusNames() string {
	names := make([]string, len(taskStatuses))
	for i, st := range taskStatuses {
		names[i] = st.name
	}
	return strings.Join(names, ", ")
}

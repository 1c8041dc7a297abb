package main

import (
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/views"
)

// The human views: tasks, show and sessions. What they show is package
// views'; here are their flags.

func tasks(c *call) func() error {
	c.ledgerFlags()
	project := c.fs.String("project", "", "only the tasks of this project")
	status := c.fs.String("status", "", "only tasks in these statuses, comma-separated (e.g. todo,in_progress)")
	c.jsonFlag(`print {"tasks":[…]}, each task as task_get answers it, with created_seq (the event that created it) and thoughts (how many it has)`)
	return func() error {
		var statuses []string
		if *status != "" {
			statuses = commaList(*status)
		}
		var list []projections.Task
		err := c.view(func(tx *boltstore.Tx) (err error) {
			list, err = views.Tasks(tx, *project, statuses)
			return err
		})
		if err != nil {
			return err
		}
		return c.print(map[string]any{"tasks": list}, func() error { return c.screen().TaskList(list) })
	}
}

func show(c *call) func() error {
	c.ledgerFlags()
	c.jsonFlag("print the same as one JSON object")
	return func() error {
		id := c.arg()
		_, isTask := domain.ParseID(domain.TaskPrefix, id)
		_, isSession := domain.ParseID(domain.SessionPrefix, id)
		if !isTask && !isSession {
			if id == "" {
				return errors.New("want a task id (T-0001) or an audit session id (A-0001)")
			}
			return fmt.Errorf("%q is neither a task id (T-0001) nor an audit session id (A-0001)", id)
		}
		var task *views.Task
		var session *views.Session
		err := c.view(func(tx *boltstore.Tx) (err error) {
			if isTask {
				task, err = views.ReadTask(tx, id)
			} else {
				session, err = views.ReadSession(tx, id)
			}
			return err
		})
		switch {
		case errors.Is(err, views.ErrNotFound) && isTask:
			return fmt.Errorf("no task %s in this ledger", id)
		case errors.Is(err, views.ErrNotFound):
			return fmt.Errorf("no audit session %s in this ledger", id)
		case err != nil:
			return err
		case isTask:
			return c.print(task, func() error { return c.screen().Task(task) })
		}
		db := *c.db
		if db == defaultDB {
			db = ""
		}
		return c.print(session, func() error { return c.screen().Session(session, db) })
	}
}

func sessions(c *call) func() error {
	c.ledgerFlags()
	task := c.fs.String("task", "", "only the sessions on this task")
	c.jsonFlag(`print {"sessions":[…]}`)
	return func() error {
		var list []views.SessionSummary
		err := c.view(func(tx *boltstore.Tx) (err error) {
			list, err = views.Sessions(tx, *task)
			return err
		})
		if err != nil {
			return err
		}
		return c.print(map[string]any{"sessions": list}, func() error { return c.screen().SessionList(list) })
	}
}

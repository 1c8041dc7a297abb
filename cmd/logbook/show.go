package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/views"
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
		if isTask {
			t, err := views.ReadTask(tx, id)
			v = taskView{t}
			return err
		}
		s, err := views.ReadSession(tx, id)
		v = sessionView{s}
		return err
	})
	switch {
	case errors.Is(err, views.ErrNotFound) && isTask:
		return usageErr("show: no task %s in this ledger", id)
	case errors.Is(err, views.ErrNotFound):
		return usageErr("show: no audit session %s in this ledger", id)
	case err != nil:
		return ioErr("show", err)
	}
	if *asJSON {
		return writeJSON(e.stdout, v)
	}
	v.text(newScreen(e), *lf.db)
	return nil
}

// taskView is `logbook show T-…`.
type taskView struct{ *views.Task }

// sessionView is `logbook show A-…`.
type sessionView struct{ *views.Session }

func (v taskView) text(s *screen, _ string) {
	t := v.Task.Task
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
		tb.rows = append(tb.rows, []string{fmt.Sprint(st.Seq), shortHash(st.Hash), shortTime(st.Time), st.Actor, what(st)})
	}
	s.print(tb)
}

// what is a step in words, for the WHAT column.
func what(st views.Step) string {
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

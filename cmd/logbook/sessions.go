package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/views"
)

func init() {
	register("sessions", "list the audit sessions as a table (--task, --json)", sessions)
}

func sessions(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "sessions", `List the audit sessions: id, task, auditor, scope, state (open or finalized), leaves,
and root (frozen once finalized; 12 hex digits). logbook show A-0001 shows one.`)
	lf := addLedgerFlags(e, fs)
	task := fs.String("task", "", "only the sessions on this task")
	asJSON := fs.Bool("json", false, `print {"sessions":[…]}`)
	if done, err := parse(e, fs, args); done {
		return err
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()
	var list []views.SessionSummary
	err = l.View(func(tx *boltstore.Tx) error {
		var err error
		list, err = views.Sessions(tx, *task)
		return err
	})
	if err != nil {
		return ioErr("sessions", err)
	}
	if *asJSON {
		return writeJSON(e.stdout, map[string]any{"sessions": list})
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(e.stdout, "no audit sessions")
		return err
	}
	t := &table{header: []string{"ID", "TASK", "AUDITOR", "SCOPE", "STATE", "LEAVES", "ROOT", "STARTED (UTC)"}, flex: 2, painted: 4,
		right: map[int]bool{5: true}}
	for _, s := range list {
		t.rows = append(t.rows, []string{s.SessionID, s.TaskID, s.AuditorID, s.Scope, s.State(),
			fmt.Sprint(s.Leaves), shortHash(s.Root), shortTime(s.StartedAt)})
	}
	return newScreen(e).print(t)
}

func (v sessionView) text(s *screen, db string) {
	fmt.Fprintf(s.w, "%s  audit of %s by %s\n", v.SessionID, v.TaskID, clean(v.AuditorID))
	s.field("state", "%s", s.paint(v.State(), v.State()))
	s.field("scope", "%s", v.Scope)
	if v.Reason != "" {
		s.field("reason", "%s", cut(firstLine(v.Reason), s.width-14))
	}
	s.field("started", "%s (seq %d)", v.StartedAt, v.StartSeq)
	if v.Finalized {
		s.field("finalized", "%s (seq %d)", v.FinalizedAt, v.LedgerSize)
	}
	s.field("leaves", "%d, seq %d to %d", v.Leaves, v.FirstSeq, v.LastSeq)
	if v.Finalized {
		what := "all leaves"
		if v.SealedTask != "" {
			what = fmt.Sprintf("%d leaves: the start event and those of %s", v.Sealed, v.SealedTask)
		}
		s.field("root", "%s (frozen; %s)", v.Root, what)
		s.field("ledger", "size %d, root %s (when finalized)", v.LedgerSize, v.LedgerRoot)
	} else {
		s.field("root", "%s (of the leaves so far; not finalized)", v.Root)
		s.field("ledger", "size %d, root %s (now)", v.LedgerSize, v.LedgerRoot)
	}
	fmt.Fprintf(s.w, "\nLeaves (%d):\n", len(v.LeafList))
	t := &table{header: []string{"SEQ", "HASH", "TYPE", "TASKS"}, flex: 3, painted: -1, right: map[int]bool{0: true}}
	if v.Finalized && v.SealedTask != "" {
		t.header = append(t.header[:3:3], "SEALED", "TASKS")
		t.flex = 4
	}
	for _, l := range v.LeafList {
		row := []string{fmt.Sprint(l.Seq), shortHash(l.Hash), l.Type}
		if len(t.header) == 5 {
			row = append(row, map[bool]string{true: "yes", false: "no"}[l.Sealed])
		}
		t.rows = append(t.rows, append(row, orDash(strings.Join(l.Tasks, ", "))))
	}
	s.print(t)
	if len(v.LeafList) == 0 {
		return
	}
	seq := v.LeafList[0].Seq
	when := "the ledger as it was when the session was finalized"
	if !v.Finalized {
		when = "the ledger as it is now (it grows: take the size and root you trust)"
	}
	fmt.Fprintf(s.w, "\nProve that a leaf (here seq %d) is in %s:\n", seq, when)
	dbArg := ""
	if db != defaultDB {
		dbArg = " --db " + shellQuote(db)
	}
	fmt.Fprintf(s.w, "  logbook prove inclusion%s --seq %d --size %d --out leaf-%d.json\n", dbArg, seq, v.LedgerSize, seq)
	fmt.Fprintf(s.w, "  logbook check-proof leaf-%d.json --root %s --size %d\n", seq, v.LedgerRoot, v.LedgerSize)
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

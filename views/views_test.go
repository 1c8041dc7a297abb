package views_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/skills"
	"github.com/logbook-dev/logbook/views"
)

// TestViews reads a task and a session written through the commands: the
// timeline is the task's changes and thoughts merged in ledger order, and
// unknown ids are ErrNotFound.
func TestViews(t *testing.T) {
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "l.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	svc, err := commands.New(l, commands.Options{Agent: "a", Skills: &skills.Set{}})
	if err != nil {
		t.Fatal(err)
	}
	enc := mcp.New(svc, mcp.Options{}).Encode
	call := func(tool string, args map[string]any) {
		raw, _ := json.Marshal(args)
		var cmd *commands.Command
		for _, c := range commands.Commands {
			if c.Rules().Name == tool {
				cmd = c
			}
		}
		reply, err := svc.Do(context.Background(), commands.Call{Name: tool, Command: cmd, Args: raw, Encode: enc})
		var env struct{ OK bool }
		if err != nil || json.Unmarshal(reply, &env) != nil || !env.OK {
			t.Fatalf("%s: %s %v", tool, reply, err)
		}
	}
	call("task_create", map[string]any{"title": "t", "project": "p"})
	call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "x"})
	call("task_update", map[string]any{"task_id": "T-0001", "status": "todo"})
	call("thought_record", map[string]any{"task_id": "T-0001", "type": "plan", "content": "first"})
	call("task_update", map[string]any{"task_id": "T-0001", "status": "in_progress", "priority": "high"})
	call("task_create", map[string]any{"title": "u", "project": "q"})

	err = l.View(func(tx *boltstore.Tx) error {
		v, err := views.ReadTask(tx, "T-0001")
		if err != nil {
			return err
		}
		var kinds []string
		for i, st := range v.Timeline {
			kinds = append(kinds, st.Kind+"/"+st.ToStatus)
			if i > 0 && st.Seq <= v.Timeline[i-1].Seq {
				t.Errorf("timeline out of ledger order: %+v", v.Timeline)
			}
		}
		want := []string{"created/backlog", "updated/todo", "thought/", "updated/in_progress"}
		if len(kinds) != len(want) {
			t.Fatalf("timeline %v, want %v", kinds, want)
		}
		for i := range want {
			if kinds[i] != want[i] {
				t.Errorf("step %d: %s, want %s", i, kinds[i], want[i])
			}
		}
		if last := v.Timeline[3]; last.FromStatus != "todo" || len(last.Changes) != 1 || last.Changes[0] != `priority "high"` {
			t.Errorf("last step %+v", last)
		}
		if len(v.Sessions) != 1 || v.Sessions[0] != "A-0001" {
			t.Errorf("sessions %v", v.Sessions)
		}
		s, err := views.ReadSession(tx, "A-0001")
		if err != nil {
			return err
		}
		if s.Finalized || s.State() != "open" || uint64(len(s.LeafList)) != s.Leaves || s.LedgerSize != tx.Head().Seq {
			t.Errorf("session %+v", s)
		}
		for _, c := range []struct {
			project  string
			statuses []string
			want     int
		}{{"", nil, 2}, {"p", nil, 1}, {"", []string{"in_progress"}, 1}, {"q", []string{"todo", "done"}, 0}} {
			if list, err := views.Tasks(tx, c.project, c.statuses); err != nil || len(list) != c.want {
				t.Errorf("Tasks(%q, %v) = %d tasks, %v; want %d", c.project, c.statuses, len(list), err, c.want)
			}
		}
		if _, err := views.Tasks(tx, "", []string{"urgent"}); err == nil {
			t.Error("Tasks with an unknown status")
		}
		if _, err := views.ReadTask(tx, "T-0003"); !errors.Is(err, views.ErrNotFound) {
			t.Errorf("unknown task: %v", err)
		}
		if _, err := views.ReadSession(tx, "A-0002"); !errors.Is(err, views.ErrNotFound) {
			t.Errorf("unknown session: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

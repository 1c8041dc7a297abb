package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

func init() {
	register("sessions", "list the audit sessions as a table (--task, --json)", sessions)
}

// eachSession calls fn for every audit session in id order. Session ids are
// numbered from 1 with none skipped, so the next id bounds them.
func eachSession(tx *boltstore.Tx, fn func(projections.Session)) error {
	next, err := projections.NextSessionID(tx)
	if err != nil {
		return err
	}
	last, _ := domain.ParseID(domain.SessionPrefix, next)
	for n := uint64(1); n < last; n++ {
		s, ok, err := projections.GetSession(tx, domain.FormatID(domain.SessionPrefix, n))
		if err != nil {
			return err
		}
		if ok {
			fn(s)
		}
	}
	return nil
}

// sessionSummary is a session as `logbook sessions` lists it.
type sessionSummary struct {
	SessionID   string `json:"session_id"`
	TaskID      string `json:"task_id"`
	AuditorID   string `json:"auditor_id"`
	Scope       string `json:"scope"`
	Reason      string `json:"reason,omitempty"`
	StartedAt   string `json:"started_at"`
	StartSeq    uint64 `json:"start_seq"`
	Leaves      uint64 `json:"leaves"`
	Finalized   bool   `json:"finalized"`
	FinalizedAt string `json:"finalized_at,omitempty"`
	// Root is the frozen root once finalized, else the root of the leaves so far.
	Root string `json:"root"`
}

func summarize(s projections.Session) sessionSummary {
	sum := sessionSummary{SessionID: s.SessionID, TaskID: s.TaskID, AuditorID: s.AuditorID, Scope: s.Scope,
		Reason: s.Reason, StartedAt: s.StartedAt, StartSeq: s.StartSeq, Leaves: s.Leaves.Size,
		Finalized: s.Final != nil, FinalizedAt: s.FinalizedAt, Root: s.Leaves.Root().String()}
	if s.Final != nil {
		sum.Root = s.Final.MerkleRoot
	}
	return sum
}

func (s sessionSummary) state() string {
	if s.Finalized {
		return "finalized"
	}
	return "open"
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
	list := []sessionSummary{}
	err = l.View(func(tx *boltstore.Tx) error {
		return eachSession(tx, func(s projections.Session) {
			if *task == "" || s.TaskID == *task {
				list = append(list, summarize(s))
			}
		})
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
		t.rows = append(t.rows, []string{s.SessionID, s.TaskID, s.AuditorID, s.Scope, s.state(),
			fmt.Sprint(s.Leaves), shortHash(s.Root), shortTime(s.StartedAt)})
	}
	return newScreen(e).print(t)
}

// sessionView is `logbook show A-…`.
type sessionView struct {
	sessionSummary
	// Sealed is how many leaves the frozen root covers: all of them, or
	// those of one task (SealedTask) and the start event.
	Sealed     uint64        `json:"sealed,omitempty"`
	SealedTask string        `json:"sealed_task,omitempty"`
	FirstSeq   uint64        `json:"first_seq"`
	LastSeq    uint64        `json:"last_seq"`
	LeafList   []sessionLeaf `json:"leaf_list"`
	// Proofs are against the ledger as it was when the session was
	// finalized (its size and root are in the session), else as it is now.
	LedgerSize uint64 `json:"ledger_size"`
	LedgerRoot string `json:"ledger_root"`
}

type sessionLeaf struct {
	Seq    uint64   `json:"seq"`
	Hash   string   `json:"hash"`
	Type   string   `json:"type"`
	Tasks  []string `json:"tasks"`
	Sealed bool     `json:"sealed"`
}

func readSessionView(tx *boltstore.Tx, id string) (*sessionView, error) {
	s, ok, err := projections.GetSession(tx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, usageErr("show: no audit session %s in this ledger", id)
	}
	v := &sessionView{sessionSummary: summarize(s), FirstSeq: s.FirstSeq, LastSeq: s.LastSeq, LeafList: []sessionLeaf{}}
	var only string
	if s.Final != nil {
		v.Sealed, v.SealedTask, only = s.Final.LeafCount, s.Final.TaskID, s.Final.TaskID
		v.LedgerSize, v.LedgerRoot = s.LedgerSize, s.LedgerRoot
	} else {
		v.LedgerSize = tx.Head().Seq
		root, err := tx.Root(v.LedgerSize)
		if err != nil {
			return nil, err
		}
		v.LedgerRoot = root.String()
	}
	err = projections.SessionLeaves(tx, id, func(l projections.Leaf) error {
		r, err := tx.Event(l.Seq)
		if err != nil {
			return err
		}
		tasks := l.Tasks
		if tasks == nil {
			tasks = []string{}
		}
		v.LeafList = append(v.LeafList, sessionLeaf{Seq: l.Seq, Hash: l.Hash.String(), Type: r.Type, Tasks: tasks,
			Sealed: s.Final != nil && s.Selects(l, only)})
		return nil
	})
	return v, err
}

func (v *sessionView) text(s *screen, db string) {
	fmt.Fprintf(s.w, "%s  audit of %s by %s\n", v.SessionID, v.TaskID, clean(v.AuditorID))
	s.field("state", "%s", s.paint(v.state(), v.state()))
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

package views

import (
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// EachSession calls fn for every audit session in id order. Session ids are
// numbered from 1 with none skipped, so the next id bounds them.
func EachSession(tx *boltstore.Tx, fn func(projections.Session)) error {
	if err := projections.Current(tx); err != nil {
		return err
	}
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

// SessionSummary is an audit session as a list shows it.
type SessionSummary struct {
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

// Summarize is s as a list shows it.
func Summarize(s projections.Session) SessionSummary {
	sum := SessionSummary{SessionID: s.SessionID, TaskID: s.TaskID, AuditorID: s.AuditorID, Scope: s.Scope,
		Reason: s.Reason, StartedAt: s.StartedAt, StartSeq: s.StartSeq, Leaves: s.Leaves.Size,
		Finalized: s.Final != nil, FinalizedAt: s.FinalizedAt, Root: s.Leaves.Root().String()}
	if s.Final != nil {
		sum.Root = s.Final.MerkleRoot
	}
	return sum
}

// State is "finalized" or "open".
func (s SessionSummary) State() string {
	if s.Finalized {
		return "finalized"
	}
	return "open"
}

// Sessions lists the audit sessions in id order, those on task only when
// task is not empty. A task that is not a task id (A-0001, T-1) is an
// error naming it.
func Sessions(tx *boltstore.Tx, task string) ([]SessionSummary, error) {
	if _, ok := domain.ParseID(domain.TaskPrefix, task); task != "" && !ok {
		return nil, fmt.Errorf("task %q is not a task id (T-0001)", task)
	}
	list := []SessionSummary{}
	err := EachSession(tx, func(s projections.Session) {
		if task == "" || s.TaskID == task {
			list = append(list, Summarize(s))
		}
	})
	return list, err
}

// Session is one audit session with its leaves, and the ledger size and
// root its leaves are proven against.
type Session struct {
	SessionSummary
	// Sealed is how many leaves the frozen root covers: all of them, or
	// those of one task (SealedTask) and the start event.
	Sealed     uint64 `json:"sealed,omitempty"`
	SealedTask string `json:"sealed_task,omitempty"`
	FirstSeq   uint64 `json:"first_seq"`
	LastSeq    uint64 `json:"last_seq"`
	LeafList   []Leaf `json:"leaf_list"`
	// Proofs are against the ledger as it was when the session was
	// finalized (its size and root are in the session), else as it is now.
	LedgerSize uint64 `json:"ledger_size"`
	LedgerRoot string `json:"ledger_root"`
}

// Leaf is one leaf of a session: a ledger event.
type Leaf struct {
	Seq    uint64   `json:"seq"`
	Hash   string   `json:"hash"`
	Type   string   `json:"type"`
	Tasks  []string `json:"tasks"`
	Sealed bool     `json:"sealed"`
}

// ReadSession reads the audit session id and its leaves; ErrNotFound
// (wrapped) if the ledger has no such session.
func ReadSession(tx *boltstore.Tx, id string) (*Session, error) {
	if err := projections.Current(tx); err != nil {
		return nil, err
	}
	s, ok, err := projections.GetSession(tx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("audit session %s: %w", id, ErrNotFound)
	}
	v := &Session{SessionSummary: Summarize(s), FirstSeq: s.FirstSeq, LastSeq: s.LastSeq, LeafList: []Leaf{}}
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
		v.LeafList = append(v.LeafList, Leaf{Seq: l.Seq, Hash: l.Hash.String(), Type: r.Type, Tasks: tasks,
			Sealed: s.Final != nil && s.Selects(l, only)})
		return nil
	})
	return v, err
}

// SessionList prints sessions as a table, or "no audit sessions".
func (s *Screen) SessionList(list []SessionSummary) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(s.W, "no audit sessions")
		return err
	}
	t := &Table{Header: []string{"ID", "TASK", "AUDITOR", "SCOPE", "STATE", "LEAVES", "ROOT", "STARTED (UTC)"}, Flex: 2, Painted: 4,
		Right: map[int]bool{5: true}}
	for _, v := range list {
		t.Rows = append(t.Rows, []string{v.SessionID, v.TaskID, v.AuditorID, v.Scope, v.State(),
			fmt.Sprint(v.Leaves), shortHash(v.Root), shortTime(v.StartedAt)})
	}
	return s.Print(t)
}

// Session prints the session, its leaves, and the logbook commands that
// prove a leaf is in the ledger; db is the ledger file they name ("" when
// it is the default one).
func (s *Screen) Session(v *Session, db string) error {
	s.printf("%s  audit of %s by %s\n", v.SessionID, v.TaskID, v.AuditorID)
	s.field("state", "%s", s.paint(v.State(), v.State()))
	s.field("scope", "%s", v.Scope)
	if v.Reason != "" {
		s.field("reason", "%s", cut(firstLine(v.Reason), s.Width-14))
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
	s.printf("\nLeaves (%d):\n", len(v.LeafList))
	t := &Table{Header: []string{"SEQ", "HASH", "TYPE", "TASKS"}, Flex: 3, Painted: -1, Right: map[int]bool{0: true}}
	if v.Finalized && v.SealedTask != "" {
		t.Header = append(t.Header[:3:3], "SEALED", "TASKS")
		t.Flex = 4
	}
	for _, l := range v.LeafList {
		row := []string{fmt.Sprint(l.Seq), shortHash(l.Hash), l.Type}
		if len(t.Header) == 5 {
			row = append(row, map[bool]string{true: "yes", false: "no"}[l.Sealed])
		}
		t.Rows = append(t.Rows, append(row, orDash(strings.Join(l.Tasks, ", "))))
	}
	if err := s.Print(t); err != nil || len(v.LeafList) == 0 {
		return err
	}
	seq := v.LeafList[0].Seq
	when := "the ledger as it was when the session was finalized"
	if !v.Finalized {
		when = "the ledger as it is now (it grows: take the size and root you trust)"
	}
	s.printf("\nProve that a leaf (here seq %d) is in %s:\n", seq, when)
	dbArg := ""
	if db != "" {
		dbArg = " --db " + shellQuote(db)
	}
	s.printf("  logbook prove inclusion%s --seq %d --size %d --out leaf-%d.json\n", dbArg, seq, v.LedgerSize, seq)
	return s.printf("  logbook check-proof leaf-%d.json --root %s --size %d\n", seq, v.LedgerRoot, v.LedgerSize)
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

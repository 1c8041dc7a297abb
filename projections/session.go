package projections

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

const (
	spSessions      = "sessions"       // session number → Session
	spSessionLeaves = "session_leaves" // session number ‖ seq → leaf hash ‖ concerned task ids
	spOpenSessions  = "open_sessions"  // session number → its id, task and scope (openSession), while not finalized

	counterSession = "counter.session"
)

// Session is an audit session: its window's leaves so far (as a Merkle
// frontier) and, once finalized, its frozen root.
type Session struct {
	events.SessionStarted
	StartedAt string          `json:"started_at"`
	StartSeq  uint64          `json:"start_seq"`
	Leaves    ledger.Frontier `json:"leaves"`
	FirstSeq  uint64          `json:"first_seq"`
	LastSeq   uint64          `json:"last_seq"`
	Seq       uint64          `json:"seq"`

	Final       *events.SessionFinalized `json:"final,omitempty"`
	FinalizedAt string                   `json:"finalized_at,omitempty"`
	LedgerSize  uint64                   `json:"ledger_size,omitempty"` // seq of the finalize event
	LedgerRoot  string                   `json:"ledger_root,omitempty"` // root of the log of that size
}

// Leaf is one leaf of a session: the event's seq and hash and the tasks it
// concerns.
type Leaf struct {
	Seq   uint64
	Hash  ledger.Hash
	Tasks []string
}

func applySessionStarted(f *folder, r ledger.Record) error {
	var p events.SessionStarted
	if err := decode(r, &p); err != nil {
		return err
	}
	n, ok := domain.ParseID(domain.SessionPrefix, p.SessionID)
	if !ok {
		return fmt.Errorf("bad session id %q", p.SessionID)
	}
	if _, err := f.seenNumber(counterSession, n); err != nil {
		return err
	}
	s := &Session{SessionStarted: p, StartedAt: FormatTime(r.Time), StartSeq: r.Seq, Seq: r.Seq}
	if err := f.setOpen(n, s); err != nil {
		return err
	}
	return f.setSession(n, s)
}

func applySessionFinalized(f *folder, r ledger.Record) error {
	var p events.SessionFinalized
	if err := decode(r, &p); err != nil {
		return err
	}
	n, valid := domain.ParseID(domain.SessionPrefix, p.SessionID)
	s, ok, err := f.session(n)
	if err != nil || !ok || !valid {
		return fmt.Errorf("finalize of unknown session %q: %v", p.SessionID, err)
	}
	root, err := f.rootAt(r.Seq)
	if err != nil {
		return err
	}
	s.Final, s.FinalizedAt, s.LedgerSize, s.LedgerRoot, s.Seq = &p, FormatTime(r.Time), r.Seq, root.String(), r.Seq
	if err := f.setOpen(n, nil); err != nil {
		return err
	}
	return f.setSession(n, s)
}

// openSession is what an open session's entry in open_sessions holds: what
// tells, without decoding the session, whether an event may concern it —
// its id (a thought recorded into it names it), its task and whether its
// scope is deep (an event on a descendant of the task concerns it too).
// Every event is offered to every open session: decoding each (its leaves'
// frontier) for every event made each call's commit cost grow with the
// open sessions (1.7 ms a thought_record beside 200, against 0.7 ms).
type openSession struct {
	n          uint64
	id, taskID string
	deep       bool
}

// encodeOpen is s's entry: the deep flag (1 or 0), then the session id and
// the task id, each after its length (one byte: ids are short).
func encodeOpen(s *Session) []byte {
	deep := byte(0)
	if s.Scope == "deep" {
		deep = 1
	}
	v := []byte{deep, byte(len(s.SessionID))}
	v = append(append(v, s.SessionID...), byte(len(s.TaskID)))
	return append(v, s.TaskID...)
}

// decodeOpen reads entry v of session n; ok is false if it is not one.
func decodeOpen(n uint64, v []byte) (o openSession, ok bool) {
	if len(v) < 2 || v[0] > 1 || len(v) < 2+int(v[1])+1 {
		return o, false
	}
	id := v[2 : 2+int(v[1])]
	rest := v[2+int(v[1]):]
	if len(rest) != 1+int(rest[0]) {
		return o, false
	}
	return openSession{n: n, deep: v[0] == 1, id: string(id), taskID: string(rest[1:])}, true
}

// openSessions are the sessions not finalized, in order of their numbers,
// read from their space once per fold.
func (f *folder) openSessions() ([]openSession, error) {
	if f.openKnown {
		return f.open, nil
	}
	open, err := f.tx.Space(spOpenSessions)
	if err != nil {
		return nil, err
	}
	err = open.Scan(nil, false, func(k, v []byte) (bool, error) {
		o, ok := decodeOpen(be64(k), v)
		if len(k) != 8 || !ok {
			return false, fmt.Errorf("open session entry %x: %x is no open session's: %w", k, v, boltstore.ErrDamaged)
		}
		f.open = append(f.open, o)
		return true, nil
	})
	f.openKnown = err == nil
	return f.open, err
}

// setOpen marks session n open (s, the session just started) or not (nil),
// in its space and in the folder's list.
func (f *folder) setOpen(n uint64, s *Session) error {
	opens, err := f.openSessions()
	if err != nil {
		return err
	}
	open, err := f.tx.Space(spOpenSessions)
	if err != nil {
		return err
	}
	i, found := slices.BinarySearchFunc(opens, n, func(o openSession, n uint64) int { return cmp.Compare(o.n, n) })
	if s == nil {
		if found {
			f.open = slices.Delete(opens, i, i+1)
		}
		return open.Delete(u64(n))
	}
	v := encodeOpen(s)
	o, _ := decodeOpen(n, v)
	if found {
		opens[i] = o
	} else {
		f.open = slices.Insert(opens, i, o)
	}
	return open.Put(u64(n), v)
}

// offerToSessions adds r as a leaf of every open session it belongs to
// (belongs): it concerns the session's task (or, for deep scope, a
// descendant), or it records a thought with the session's id, or it is the
// session's start. A session it does not belong to is not read.
func offerToSessions(f *folder, r ledger.Record) error {
	opens, err := f.openSessions()
	if err != nil || len(opens) == 0 {
		return err
	}
	belongs := belongsTo(f, r)
	for _, o := range opens {
		if ok, err := belongs(o); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		n := o.n
		s, ok, err := f.session(n)
		if err != nil || !ok {
			return fmt.Errorf("open session %d: %v", n, err)
		}
		if r.Type == events.TypeSessionStarted && r.Seq != s.StartSeq {
			continue // another session's start: no leaf of this one
		}
		leaves, err := f.tx.Space(spSessionLeaves)
		if err != nil {
			return err
		}
		v := append(append([]byte(nil), r.Hash[:]...), strings.Join(taskSubjects(r), ",")...)
		if err := leaves.Put(key2(n, r.Seq), v); err != nil {
			return err
		}
		s.Leaves.Append(r.Hash)
		if s.FirstSeq == 0 {
			s.FirstSeq = r.Seq
		}
		s.LastSeq = r.Seq
		if err := f.setSession(n, s); err != nil {
			return err
		}
	}
	return nil
}

// belongsTo returns whether r is a leaf of an open session, by the
// session's entry alone — but for a session start, which is only its own
// session's (offerToSessions reads which): a thought naming the session's
// id, or an event that changes a task or a thought on it, or a tool.called
// naming one (CONTRACT.md §5: another session's start or finalization
// names the task but changes nothing), whose task subjects are the
// session's task or, in deep scope, below it (each subject's ancestors
// walked once, when a deep session first asks).
func belongsTo(f *folder, r ledger.Record) func(openSession) (bool, error) {
	if r.Type == events.TypeSessionStarted {
		return func(openSession) (bool, error) { return true, nil }
	}
	var tasks []string
	switch r.Type {
	case events.TypeTaskCreated, events.TypeTaskUpdated, events.TypeThoughtRecorded, TypeToolCalled:
		tasks = taskSubjects(r)
	}
	var above map[string]bool // the task subjects and their ancestors
	return func(o openSession) (bool, error) {
		if r.Type == events.TypeThoughtRecorded && slices.Contains(r.Subjects, o.id) {
			return true, nil
		}
		if len(tasks) == 0 {
			return false, nil
		}
		if slices.Contains(tasks, o.taskID) {
			return true, nil
		}
		if !o.deep {
			return false, nil
		}
		if above == nil {
			above = map[string]bool{}
			for _, id := range tasks {
				err := walkUp(id, f.taskByID, func(id string) bool { above[id] = true; return true })
				if err != nil {
					return false, err
				}
			}
		}
		return above[o.taskID], nil
	}
}

// taskSubjects are the task ids among an event's subjects.
func taskSubjects(r ledger.Record) []string {
	var ids []string
	for _, s := range r.Subjects {
		if strings.HasPrefix(s, domain.TaskPrefix) {
			ids = append(ids, s)
		}
	}
	return ids
}

func putSession(tx *boltstore.Tx, n uint64, s *Session) error {
	sessions, err := tx.Space(spSessions)
	if err != nil {
		return err
	}
	return putRecord(sessions, u64(n), s)
}

// GetSession returns the session with id; ok false if none.
func GetSession(tx *boltstore.Tx, id string) (s Session, ok bool, err error) {
	sessions, n, err := spaceOf(tx, spSessions, domain.SessionPrefix, id)
	if sessions == nil {
		return s, false, err
	}
	ok, err = getRecord(sessions, u64(n), &s)
	return s, ok, err
}

// SessionLeaves calls fn for the session's leaves in ledger order.
func SessionLeaves(tx *boltstore.Tx, id string, fn func(Leaf) error) error {
	leaves, n, err := spaceOf(tx, spSessionLeaves, domain.SessionPrefix, id)
	if leaves == nil {
		return err
	}
	return leaves.Scan(u64(n), false, func(k, v []byte) (bool, error) {
		var l Leaf
		if len(k) != 16 || len(v) < len(l.Hash) {
			return false, fmt.Errorf("session_leaves key %x: value of %d bytes: %w", k, len(v), boltstore.ErrDamaged)
		}
		l.Seq = be64(k[8:])
		copy(l.Hash[:], v)
		if rest := string(v[len(l.Hash):]); rest != "" {
			l.Tasks = strings.Split(rest, ",")
		}
		return true, fn(l)
	})
}

// NextSessionID is the id the next audit session gets.
func NextSessionID(tx *boltstore.Tx) (string, error) {
	n, err := nextNumber(tx, counterSession)
	return domain.FormatID(domain.SessionPrefix, n), err
}

// Selects reports whether leaf l is sealed by a finalize (or checked by a
// verify) limited to taskID: every leaf when taskID is "", else the
// session's start event — always its first leaf, so no root is empty — and
// the leaves that concern taskID.
func (s Session) Selects(l Leaf, taskID string) bool {
	return taskID == "" || l.Seq == s.StartSeq || slices.Contains(l.Tasks, taskID)
}

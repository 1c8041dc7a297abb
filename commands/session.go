package commands

import (
	"cmp"
	"slices"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/projections"
)

// StartSessionInput is audit_session_start's arguments.
type StartSessionInput struct {
	TaskID    string `json:"task_id"`
	AuditorID string `json:"auditor_id"`
	Reason    string `json:"reason"`
	Scope     string `json:"scope"`
}

// StartSessionResult is audit_session_start's answer.
type StartSessionResult struct {
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
	AuditorID string `json:"auditor_id"`
	StartedAt string `json:"started_at"`
	Scope     string `json:"scope"`
	StartSeq  uint64 `json:"start_seq"`
}

// StartSession opens an audit session on a task; its start event is its
// first leaf.
func (s *Service) StartSession(tx *Tx, in StartSessionInput) (*StartSessionResult, error) {
	if err := requireTask(tx, in.TaskID); err != nil {
		return nil, err
	}
	id, err := projections.NextSessionID(tx.lt)
	if err != nil {
		return nil, err
	}
	p := events.SessionStarted{SessionID: id, TaskID: in.TaskID, AuditorID: in.AuditorID, Reason: in.Reason, Scope: cmp.Or(in.Scope, "shallow")}
	rec, err := tx.emit(events.TypeSessionStarted, []string{id, in.TaskID}, p)
	if err != nil {
		return nil, err
	}
	return &StartSessionResult{SessionID: id, TaskID: in.TaskID, AuditorID: in.AuditorID,
		StartedAt: projections.FormatTime(rec.Time), Scope: p.Scope, StartSeq: rec.Seq}, nil
}

// FinalizeInput is merkle_finalize's arguments.
type FinalizeInput struct {
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
}

// FinalizeResult is merkle_finalize's answer.
type FinalizeResult struct {
	SessionID   string `json:"session_id"`
	MerkleRoot  string `json:"merkle_root"`
	TreeDepth   int    `json:"tree_depth"`
	LeafCount   uint64 `json:"leaf_count"`
	FirstSeq    uint64 `json:"first_seq"`
	LastSeq     uint64 `json:"last_seq"`
	FinalizedAt string `json:"finalized_at"`
	Frozen      bool   `json:"frozen"`
	LedgerSize  uint64 `json:"ledger_size"`
	LedgerRoot  string `json:"ledger_root"`
}

func (s *Service) session(tx *Tx, id string) (projections.Session, error) {
	sess, ok, err := projections.GetSession(tx.lt, id)
	if err == nil && !ok {
		err = &NotFoundError{Kind: ErrSessionNotFound, ID: id}
	}
	return sess, err
}

// Finalize freezes the session's root over its leaves (or only the leaves of
// task_id) and records it; the ledger root right after is returned too.
func (s *Service) Finalize(tx *Tx, in FinalizeInput) (*FinalizeResult, error) {
	sess, err := s.session(tx, in.SessionID)
	if err != nil {
		return nil, err
	}
	if sess.Final != nil {
		return nil, &FinalizedError{SessionID: sess.SessionID}
	}
	p := events.SessionFinalized{SessionID: sess.SessionID, TaskID: in.TaskID}
	if in.TaskID != "" {
		if err := requireTask(tx, in.TaskID); err != nil {
			return nil, err
		}
	}
	var f ledger.Frontier
	concerned := false // a leaf concerns in.TaskID
	err = projections.SessionLeaves(tx.lt, sess.SessionID, func(l projections.Leaf) error {
		if sess.Selects(l, p.TaskID) {
			f.Append(l.Hash)
			if p.FirstSeq == 0 {
				p.FirstSeq = l.Seq
			}
			p.LastSeq = l.Seq
			concerned = concerned || in.TaskID != "" && slices.Contains(l.Tasks, in.TaskID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := requireLeavesOrScope(tx, sess, in.TaskID, concerned); err != nil {
		return nil, err
	}
	p.MerkleRoot, p.TreeDepth, p.LeafCount = f.Root().String(), f.Depth(), f.Size
	rec, err := tx.emit(events.TypeSessionFinalized, []string{sess.SessionID, sess.TaskID}, p)
	if err != nil {
		return nil, err
	}
	root, err := tx.lt.Root(rec.Seq)
	if err != nil {
		return nil, err
	}
	return &FinalizeResult{SessionID: sess.SessionID, MerkleRoot: p.MerkleRoot, TreeDepth: p.TreeDepth,
		LeafCount: p.LeafCount, FirstSeq: p.FirstSeq, LastSeq: p.LastSeq, FinalizedAt: projections.FormatTime(rec.Time),
		Frozen: true, LedgerSize: rec.Seq, LedgerRoot: root.String()}, nil
}

func inScope(tx *Tx, sess projections.Session, taskID string) (bool, error) {
	if sess.Scope != "deep" {
		return taskID == sess.TaskID, nil
	}
	return projections.IsWithin(tx.lt, taskID, sess.TaskID)
}

// requireLeavesOrScope is the rule of merkle_finalize's and
// audit_verify_chain's task_id with a session: a task with a leaf in the
// session (concerned: an event on a task in scope, or a thought recorded
// on any task with the session's id) selects those leaves; one with none
// must at least be in the scope, else it would select the session's start
// event alone and is refused.
func requireLeavesOrScope(tx *Tx, sess projections.Session, taskID string, concerned bool) error {
	if taskID == "" || concerned {
		return nil
	}
	return requireInScope(tx, sess, taskID)
}

// requireInScope refuses a task that does not exist, or one outside the
// session's scope.
func requireInScope(tx *Tx, sess projections.Session, taskID string) error {
	if err := requireTask(tx, taskID); err != nil {
		return err
	}
	in, err := inScope(tx, sess, taskID)
	if err != nil {
		return err
	}
	if !in {
		return Invalid("task_id", "task %s is not in the scope (%s) of session %s on %s", taskID, sess.Scope, sess.SessionID, sess.TaskID)
	}
	return nil
}

// RootInput is merkle_root's arguments.
type RootInput struct {
	SessionID string `json:"session_id"`
}

// RootResult is merkle_root's answer.
type RootResult struct {
	SessionID   string `json:"session_id"`
	MerkleRoot  string `json:"merkle_root"`
	LeafCount   uint64 `json:"leaf_count"`
	IsFinalized bool   `json:"is_finalized"`
	AsOf        string `json:"as_of"`
	AsOfSeq     uint64 `json:"as_of_seq"`
}

// Root is the session's frozen root, or the root over its leaves so far.
// as_of_seq is the finalize event's seq, or the ledger head.
func (s *Service) Root(tx *Tx, in RootInput) (*RootResult, error) {
	sess, err := s.session(tx, in.SessionID)
	if err != nil {
		return nil, err
	}
	if sess.Final != nil {
		return &RootResult{SessionID: sess.SessionID, MerkleRoot: sess.Final.MerkleRoot, LeafCount: sess.Final.LeafCount,
			IsFinalized: true, AsOf: sess.FinalizedAt, AsOfSeq: sess.LedgerSize}, nil
	}
	return &RootResult{SessionID: sess.SessionID, MerkleRoot: sess.Leaves.Root().String(), LeafCount: sess.Leaves.Size,
		AsOf: projections.FormatTime(time.Now()), AsOfSeq: tx.lt.Head().Seq}, nil
}

// VerifyChainInput is audit_verify_chain's arguments.
type VerifyChainInput struct {
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
	FullTrace bool   `json:"full_trace"`
}

// BrokenLink is one event whose hash or link does not hold.
type BrokenLink struct {
	Position     uint64 `json:"position"`
	ExpectedHash string `json:"expected_hash"`
	ActualHash   string `json:"actual_hash"`
	Problem      string `json:"problem"`
}

// SeqHash is one event's recomputed hash.
type SeqHash struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// VerifyChainResult is audit_verify_chain's answer.
type VerifyChainResult struct {
	SessionID      string       `json:"session_id,omitempty"`
	TaskID         string       `json:"task_id,omitempty"`
	ChainValid     bool         `json:"chain_valid"`
	TotalRecords   uint64       `json:"total_records"`
	IntegrityScore int          `json:"integrity_score"`
	BrokenLinks    []BrokenLink `json:"broken_links"`
	VerifiedAt     string       `json:"verified_at"`
	MerkleValid    *bool        `json:"merkle_valid,omitempty"`
	Hashes         []SeqHash    `json:"hashes,omitempty"`
}

// VerifyChain re-hashes events from their stored bytes and checks their
// links: the whole ledger, a task's events, or a session's leaves. Problems
// are reported in the result, never as an error.
func (s *Service) VerifyChain(tx *Tx, in VerifyChainInput) (*VerifyChainResult, error) {
	res := &VerifyChainResult{SessionID: in.SessionID, TaskID: in.TaskID, BrokenLinks: []BrokenLink{}}
	var seqs []uint64   // nil: the whole ledger
	var frozen []uint64 // a finalized session's sealed leaves
	var sess projections.Session
	switch {
	case in.SessionID != "":
		var err error
		if sess, err = s.session(tx, in.SessionID); err != nil {
			return nil, err
		}
		if in.TaskID != "" {
			if err := requireTask(tx, in.TaskID); err != nil {
				return nil, err
			}
		}
		seqs = []uint64{}
		concerned := false // a leaf concerns in.TaskID
		err = projections.SessionLeaves(tx.lt, in.SessionID, func(l projections.Leaf) error {
			if sess.Selects(l, in.TaskID) {
				seqs = append(seqs, l.Seq)
				concerned = concerned || in.TaskID != "" && slices.Contains(l.Tasks, in.TaskID)
			}
			if sess.Final != nil && sess.Selects(l, sess.Final.TaskID) {
				frozen = append(frozen, l.Seq)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if err := requireLeavesOrScope(tx, sess, in.TaskID, concerned); err != nil {
			return nil, err
		}
	case in.TaskID != "":
		var err error
		if seqs, err = taskSeqs(tx, in.TaskID); err != nil {
			return nil, err
		}
	}
	broken := map[uint64]bool{}
	collect := func(p *ledger.IntegrityError) error {
		if !broken[p.Seq] {
			broken[p.Seq] = true
			res.BrokenLinks = append(res.BrokenLinks, BrokenLink{Position: p.Seq, ExpectedHash: p.Want.String(), ActualHash: p.Got.String(), Problem: string(p.Problem)})
		}
		return nil
	}
	// rehash is the hash of the event's stored bytes; ok is false if they no
	// longer decode (a broken link already, with no hash to show).
	rehash := func(seq uint64) (ledger.Hash, bool) {
		r, err := tx.lt.Event(seq)
		return r.Hash, err == nil
	}
	check := func(begin, end uint64) error {
		_, err := tx.lt.VerifyEvents(begin, end, collect)
		if err != nil {
			return err
		}
		if in.FullTrace {
			for seq := begin; seq < end; seq++ {
				if h, ok := rehash(seq); ok {
					res.Hashes = append(res.Hashes, SeqHash{Seq: seq, Hash: h.String()})
				}
			}
		}
		return nil
	}
	if seqs == nil {
		res.TotalRecords = tx.lt.Head().Seq
		if err := check(1, tx.lt.Head().Seq+1); err != nil {
			return nil, err
		}
	}
	for _, seq := range seqs {
		res.TotalRecords++
		if err := check(seq, seq+1); err != nil {
			return nil, err
		}
	}
	res.ChainValid = len(res.BrokenLinks) == 0
	res.IntegrityScore = integrityScore(res.TotalRecords, uint64(len(broken)))
	if sess.Final != nil {
		// The frozen root over the sealed leaves (all of them, or those of
		// the task it was finalized for), recomputed from stored bytes.
		var f ledger.Frontier
		valid := true
		for _, seq := range frozen {
			h, ok := rehash(seq)
			valid = valid && ok
			f.Append(h)
		}
		valid = valid && f.Root().String() == sess.Final.MerkleRoot
		res.MerkleValid = &valid
	}
	res.VerifiedAt = projections.FormatTime(time.Now())
	return res, nil
}

// integrityScore is the share (0–100) of the records expected whose hash
// and link hold; a problem outside them (a gap past the head) still counts.
func integrityScore(total, broken uint64) int {
	if total == 0 {
		if broken > 0 {
			return 0
		}
		return 100
	}
	return int(100 * (total - min(broken, total)) / total)
}

// taskSeqs are the events that changed the task or recorded a thought on it,
// in ledger order.
func taskSeqs(tx *Tx, id string) ([]uint64, error) {
	if err := requireTask(tx, id); err != nil {
		return nil, err
	}
	seqs, err := projections.TaskEventSeqs(tx.lt, id)
	if err != nil {
		return nil, err
	}
	err = projections.TaskThoughts(tx.lt, id, func(th projections.Thought) bool {
		seqs = append(seqs, th.Seq)
		return true
	})
	slices.Sort(seqs)
	return seqs, err
}

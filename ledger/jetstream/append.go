package jetstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

const (
	hdrExpectedLastSeq = "Nats-Expected-Last-Sequence" // whole stream, never per subject
	hdrBatchID         = "Nats-Batch-Id"
	hdrBatchSeq        = "Nats-Batch-Sequence"
	hdrBatchCommit     = "Nats-Batch-Commit"
	// hdrAppendID names the append (one store commit) a message belongs to,
	// so that reading the stream back tells our append from another's.
	hdrAppendID = "Logbook-Append-Id"
)

// The API error codes an append's answer is told by.
const (
	codeWrongLastSeq         = 10071
	codeWrongLastSeqConstant = 10164
	codeNotAvailable         = 10008
	codeNotLeader            = 10009
	codeIncompleteBatch      = 10176 // e.g. the leader changed while it was staged
	codeTooManyBatches       = 10210
)

// pubAck is the servers' answer to a publish or a batch commit.
type pubAck struct {
	Seq   uint64 `json:"seq"`
	Count int    `json:"count"`
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// apiError is an append the servers refused, with their reason.
type apiError struct {
	code int
	desc string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("stream refused the append: %s (%d)", e.desc, e.code)
}

func (e *apiError) headMoved() bool {
	return e.code == codeWrongLastSeq || e.code == codeWrongLastSeqConstant
}

// lastSeq is the stream's last sequence a "wrong last sequence" refusal
// names, if it does.
func (e *apiError) lastSeq() (uint64, bool) {
	if e.code != codeWrongLastSeq {
		return 0, false
	}
	i := strings.LastIndexByte(e.desc, ' ')
	seq, err := strconv.ParseUint(e.desc[i+1:], 10, 64)
	return seq, err == nil
}

// transient: the servers could not take the append now (a leader change, a
// batch lost with the leader that staged it); it is sent again.
func (e *apiError) transient() bool {
	switch e.code {
	case codeNotAvailable, codeNotLeader, codeIncompleteBatch, codeTooManyBatches:
		return true
	}
	return false
}

// Append appends events (seq head.Seq+1 onwards) as one atomic batch if the
// stream's last sequence is still head.Seq. See the package doc for how an
// ambiguous outcome is resolved.
func (r *Replica) Append(head ledger.Head, events [][]byte) error {
	if len(events) == 0 {
		return nil
	}
	if err := r.unsafeErr(); err != nil {
		return err
	}
	if len(events) > MaxBatch {
		return fmt.Errorf("append of %d events: an atomic batch holds at most %d; lower the store's MaxBatch", len(events), MaxBatch)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acked.Store(0) // only this append's acknowledgement may set it
	id := nuid.Next()
	deadline := time.Now().Add(r.opts.ResolveWithin)
	ambiguous := false // whether an earlier attempt may have landed
	var last error
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		pending := false // refused for another node's append the leader proposed
		seq, err := r.publish(attempt, head.Seq, id, events)
		r.tracef("publish after %d attempt %d via %s: %v in %v", head.Seq, attempt, r.nc.ConnectedServerName(), err, time.Since(sent).Round(time.Millisecond))
		var refused *apiError
		switch {
		case err == nil:
			r.leaderAnswered()
			if want := head.Seq + uint64(len(events)); seq != want {
				return fmt.Errorf("stream %s acknowledged the append at seq %d, want %d", r.opts.Stream, seq, want)
			}
			r.noteKnown(seq)
			r.acked.Store(seq)
			r.refusedRun.Store(0)
			return nil
		case errors.As(err, &refused) && refused.headMoved():
			// Not proof that nothing of ours landed: after a partition
			// heals, the server that was cut off may for a while still
			// answer as the leader of its stale copy alongside the one
			// the others elected, which may take the batch; the first
			// answer is the one read. Only the stream at head+1 tells.
			ambiguous = true
			if last, ok := refused.lastSeq(); ok && last > head.Seq {
				r.hintAt.Store(sent.UnixNano())
				r.hint.Store(last)
				pending = true
			}
		case errors.As(err, &refused) && !refused.transient():
			// A definite refusal (a limit, a sealed stream): nothing of this
			// attempt landed, but an earlier ambiguous one might have.
			if !ambiguous {
				return err
			}
		case errors.As(err, &refused):
			// Transient: nothing of this attempt landed; read back for
			// earlier ones.
			r.leaderLost(sent)
		case errors.Is(err, ErrDenied):
			// Dropped by the servers: nothing of this attempt landed,
			// nor of any other unless an earlier one was ambiguous
			// (read back, then, as for a refusal).
			if !ambiguous {
				return fmt.Errorf("append after seq %d: %w", head.Seq, err)
			}
		default:
			ambiguous = true
			r.leaderLost(sent)
		}
		last = err
		rb := time.Now()
		landed, err := r.readBack(head.Seq, id, events)
		r.tracef("read back after %d via %s: landed %v, %v in %v", head.Seq, r.nc.ConnectedServerName(), landed, err, time.Since(rb).Round(time.Millisecond))
		switch {
		case err == nil && landed:
			r.leaderAnswered()
			r.refusedRun.Store(0)
			r.noteKnown(head.Seq + uint64(len(events)))
			return nil
		case errors.Is(err, boltstore.ErrHeadMoved) || errors.Is(err, boltstore.ErrLogGone) || errors.As(err, new(*ledger.IntegrityError)):
			// (A stream gone holds nothing of an earlier attempt either.)
			if errors.Is(err, boltstore.ErrHeadMoved) {
				r.refused()
			}
			return err
		case err != nil:
			last = errors.Join(last, err)
		case refused != nil && refused.headMoved():
			// Refused for a last sequence other than head, yet the
			// stream's leader holds nothing at head+1: a leader that
			// lags what was committed (just elected), or counts
			// proposals it cannot commit (cut off from the others, it
			// refuses every append so until it steps down, 10-20s later).
			r.leaderLost(sent)
		}
		// Nothing at head+1 yet (or the read failed): send the same batch
		// again. Its expected last sequence lets at most one copy land.
		wait := retryWait(attempt, pending)
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%w: append after seq %d to stream %s not resolved within %v: %w",
				boltstore.ErrAppendUnknown, head.Seq, r.opts.Stream, r.opts.ResolveWithin, last)
		}
		r.sleep(wait)
	}
}

// retryWait is how long an append waits after its attempt number attempt
// (from 0) before it reads the stream back and sends its batch again:
// doubling from 20ms up to a second (a leader change, a lost answer), but
// from 1ms when the attempt was refused for a last sequence past the head
// whose first message the leader did not serve yet (pending). That is
// another node's append the leader proposed and commits within a quorum's
// round trip: the refused node then finds it at head+1 and decides again.
// Waiting 20ms there let a neighbour whose own appends need no read append
// 30-40 events meanwhile, and the refused node, a step behind at every
// try, lost all of the store's retries (boltstore's ErrHeadMoved) under
// load. A leader that counts proposals it cannot commit (cut off from the
// others) refuses so until it steps down: the waits double from 1ms too.
func retryWait(attempt int, pending bool) time.Duration {
	base := 20 * time.Millisecond
	if pending {
		base = time.Millisecond
	}
	return min(base<<min(attempt, 10), time.Second)
}

// sleep pauses an append between attempts (a test's hook may stand in).
func (r *Replica) sleep(d time.Duration) {
	if r.hooks.sleep != nil {
		r.hooks.sleep(d)
		return
	}
	time.Sleep(d)
}

// readBack tells whether the stream holds this append at head+1: true if
// it does, ErrHeadMoved if it holds another's, false if nothing is there.
func (r *Replica) readBack(head uint64, id string, events [][]byte) (bool, error) {
	msgs, _, err := r.read(head+1, len(events))
	if len(msgs) < len(events) {
		// The server read from may lag (just restarted, healed from a
		// partition): ask the leader, which holds what was committed.
		lmsgs, lerr := r.readLeader(head+1, head+uint64(len(events)))
		switch {
		case len(lmsgs) > len(msgs):
			msgs, err = lmsgs, lerr
		case errors.Is(lerr, jetstream.ErrMsgNotFound) && len(msgs) == 0:
			return false, nil
		case lerr != nil:
			err = errors.Join(err, lerr)
		}
	}
	if len(msgs) == 0 {
		return false, err
	}
	if msgs[0].seq != head+1 || msgs[0].id != id {
		r.noteKnown(head + 1)
		return false, boltstore.ErrHeadMoved
	}
	// A batch lands whole: the rest is ours too, byte for byte.
	if len(msgs) != len(events) {
		return false, fmt.Errorf("read back %d of the append's %d events at seq %d: %w", len(msgs), len(events), head+1, err)
	}
	for i, m := range msgs {
		if m.seq != head+1+uint64(i) || m.id != id || !bytes.Equal(m.data, events[i]) {
			return false, &ledger.IntegrityError{Seq: head + 1 + uint64(i), Problem: ledger.ProblemContent,
				Detail: "the stream holds this append's message with other bytes"}
		}
	}
	return true, nil
}

// publish sends events as one atomic batch (a plain publish for one event),
// the first carrying the expected last sequence, and returns the sequence
// the servers acknowledged for the last.
func (r *Replica) publish(attempt int, expected uint64, id string, events [][]byte) (uint64, error) {
	var unsent, noAnswer bool
	if r.hooks.lose != nil {
		if unsent, noAnswer = r.hooks.lose(attempt); unsent {
			return 0, nats.ErrTimeout
		}
	}
	if r.hooks.refuse != nil {
		if err := r.hooks.refuse(attempt, expected); err != nil {
			return 0, err
		}
	}
	batch := ""
	if len(events) > 1 {
		batch = nuid.Next()
	}
	var reply *nats.Msg
	before := r.nc.LastError()
	for i, data := range events {
		m := nats.NewMsg(r.subject)
		m.Data = data
		m.Header.Set(hdrAppendID, id)
		if i == 0 {
			m.Header.Set(hdrExpectedLastSeq, strconv.FormatUint(expected, 10))
		}
		if batch != "" {
			m.Header.Set(hdrBatchID, batch)
			m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		}
		if i < len(events)-1 {
			if err := r.nc.PublishMsg(m); err != nil {
				return 0, err
			}
			continue
		}
		if batch != "" {
			m.Header.Set(hdrBatchCommit, "1")
		}
		var err error
		if reply, err = r.nc.RequestMsg(m, r.opts.Timeout); err != nil {
			return 0, r.deniedSince(err, before, r.subject) // (dropped by the servers if denied: unstored)
		}
		if noAnswer {
			return 0, nats.ErrTimeout
		}
	}
	var ack pubAck
	if err := json.Unmarshal(reply.Data, &ack); err != nil {
		return 0, fmt.Errorf("stream %s: unreadable answer to an append: %w", r.opts.Stream, err)
	}
	if ack.Error != nil {
		return 0, &apiError{code: ack.Error.ErrCode, desc: ack.Error.Description}
	}
	return ack.Seq, nil
}

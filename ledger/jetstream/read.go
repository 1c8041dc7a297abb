package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readBatch is the most messages one direct get asks for.
const readBatch = 512

// message is one stream message as read back.
type message struct {
	seq  uint64
	id   string // the Logbook-Append-Id of the append that carried it
	data []byte
}

// readMaxBytes bounds the bytes of one batch read (the server sends at
// least one message, then stops once past it; read's caller reads on).
// Unset, a server bounds it by its own max_pending (64 MiB by default),
// which nats-server 2.15.2 reads without its lock: under the race detector
// a configuration reload meanwhile (the rights tests) was a data race.
const readMaxBytes = 8 << 20

// read asks the stream (any server holding it, as the stream's direct get
// answers) for up to n messages from seq from on. It returns them in order
// and how many more the server holds past them.
func (r *Replica) read(from uint64, n int) (msgs []message, pending uint64, err error) {
	r.reqID++
	reply := r.inbox + "." + strconv.FormatUint(r.reqID, 10)
	body := fmt.Appendf(nil, `{"seq":%d,"batch":%d,"max_bytes":%d}`, from, n, readMaxBytes)
	before := r.nc.LastError()
	if err := r.nc.PublishRequest(r.getSubj, reply, body); err != nil {
		return nil, 0, err
	}
	deadline := time.Now().Add(r.opts.Timeout)
	for {
		m, err := r.replies.NextMsg(max(time.Until(deadline), time.Millisecond))
		if err != nil {
			return msgs, 0, r.deniedSince(err, before, r.getSubj)
		}
		if m.Subject != reply {
			continue // a late answer to an earlier read
		}
		switch status := m.Header.Get("Status"); status {
		case "":
			seq, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
			if err != nil {
				return msgs, 0, fmt.Errorf("direct get: a message without its sequence: %w", err)
			}
			data := m.Data
			if r.hooks.tamper != nil {
				data = r.hooks.tamper(seq, data)
			}
			msgs = append(msgs, message{seq: seq, id: m.Header.Get(hdrAppendID), data: data})
		case "204": // end of batch
			pending, _ := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
			return msgs, pending, nil
		case "404": // nothing at or past from
			return msgs, 0, nil
		case "503":
			return msgs, 0, nats.ErrNoResponders
		default:
			return msgs, 0, fmt.Errorf("direct get: %s %s", status, m.Header.Get("Description"))
		}
	}
}

// CatchUp ingests into tx every message the stream holds past the local
// head, after checking that the message at the local head is the local
// head's event. It reads from the server nearest to it (direct gets); if
// that one lags behind what this replica knows the stream holds, it reads
// from the stream's leader, bounded by Options.Timeout.
//
// It reads nothing when the local head is this replica's own last append,
// acknowledged by the stream with nothing heard of since, and the head was
// compared with the stream within headCheckEvery: a sequential writer then
// pays one round trip per append, not two. If another node appended
// meanwhile, the append's expected last sequence refuses it (ErrHeadMoved)
// and the catch-up that follows reads; a message at the head changed
// behind the servers' back (deletes and purges are denied) is found by the
// next catch-up that reads, within headCheckEvery, as by every node that
// ingests it.
func (r *Replica) CatchUp(tx *boltstore.Tx) error {
	if err := r.unsafeErr(); err != nil {
		return err
	}
	yielded := r.yield()
	r.mu.Lock()
	defer r.mu.Unlock()
	head := tx.Head().Seq
	if !yielded && head > 0 && r.acked.Load() == head && max(r.known.Load(), r.hint.Load()) <= head &&
		time.Since(time.Unix(0, r.checked.Load())) < headCheckEvery {
		return nil
	}
	start := time.Now()
	if err := r.catchUp(tx); err != nil {
		if !errors.As(err, new(*ledger.IntegrityError)) && !errors.Is(err, ErrDenied) {
			// Nothing served what the stream holds within the timeout:
			// the server this connection holds may be cut off.
			r.leaderLost(start)
		}
		return err
	}
	// What it read in is the stream's: known, so that a commit rolled
	// back with it (a call refused, a read's record) leaves the next one
	// to read it in again, not to skip the read for headCheckEvery and
	// decide against the older head (refused by the compare-and-append,
	// then run again: a wasted append).
	r.noteKnown(tx.Head().Seq)
	r.checked.Store(time.Now().UnixNano())
	return nil
}

// headCheckEvery is how long a writer that appended last may skip reading
// the stream before its appends (see CatchUp).
const headCheckEvery = 100 * time.Millisecond

func (r *Replica) catchUp(tx *boltstore.Tx) error {
	c := &catchUp{tx: tx, head: tx.Head(), checked: tx.Head().Seq == 0}
	// A conflict's hint is only worth a short wait: the leader that named
	// it may count appends it proposed that will never commit.
	hint, hintAt := r.hint.Swap(0), r.hintAt.Load()
	start := time.Now()
	deadline := start.Add(r.opts.Timeout)
	// Past the deadline a catch-up the servers did not serve, for no
	// verdict of theirs, waits on until giveUp (ResolveWithin, as an
	// append waits for the servers): a connection through which the
	// leader stays out of reach for LeaderWait is moved to another server
	// meanwhile, one whose server was killed reconnects at once, and a
	// leader is elected within 4-9s (reads need none: any server holding
	// the stream serves them).
	giveUp := start.Add(r.opts.ResolveWithin)
	progress := time.Now()
	wait := time.Millisecond
	for {
		at := c.next()
		rs := time.Now()
		msgs, pending, err := r.read(at, readBatch)
		r.tracef("catch-up read from %d via %s: %d msgs, pending %d, %v in %v", at, r.nc.ConnectedServerName(), len(msgs), pending, err, time.Since(rs).Round(time.Millisecond))
		if err != nil && !unanswered(err) {
			return fmt.Errorf("read stream %s from seq %d: %w", r.opts.Stream, at, err)
		}
		if err != nil {
			// No server served the read through this connection: a
			// failed request towards moving it (leaderLost), from when
			// it was sent. (Counting only the leader gets and stream
			// infos that follow it, the run began a Timeout late.)
			r.leaderLost(rs)
		}
		if errors.Is(err, nats.ErrNoResponders) {
			// No server holding the stream took the direct get: the
			// stream may be gone, which the leader get tells at once.
			if _, lerr := r.leaderGet(at); errors.Is(lerr, boltstore.ErrLogGone) {
				return lerr
			}
		}
		if err := c.apply(msgs); err != nil {
			return err
		}
		if err == nil && c.checked && pending == 0 && tx.Head().Seq >= max(r.known.Load(), hint) {
			return nil
		}
		if c.next() > at {
			progress = time.Now()
			if err == nil && pending > 0 {
				continue
			}
		}
		if time.Since(progress) > leaderAfter {
			// The nearest server lags (restarted, partitioned): read what
			// this replica knows the stream holds from its leader.
			msgs, lerr := r.readLeader(c.next(), max(r.known.Load(), hint))
			if err := c.apply(msgs); err != nil {
				return err
			}
			if errors.Is(lerr, boltstore.ErrLogGone) {
				return lerr
			}
			if c.next() > at {
				progress = time.Now()
				continue
			}
			if err == nil && c.checked && tx.Head().Seq >= r.known.Load() {
				if hint > tx.Head().Seq {
					// The leader refused an append naming a last sequence
					// it does not serve: a proposal it cannot commit,
					// as when it is cut off from the others (it counts
					// what it proposed, and refuses every append with
					// it until it steps down, 10-20s later).
					r.leaderLost(time.Unix(0, hintAt))
				}
				return nil // the hint is not (yet) committed
			}
			err = errors.Join(err, lerr)
		}
		if time.Now().After(deadline) {
			berr := r.behind(tx.Head(), c.checked, time.Since(start), err)
			var u *unservedError
			if !errors.As(berr, &u) || time.Now().After(giveUp) {
				return berr
			}
			if err := r.unsafeErr(); err != nil {
				return err // settings edited meanwhile (seen in behind's info)
			}
			// (Its failed requests counted towards moving the
			// connection: leaderLost.)
			r.tracef("catch-up at %d not served for %v, waiting on: %v", tx.Head().Seq, time.Since(start).Round(time.Millisecond), berr)
			deadline = time.Now().Add(r.opts.Timeout)
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// leaderAfter is how long a catch-up waits for the nearest server to serve
// what the stream holds before it asks the leader.
const leaderAfter = 200 * time.Millisecond

// catchUp is one CatchUp's progress.
type catchUp struct {
	tx      *boltstore.Tx
	head    ledger.Head // the local head it started from
	checked bool        // whether the stream's message at head was compared
}

// next is the seq to read next.
func (c *catchUp) next() uint64 {
	if !c.checked {
		return c.head.Seq
	}
	return c.tx.Head().Seq + 1
}

// apply checks the message at the local head and ingests those past it.
func (c *catchUp) apply(msgs []message) error {
	for _, m := range msgs {
		if !c.checked {
			if m.seq != c.head.Seq {
				// A server holds messages in order: one past the head
				// without the head means the head's message is gone.
				return &ledger.IntegrityError{Seq: c.head.Seq, Problem: ledger.ProblemGap, Detail: fmt.Sprintf("the stream holds seq %d, not this node's head", m.seq)}
			}
			if h := ledger.LeafHash(m.data); h != c.head.Hash {
				return &ledger.IntegrityError{Seq: c.head.Seq, Problem: ledger.ProblemContent, Want: c.head.Hash, Got: h,
					Detail: "the stream's message differs from this node's event"}
			}
			c.checked = true
			continue
		}
		if want := c.tx.Head().Seq + 1; m.seq != want {
			return &ledger.IntegrityError{Seq: want, Problem: ledger.ProblemGap, Detail: fmt.Sprintf("the stream holds seq %d next", m.seq)}
		}
		if _, err := c.tx.Ingest(m.data); err != nil {
			return err
		}
	}
	return nil
}

// readLeader reads messages from..upTo (at most readBatch) from the
// stream's leader, one request each (the stream's message get, which its
// leader answers; a direct get, as jetstream.Stream.GetMsg sends for a
// stream that allows them, is answered by any server holding the stream,
// a lagging one too), stopping at the first it lacks.
func (r *Replica) readLeader(from, upTo uint64) ([]message, error) {
	var msgs []message
	for seq := from; seq <= upTo && len(msgs) < readBatch; seq++ {
		sent := time.Now()
		m, err := r.leaderGet(seq)
		r.tracef("leader get %d via %s: %v in %v", seq, r.nc.ConnectedServerName(), err, time.Since(sent).Round(time.Millisecond))
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) && !errors.Is(err, boltstore.ErrLogGone) {
			r.leaderLost(sent)
		}
		if err != nil {
			return msgs, err
		}
		if r.hooks.tamper != nil {
			m.data = r.hooks.tamper(seq, m.data)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// msgGetResponse is the stream leader's answer to a message get.
type msgGetResponse struct {
	Message *struct {
		Seq  uint64 `json:"seq"`
		Hdrs []byte `json:"hdrs"`
		Data []byte `json:"data"`
	} `json:"message"`
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// The API error codes of a message get for a seq the stream does not hold,
// and for a stream that does not exist (which the cluster's metadata
// leader answers: authoritative).
const (
	codeMsgNotFound    = 10037
	codeStreamNotFound = 10059
)

// gone is the error of a stream that no longer exists.
func (r *Replica) gone() error {
	return fmt.Errorf("%w: stream %s was deleted (it is not made again: restore it, or logbook migrate this node's copy into a new one)",
		boltstore.ErrLogGone, r.opts.Stream)
}

// leaderReadTimeout bounds a read from the stream's leader: a leader
// answers within milliseconds, and while none is elected (4-9s) no server
// answers at all; a read it bounds is tried again.
const leaderReadTimeout = time.Second

// leaderGet asks the stream's leader for the message at seq;
// jetstream.ErrMsgNotFound if it holds none there.
func (r *Replica) leaderGet(seq uint64) (message, error) {
	body := fmt.Appendf(nil, `{"seq":%d}`, seq)
	before := r.nc.LastError()
	reply, err := r.nc.Request(r.msgGetSubj, body, min(r.opts.Timeout, leaderReadTimeout))
	if err != nil {
		return message{}, r.deniedSince(err, before, r.msgGetSubj)
	}
	var resp msgGetResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return message{}, fmt.Errorf("stream %s: unreadable answer to a message get: %w", r.opts.Stream, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == codeMsgNotFound:
		return message{}, jetstream.ErrMsgNotFound
	case resp.Error != nil && resp.Error.ErrCode == codeStreamNotFound:
		return message{}, r.gone()
	case resp.Error != nil:
		return message{}, &apiError{code: resp.Error.ErrCode, desc: resp.Error.Description}
	case resp.Message == nil:
		return message{}, fmt.Errorf("stream %s: a message get answered without the message", r.opts.Stream)
	}
	m := message{seq: resp.Message.Seq, data: resp.Message.Data}
	if len(resp.Message.Hdrs) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Hdrs)
		if err != nil {
			return message{}, fmt.Errorf("stream %s: message %d: unreadable headers: %w", r.opts.Stream, seq, err)
		}
		m.id = h.Get(hdrAppendID)
	}
	return m, nil
}

// unservedError is a catch-up the servers did not serve, with no verdict
// of theirs (no answer, a connection being re-established, no leader yet
// or one without a quorum): the servers may serve it a moment later.
type unservedError struct{ error }

func (e *unservedError) Unwrap() error { return e.error }

// Is makes a catch-up that gave up on the servers boltstore.ErrLogUnreachable.
func (e *unservedError) Is(target error) bool { return target == boltstore.ErrLogUnreachable }

// behind explains a catch-up that could not reach what the stream holds:
// the stream lost events this node holds (an *ledger.IntegrityError), or
// it was deleted (boltstore.ErrLogGone), or the servers did not serve it
// (an *unservedError).
func (r *Replica) behind(local ledger.Head, checked bool, waited time.Duration, readErr error) error {
	info, err := r.Info(context.Background())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return r.gone()
	}
	if err != nil {
		err = fmt.Errorf("catch up with stream %s: %w", r.opts.Stream, errors.Join(readErr, err))
		if unanswered(err) || starting(err) {
			err = &unservedError{err}
		}
		return err
	}
	s := info.State
	if !quorumCurrent(info) {
		// A server cut off from the others (or just back) may answer as
		// the leader of its stale copy: its word is no verdict.
		return &unservedError{fmt.Errorf("catch up with stream %s: at seq %d; the server answering as its leader (%s, last seq %d) has no quorum of current replicas: %w",
			r.opts.Stream, local.Seq, info.Cluster.Leader, s.LastSeq, errors.Join(readErr, nats.ErrTimeout))}
	}
	if s.LastSeq < local.Seq {
		return &ledger.IntegrityError{Seq: s.LastSeq + 1, Problem: ledger.ProblemGap,
			Detail: fmt.Sprintf("the stream ends at seq %d (%d deleted); this node holds events up to %d", s.LastSeq, s.NumDeleted, local.Seq)}
	}
	if !checked {
		// The stream reaches the local head, yet its message there was not
		// served: ask the leader whether it still holds it.
		if _, err := r.leaderGet(local.Seq); errors.Is(err, jetstream.ErrMsgNotFound) {
			return &ledger.IntegrityError{Seq: local.Seq, Problem: ledger.ProblemGap, Detail: "the stream no longer holds this node's head"}
		}
	}
	if err := checkState(s); err != nil {
		return &ledger.IntegrityError{Seq: s.FirstSeq, Problem: ledger.ProblemGap, Detail: err.Error()}
	}
	if known := r.known.Load(); known > s.LastSeq {
		return &unservedError{fmt.Errorf("catch up with stream %s: at seq %d; seq %d was acknowledged but the stream's leader reports %d (a leader change not settled within %v): %w",
			r.opts.Stream, local.Seq, known, s.LastSeq, waited.Round(time.Millisecond), errors.Join(readErr, nats.ErrTimeout))}
	}
	return &unservedError{fmt.Errorf("catch up with stream %s: at seq %d, the stream holds %d and no server served them within %v: %w",
		r.opts.Stream, local.Seq, s.LastSeq, waited.Round(time.Millisecond), errors.Join(readErr, nats.ErrTimeout))}
}

// quorumCurrent tells whether the stream's leader, by its own report,
// hears from a majority of the stream's servers (itself included); true for
// an unclustered stream.
func quorumCurrent(info *jetstream.StreamInfo) bool {
	if info.Cluster == nil || len(info.Cluster.Replicas) == 0 {
		return true
	}
	current := 1
	for _, p := range info.Cluster.Replicas {
		if p.Current && !p.Offline {
			current++
		}
	}
	return info.Cluster.Leader != "" && current > (len(info.Cluster.Replicas)+1)/2
}

// noteKnown records that the stream holds at least seq (committed: an
// acknowledgement, or a message read).
func (r *Replica) noteKnown(seq uint64) {
	for {
		k := r.known.Load()
		if seq <= k || r.known.CompareAndSwap(k, seq) {
			return
		}
	}
}

// Scan calls fn with every message of the stream from seq from on, in
// order, as the nearest server holds them; a gap is an integrity error.
func (r *Replica) Scan(from uint64, fn func(seq uint64, raw []byte) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	from = max(from, 1)
	for {
		msgs, pending, err := r.read(from, readBatch)
		if err != nil {
			return fmt.Errorf("read stream %s from seq %d: %w", r.opts.Stream, from, err)
		}
		for _, m := range msgs {
			if m.seq != from {
				return &ledger.IntegrityError{Seq: from, Problem: ledger.ProblemGap, Detail: fmt.Sprintf("the stream holds seq %d next", m.seq)}
			}
			if err := fn(m.seq, m.data); err != nil {
				return err
			}
			from++
		}
		if pending == 0 {
			return nil
		}
	}
}

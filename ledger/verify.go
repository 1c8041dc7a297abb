package ledger

import (
	"context"
	"encoding/binary"
	"fmt"
)

// Problem names what is wrong at a position of the log.
type Problem string

const (
	ProblemMalformed Problem = "malformed event"   // stored bytes are not an event envelope
	ProblemSeq       Problem = "sequence mismatch" // the event claims another position (moved, swapped)
	ProblemGap       Problem = "missing event"     // no event where the log says one is
	ProblemContent   Problem = "content changed"   // bytes no longer hash to what the log committed to
	ProblemLink      Problem = "link broken"       // prev is not the hash of the event before
	ProblemNode      Problem = "merkle node wrong" // a stored Merkle node is not the hash of its children
	ProblemHead      Problem = "head mismatch"     // the recorded head is not the last event
)

// IntegrityError is the first thing found wrong: the sequence number, the
// kind of problem, and for hash problems the hash expected and found.
// Merkle node problems report the seq whose append completed the node.
type IntegrityError struct {
	Seq     uint64
	Problem Problem
	Want    Hash
	Got     Hash
	Detail  string
}

func (e *IntegrityError) Error() string {
	s := fmt.Sprintf("seq %d: %s", e.Seq, e.Problem)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Want != e.Got {
		s += fmt.Sprintf(" (want %s, got %s)", e.Want, e.Got)
	}
	return s
}

// VerifyOptions tune Ledger.Verify.
type VerifyOptions struct {
	Chunk    uint64                   // events per read transaction; default 65536
	Progress func(done, total uint64) // called after each chunk, if set
}

// VerifyReport is what a successful Verify checked.
type VerifyReport struct {
	Size  uint64 // events verified: seq 1..Size
	Head  Hash   // hash of event Size
	Root  Hash   // RFC 9162 root of the first Size events
	Nodes uint64 // Merkle nodes above the leaves re-hashed
}

// Verify re-hashes every stored event, checks every link and every stored
// Merkle node, for the log as it stood when Verify began. It reads in chunks
// of short read transactions so writers in other processes keep going. On
// the first problem it returns an *IntegrityError naming the lowest bad seq;
// other errors are I/O.
func (l *Ledger) Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	if opts.Chunk == 0 {
		opts.Chunk = 1 << 16
	}
	var head Head
	if err := l.View(func(tx *Tx) error { head = tx.Head(); return nil }); err != nil {
		return VerifyReport{}, err
	}
	rep := VerifyReport{Size: head.Seq, Head: head.Hash}
	total := head.Seq + head.Seq // events, then about as many nodes
	var first *IntegrityError
	keep := func(p *IntegrityError) error {
		if first == nil || p.Seq < first.Seq {
			first = p
		}
		return errStop
	}

	c := newChainChecker(head)
	for begin := uint64(1); begin <= head.Seq && first == nil; begin += opts.Chunk {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		end := min(begin+opts.Chunk, head.Seq+1)
		err := l.View(func(tx *Tx) error { return tx.checkEvents(c, begin, end, keep) })
		if err != nil && err != errStop {
			return rep, err
		}
		if opts.Progress != nil {
			opts.Progress(end-1, total)
		}
	}
	if first == nil {
		if p := c.finish(); p != nil {
			keep(p)
		}
	}
	// Levels above the leaves, each against the level below it.
	for level := uint(1); head.Seq>>level > 0; level++ {
		n := head.Seq >> level
		for begin := uint64(0); begin < n; begin += opts.Chunk {
			if first != nil && (begin+1)<<level > first.Seq {
				break // nothing earlier than what we already have
			}
			end := min(begin+opts.Chunk, n)
			var checked uint64
			err := l.View(func(tx *Tx) error {
				var err error
				checked, err = tx.checkNodes(level, begin, end, keep)
				return err
			})
			rep.Nodes += checked
			if err != nil && err != errStop {
				return rep, err
			}
			if opts.Progress != nil {
				opts.Progress(min(head.Seq+rep.Nodes, total), total)
			}
		}
	}
	if first != nil {
		return rep, first
	}
	err := l.View(func(tx *Tx) error {
		var err error
		rep.Root, err = tx.Root(head.Seq)
		return err
	})
	return rep, err
}

// errStop ends a scan early once a problem has been kept.
var errStop = fmt.Errorf("stop")

// VerifyEvents checks the events with seq in [begin, end) inside this
// transaction — hashes against stored leaves, links, positions — and calls
// fn for every problem (not just the first). fn returning an error stops the
// check. It returns how many events were checked.
func (tx *Tx) VerifyEvents(begin, end uint64, fn func(*IntegrityError) error) (uint64, error) {
	if begin < 1 {
		begin = 1
	}
	c := newChainChecker(tx.head)
	if begin > 1 {
		// The link into the range is checked against the hash of event
		// begin-1's bytes, as the whole-log check sees it (a changed stored
		// leaf there is outside the range); against its stored leaf only
		// if the event is gone.
		c.seq = begin - 1
		if raw := tx.events.Get(u64(begin - 1)); raw != nil {
			c.prev = LeafHash(raw)
		} else {
			prev, err := tx.Node(0, begin-2)
			if err != nil {
				return 0, err
			}
			c.prev = prev
		}
	}
	end = min(end, tx.head.Seq+1)
	if err := tx.checkEvents(c, begin, end, fn); err != nil {
		return c.seq - (begin - 1), err
	}
	if end == tx.head.Seq+1 {
		if p := c.finish(); p != nil {
			if err := fn(p); err != nil {
				return c.seq - (begin - 1), err
			}
		}
	} else if c.pending != nil {
		// The range ends inside the log: the event at end tells whether the
		// bytes or the stored leaf changed. (c.prev is the hash of the bytes,
		// so deciding against it would always blame the leaf.) Without a
		// readable next event, the mismatch stays a content problem.
		link := c.pending.Want
		if _, prev, ok := peekEnvelope(tx.events.Get(u64(end))); ok {
			link = prev
		}
		if err := fn(c.flushPending(link)); err != nil {
			return c.seq - (begin - 1), err
		}
	}
	return c.seq - (begin - 1), nil
}

// chainChecker walks events in order. It carries the previous event's
// computed hash across chunks, and holds a leaf mismatch back one event:
// only the next link tells whether the bytes or the stored leaf changed.
type chainChecker struct {
	head    Head   // the recorded head at the start
	seq     uint64 // last seq checked
	prev    Hash   // computed hash of event seq
	pending *IntegrityError
	pendHas Hash // the leaf stored for the pending event
}

func newChainChecker(head Head) *chainChecker { return &chainChecker{head: head} }

// flushPending decides the pending leaf mismatch given the hash the next
// event links to.
func (c *chainChecker) flushPending(link Hash) *IntegrityError {
	p := c.pending
	if p == nil {
		return nil
	}
	c.pending = nil
	if link == p.Got { // the log agrees with the bytes: the stored leaf changed
		p.Problem, p.Want, p.Got = ProblemNode, p.Got, c.pendHas
		p.Detail = "stored leaf hash differs from the event's hash"
	}
	return p
}

// finish checks the end of the log against the recorded head.
func (c *chainChecker) finish() *IntegrityError {
	if p := c.flushPending(c.head.Hash); p != nil {
		return p
	}
	if c.seq < c.head.Seq {
		return &IntegrityError{Seq: c.seq + 1, Problem: ProblemGap, Detail: fmt.Sprintf("log ends at seq %d but its head is %d", c.seq, c.head.Seq)}
	}
	if c.prev != c.head.Hash {
		return &IntegrityError{Seq: c.seq, Problem: ProblemHead, Want: c.head.Hash, Got: c.prev}
	}
	return nil
}

func (tx *Tx) checkEvents(c *chainChecker, begin, end uint64, fn func(*IntegrityError) error) error {
	leaves, err := tx.level(0, false)
	if err != nil {
		if end <= begin {
			return nil
		}
		return fn(&IntegrityError{Seq: begin, Problem: ProblemNode, Detail: "no stored leaves"})
	}
	lc := leaves.Cursor()
	ec := tx.events.Cursor()
	k, raw := ec.Seek(u64(begin))
	for seq := begin; seq < end; seq++ {
		if k == nil || binary.BigEndian.Uint64(k) != seq {
			// The event that would tell a changed event from a changed
			// leaf is gone: report the mismatch as it stands, first.
			if c.pending != nil {
				if err := fn(c.flushPending(c.pending.Want)); err != nil {
					return err
				}
			}
			if err := fn(&IntegrityError{Seq: seq, Problem: ProblemGap}); err != nil {
				return err
			}
			// Resynchronise on the next stored event.
			if k != nil && binary.BigEndian.Uint64(k) < end {
				seq = binary.BigEndian.Uint64(k) - 1
				c.seq, c.pending = seq, nil
				continue
			}
			return nil
		}
		h := LeafHash(raw)
		claimed, prev, ok := peekEnvelope(raw)
		var problems []*IntegrityError
		// An unreadable event has a zero prev: the mismatch before it
		// stays a content problem, and is still reported.
		if p := c.flushPending(prev); p != nil {
			problems = append(problems, p)
		}
		switch {
		case !ok:
			problems = append(problems, &IntegrityError{Seq: seq, Problem: ProblemMalformed})
		case claimed != seq:
			problems = append(problems, &IntegrityError{Seq: seq, Problem: ProblemSeq, Detail: fmt.Sprintf("stored at %d, claims %d", seq, claimed)})
		case prev != c.prev && !(seq == 1 && prev == Hash{}):
			problems = append(problems, &IntegrityError{Seq: seq, Problem: ProblemLink, Want: c.prev, Got: prev})
		}
		lk, lv := lc.Seek(u64(seq - 1))
		var leaf Hash
		if lk == nil || binary.BigEndian.Uint64(lk) != seq-1 || len(lv) != len(leaf) {
			problems = append(problems, &IntegrityError{Seq: seq, Problem: ProblemNode, Detail: "stored leaf missing"})
		} else if copy(leaf[:], lv); leaf != h {
			c.pending = &IntegrityError{Seq: seq, Problem: ProblemContent, Want: leaf, Got: h}
			c.pendHas = leaf
		}
		for _, p := range problems {
			if err := fn(p); err != nil {
				return err
			}
		}
		c.seq, c.prev = seq, h
		k, raw = ec.Next()
	}
	return nil
}

// peekEnvelope reads the claimed seq and prev hash of stored bytes without a
// full decode: verification is the hot path. Anything unusual is !ok.
func peekEnvelope(raw []byte) (seq uint64, prev Hash, ok bool) {
	// 0x99 (array of 9), 0x01 (envelope version), then seq as a msgpack uint.
	if len(raw) < 3+34 || raw[0] != 0x90|envelopeFields || raw[1] != EnvelopeVersion {
		return 0, prev, false
	}
	b := raw[2:]
	switch {
	case b[0] <= 0x7f:
		seq = uint64(b[0])
	case b[0] == 0xcc && len(b) > 1:
		seq = uint64(b[1])
	case b[0] == 0xcd && len(b) > 2:
		seq = uint64(binary.BigEndian.Uint16(b[1:]))
	case b[0] == 0xce && len(b) > 4:
		seq = uint64(binary.BigEndian.Uint32(b[1:]))
	case b[0] == 0xcf && len(b) > 8:
		seq = binary.BigEndian.Uint64(b[1:])
	default:
		return 0, prev, false
	}
	// The envelope ends with prev as bin8 of 32 bytes.
	tail := raw[len(raw)-34:]
	if tail[0] != 0xc4 || tail[1] != 32 {
		return 0, prev, false
	}
	copy(prev[:], tail[2:])
	return seq, prev, true
}

// checkNodes re-hashes the nodes at level with index in [begin, end) from
// the level below.
func (tx *Tx) checkNodes(level uint, begin, end uint64, fn func(*IntegrityError) error) (uint64, error) {
	var checked uint64
	below, err := tx.level(level-1, false)
	if err != nil {
		return 0, fn(&IntegrityError{Seq: (begin + 1) << level, Problem: ProblemNode, Detail: fmt.Sprintf("level %d missing", level-1)})
	}
	here, err := tx.level(level, false)
	if err != nil {
		return 0, fn(&IntegrityError{Seq: (begin + 1) << level, Problem: ProblemNode, Detail: fmt.Sprintf("level %d missing", level)})
	}
	bc, hc := below.Cursor(), here.Cursor()
	bk, bv := bc.Seek(u64(2 * begin))
	hk, hv := hc.Seek(u64(begin))
	for i := begin; i < end; i++ {
		seq := (i + 1) << level
		var l, r, got Hash
		okL := bk != nil && binary.BigEndian.Uint64(bk) == 2*i && copy(l[:], bv) == 32
		if okL {
			bk, bv = bc.Next()
		}
		okR := bk != nil && binary.BigEndian.Uint64(bk) == 2*i+1 && copy(r[:], bv) == 32
		if okR {
			bk, bv = bc.Next()
		}
		okH := hk != nil && binary.BigEndian.Uint64(hk) == i && copy(got[:], hv) == 32
		if okH {
			hk, hv = hc.Next()
		}
		checked++
		if !okL || !okR || !okH {
			if err := fn(&IntegrityError{Seq: seq, Problem: ProblemNode, Detail: fmt.Sprintf("node %d/%d or its children missing", level, i)}); err != nil {
				return checked, err
			}
			continue
		}
		if want := NodeHash(l, r); want != got {
			if err := fn(&IntegrityError{Seq: seq, Problem: ProblemNode, Want: want, Got: got, Detail: fmt.Sprintf("node %d/%d", level, i)}); err != nil {
				return checked, err
			}
		}
	}
	return checked, nil
}

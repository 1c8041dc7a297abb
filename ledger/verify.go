package ledger

import (
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

// Head is the last event of a log: its sequence number (the log's size) and
// hash. The empty log has Seq 0 and a zero Hash.
type Head struct {
	Seq  uint64
	Hash Hash
}

// ChainChecker walks a log's stored events in seq order, whatever stores
// them, and reports every problem it finds. It carries the previous event's
// computed hash across calls (so a store checks in chunks), and holds a leaf
// mismatch back one event: only the next link tells whether the bytes or
// the stored leaf changed.
//
// A checker made by NewLinkChecker is for a store that keeps no leaves
// (ledger file formats 2 and 3): an event's bytes are then committed to by the next
// event's prev (the recorded head for the last one), so a broken link into
// event s is held back one event more, until the link out of s says whether
// s is as committed (then event s-1 changed) or not (then s itself did).
type ChainChecker struct {
	head    Head   // the recorded head at the start
	seq     uint64 // last seq checked
	prev    Hash   // computed hash of event prevSeq
	prevSeq uint64 // the last event seen: seq, or the one before a gap
	pending *IntegrityError
	pendHas Hash // the leaf stored for the pending event

	links bool      // no stored leaves: judge each event by the next link
	last  lastEvent // with links: event seq, not yet judged
}

// lastEvent is what a link checker knows of the last event checked until
// the link out of it is seen.
type lastEvent struct {
	ok       bool            // an event is held (false at the start, after Resume or a gap)
	broken   bool            // its prev is not the hash of the event before it
	linked   bool            // ... which is event seq-1, not one before a gap
	prevSeen Hash            // the hash of that event, as computed
	link     Hash            // its prev
	problem  *IntegrityError // its own malformed or seq problem
}

// NewChainChecker checks a log whose recorded head is head, from seq 1.
func NewChainChecker(head Head) *ChainChecker { return &ChainChecker{head: head} }

// NewLinkChecker checks a log whose store keeps no leaves (Event ignores
// its leaf argument), from seq 1. A changed event is reported at its own seq
// once the link out of it is seen; the last event's bytes are committed to
// only by the head, so a change to them is a head mismatch.
func NewLinkChecker(head Head) *ChainChecker { return &ChainChecker{head: head, links: true} }

// Resume makes the checker continue after event seq, whose computed hash is
// prev: for checking a range that starts inside the log.
func (c *ChainChecker) Resume(seq uint64, prev Hash) {
	c.seq, c.prevSeq, c.prev, c.pending, c.last = seq, seq, prev, nil, lastEvent{}
}

// Skip resynchronises after missing events: the next event checked is
// seq+1; its link is still checked against the last event seen.
func (c *ChainChecker) Skip(seq uint64) { c.seq, c.pending, c.last = seq, nil, lastEvent{} }

// Seq is the last seq checked.
func (c *ChainChecker) Seq() uint64 { return c.seq }

// Hash is the hash computed from the stored bytes of event Seq (its leaf
// hash), so a caller that also needs it does not hash the event again.
func (c *ChainChecker) Hash() Hash { return c.prev }

// linkState is what the link out of the last event says of it.
type linkState int

const (
	linkUnknown linkState = iota // no readable event claiming the next seq
	linkHolds                    // the next event links to the last one's hash
	linkBroken                   // it links to another hash
)

// judge reports, for a link checker, the problems of the last event held
// now that the link out of it is known: its own, and a broken link into it
// resolved — if the event is as its successor committed to (the link out
// holds), its prev is as written and the event before it changed.
func (c *ChainChecker) judge(out linkState, fn func(*IntegrityError) error) error {
	l := c.last
	c.last = lastEvent{}
	if !l.ok {
		return nil
	}
	var problems []*IntegrityError
	if l.broken {
		if out == linkHolds && l.linked {
			problems = append(problems, &IntegrityError{Seq: c.seq - 1, Problem: ProblemContent, Want: l.link, Got: l.prevSeen,
				Detail: "the event's bytes do not hash to what the next event links to"})
		}
		problems = append(problems, &IntegrityError{Seq: c.seq, Problem: ProblemLink, Want: l.prevSeen, Got: l.link})
	}
	if l.problem != nil {
		problems = append(problems, l.problem)
	}
	for _, p := range problems {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// linkInto says what the stored bytes next, claimed to be event seq, say of
// the link into them from the event checked last.
func (c *ChainChecker) linkInto(seq uint64, next []byte) linkState {
	claimed, prev, ok := peekEnvelope(next)
	switch {
	case !ok || claimed != seq:
		return linkUnknown
	case prev == c.prev || (seq == 1 && prev == Hash{}):
		return linkHolds
	}
	return linkBroken
}

// Missing reports that no event is stored at seq (after any leaf mismatch
// held back, which the missing event can no longer decide).
func (c *ChainChecker) Missing(seq uint64, fn func(*IntegrityError) error) error {
	if err := c.judge(linkUnknown, fn); err != nil {
		return err
	}
	if c.pending != nil {
		if err := fn(c.flushPending(c.pending.Want)); err != nil {
			return err
		}
	}
	return fn(&IntegrityError{Seq: seq, Problem: ProblemGap})
}

// Event checks the stored bytes raw of event seq against the previous
// event and against leaf, the level-0 Merkle node stored for it (nil if
// none; ignored by a link checker), and calls fn for each problem found.
// fn's error stops the check and is returned.
func (c *ChainChecker) Event(seq uint64, raw, leaf []byte, fn func(*IntegrityError) error) error {
	h := LeafHash(raw)
	claimed, prev, ok := peekEnvelope(raw)
	if c.links {
		return c.linkEvent(seq, raw, h, claimed, prev, ok, fn)
	}
	var problems []*IntegrityError
	// An unreadable event has a zero prev: the mismatch before it stays a
	// content problem, and is still reported.
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
	switch {
	case leaf == nil:
		problems = append(problems, &IntegrityError{Seq: seq, Problem: ProblemNode, Detail: "stored leaf missing"})
	case len(leaf) != len(Hash{}):
		problems = append(problems, &IntegrityError{Seq: seq, Problem: ProblemNode, Detail: fmt.Sprintf("stored leaf is %d bytes, not 32", len(leaf))})
	case Hash(leaf) != h:
		c.pending = &IntegrityError{Seq: seq, Problem: ProblemContent, Want: Hash(leaf), Got: h}
		c.pendHas = Hash(leaf)
	}
	for _, p := range problems {
		if err := fn(p); err != nil {
			return err
		}
	}
	c.seq, c.prevSeq, c.prev = seq, seq, h
	return nil
}

// linkEvent is Event for a link checker: it judges the event before (the
// link into this one is the link out of it) and holds this one.
func (c *ChainChecker) linkEvent(seq uint64, raw []byte, h Hash, claimed uint64, prev Hash, ok bool, fn func(*IntegrityError) error) error {
	if err := c.judge(c.linkInto(seq, raw), fn); err != nil {
		return err
	}
	l := lastEvent{ok: true, linked: seq > 1 && c.prevSeq == seq-1, prevSeen: c.prev, link: prev}
	switch {
	case !ok:
		l.problem = &IntegrityError{Seq: seq, Problem: ProblemMalformed}
	case claimed != seq:
		l.problem = &IntegrityError{Seq: seq, Problem: ProblemSeq, Detail: fmt.Sprintf("stored at %d, claims %d", seq, claimed)}
	case prev != c.prev && !(seq == 1 && prev == Hash{}):
		l.broken = true
	}
	c.seq, c.prevSeq, c.prev, c.last = seq, seq, h, l
	return nil
}

// EndBefore ends a check that stops inside the log, before the event whose
// stored bytes are next (nil if unreadable): the held-back leaf mismatch, if
// any, is decided by next's link (and so is, for a link checker, the last
// event held). (The checker's own prev is the hash of the bytes, so deciding
// against it would always blame the leaf.) It calls fn for each problem.
func (c *ChainChecker) EndBefore(next []byte, fn func(*IntegrityError) error) error {
	if c.links {
		return c.judge(c.linkInto(c.seq+1, next), fn)
	}
	if c.pending == nil {
		return nil
	}
	link := c.pending.Want
	if _, prev, ok := peekEnvelope(next); ok {
		link = prev
	}
	return fn(c.flushPending(link))
}

// flushPending decides the pending leaf mismatch given the hash the next
// event links to.
func (c *ChainChecker) flushPending(link Hash) *IntegrityError {
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

// Finish checks the end of the log against the recorded head and calls fn
// for each problem.
func (c *ChainChecker) Finish(fn func(*IntegrityError) error) error {
	if c.links {
		out := linkUnknown
		if c.seq == c.head.Seq {
			out = linkBroken
			if c.prev == c.head.Hash {
				out = linkHolds
			}
		}
		if err := c.judge(out, fn); err != nil {
			return err
		}
	} else if p := c.flushPending(c.head.Hash); p != nil {
		if err := fn(p); err != nil {
			return err
		}
	}
	if c.seq < c.head.Seq {
		return fn(&IntegrityError{Seq: c.seq + 1, Problem: ProblemGap, Detail: fmt.Sprintf("log ends at seq %d but its head is %d", c.seq, c.head.Seq)})
	}
	if c.prev != c.head.Hash {
		p := &IntegrityError{Seq: c.seq, Problem: ProblemHead, Want: c.head.Hash, Got: c.prev}
		if c.links {
			p.Detail = "the recorded head is not the hash of the last event's bytes: one of them changed"
		}
		return fn(p)
	}
	return nil
}

// CheckNode checks the stored Merkle node got at (level, index) against its
// stored children left and right (nil where missing). Every value must be
// exactly 32 bytes. Problems name the seq whose append completed the node.
func CheckNode(level uint, index uint64, left, right, got []byte) *IntegrityError {
	seq := (index + 1) << level
	for _, v := range []struct {
		b    []byte
		what string
	}{{left, "left child"}, {right, "right child"}, {got, "node"}} {
		if v.b == nil {
			return &IntegrityError{Seq: seq, Problem: ProblemNode, Detail: fmt.Sprintf("node %d/%d: %s missing", level, index, v.what)}
		}
		if len(v.b) != len(Hash{}) {
			return &IntegrityError{Seq: seq, Problem: ProblemNode, Detail: fmt.Sprintf("node %d/%d: %s is %d bytes, not 32", level, index, v.what, len(v.b))}
		}
	}
	if want := NodeHash(Hash(left), Hash(right)); want != Hash(got) {
		return &IntegrityError{Seq: seq, Problem: ProblemNode, Want: want, Got: Hash(got), Detail: fmt.Sprintf("node %d/%d", level, index)}
	}
	return nil
}

// peekEnvelope reads the claimed seq and prev hash of stored bytes without a
// full decode: verification is the hot path. Anything unusual is !ok.
func peekEnvelope(raw []byte) (seq uint64, prev Hash, ok bool) {
	// 0x99 (array of 9), the envelope version (0x01 or 0x02), then seq as a
	// msgpack uint.
	if len(raw) < 3+34 || raw[0] != 0x90|envelopeFields || raw[1] < 1 || raw[1] > EnvelopeVersion {
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

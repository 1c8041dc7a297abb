package projections

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

const (
	spThoughts        = "thoughts"         // short(thought number >> thoughtBlockBits) → their seqs: the thought is its event
	spTaskThoughts    = "task_thoughts"    // chainKey(task number, chain position) → a block of thought numbers
	spSessionThoughts = "session_thoughts" // session number ‖ thought number → nothing

	counterThought = "counter.thought"
)

// Thought is a recorded thought. Hash is the hash of the event that
// recorded it (its Merkle leaf); PreviousHash is "" for a task's first.
type Thought struct {
	events.ThoughtRecorded
	Hash       string `json:"hash"`
	RecordedAt string `json:"recorded_at"`
	RecordedBy string `json:"recorded_by"`
	Seq        uint64 `json:"seq"`
}

// The thoughts space keeps of a thought the seq of the event that recorded
// it: a thought is immutable and its event holds all of it (hash, time and
// actor included), so reads find it there by seq. The seqs of
// 1<<thoughtBlockBits consecutive thought numbers share a key, their block
// number (short), the value a header and one record per number up to the
// highest one recorded:
//
//	1 byte: the records' width w (1 to 8); uvarint base: the least seq;
//	records: seq - base + 1, little-endian in w bytes; 0: no thought
//
// One key per thought took 22 bytes of a thought's ~650 on disk; a block
// takes about 2 per thought. The bytes depend only on the block's seqs
// (the least width and base that hold them), so a rebuild stores the same.
const thoughtBlockBits = 6

// thoughtBlock holds the seqs of a block of the thoughts space by the low
// bits of the thought number; 0: none.
type thoughtBlock [1 << thoughtBlockBits]uint64

// decodeThoughts reads a thoughts value; a value that is not a block is
// ErrDamaged.
func decodeThoughts(k, v []byte) (thoughtBlock, error) { return decodeBlock(spThoughts, k, v) }

// decodeBlock reads a block of space (thoughts or task_thoughts); a value
// that is not a block is ErrDamaged.
func decodeBlock(space string, k, v []byte) (thoughtBlock, error) {
	var b thoughtBlock
	w, base, recs, err := blockLayout(space, k, v)
	if err != nil {
		return b, err
	}
	for i := 0; i*w < len(recs); i++ {
		if r := search.LE(recs[i*w : (i+1)*w]); r != 0 {
			b[i] = base + r - 1
		}
	}
	return b, nil
}

// blockLayout splits a block of space into its width, base and records.
func blockLayout(space string, k, v []byte) (w int, base uint64, recs []byte, err error) {
	if len(v) > 0 {
		var n int
		w = int(v[0])
		if base, n = binary.Uvarint(v[1:]); n > 0 && w >= 1 && w <= 8 {
			recs = v[1+n:]
			if len(recs)%w == 0 && len(recs)/w <= 1<<thoughtBlockBits {
				return w, base, recs, nil
			}
		}
	}
	return 0, 0, nil, fmt.Errorf("%s %x: value %x is not a block: %w", space, k, v, boltstore.ErrDamaged)
}

// encodeThoughts writes a block, its records up to the last thought it
// holds.
func encodeThoughts(b *thoughtBlock) []byte {
	last, base := -1, uint64(0)
	for i, seq := range b {
		if seq != 0 {
			if last < 0 || seq < base {
				base = seq
			}
			last = i
		}
	}
	w := 1
	for _, seq := range b[:last+1] {
		if seq != 0 {
			w = max(w, (bits.Len64(seq-base+1)+7)/8)
		}
	}
	v := binary.AppendUvarint([]byte{byte(w)}, base)
	for _, seq := range b[:last+1] {
		r := uint64(0)
		if seq != 0 {
			r = seq - base + 1
		}
		v = search.PutLE(v, r, w)
	}
	return v
}

// putThought records that thought id was recorded at seq, and returns its
// number.
func putThought(f *folder, id string, seq uint64) (uint64, error) {
	n, ok := domain.ParseID(domain.ThoughtPrefix, id)
	if !ok {
		return 0, fmt.Errorf("bad id %q", id)
	}
	if _, err := f.seenNumber(counterThought, n); err != nil {
		return 0, err
	}
	// In a batch, through a blockBuffer as task_thoughts: a block of
	// thoughts is put once per batch, not read and put for each thought
	// (a third of applyThoughtRecorded's time was those two lookups).
	sp, err := f.blocks(spThoughts)
	if err != nil {
		return 0, err
	}
	var kb [9]byte
	return n, putInBlock(sp, spThoughts, short(kb[:0], n>>thoughtBlockBits), n, seq)
}

// blockPutter is where a block of thoughts or task_thoughts is read and
// written: the space, or in a batch a blockBuffer over it.
type blockPutter interface {
	Get(key []byte) []byte
	Put(key, value []byte) error
}

// putInBlock sets record i (its low thoughtBlockBits) of block k of space
// to value, appending it in place in the usual case (the next record).
func putInBlock(sp blockPutter, space string, k []byte, i, value uint64) error {
	if bb, ok := sp.(*blockBuffer); ok {
		return bb.putRecord(space, k, i, value)
	}
	v := sp.Get(k)
	if next, ok := appendRecord(space, k, v, i, value); ok { // the usual case
		return sp.Put(k, next)
	}
	next, err := setRecord(space, k, v, i, value)
	if err != nil {
		return err
	}
	return sp.Put(k, next)
}

// setRecord is block v (nil: none yet) of space, key k, decoded, with
// record i (its low bits) set to value, and encoded again.
func setRecord(space string, k, v []byte, i, value uint64) ([]byte, error) {
	var b thoughtBlock
	if v != nil {
		var err error
		if b, err = decodeBlock(space, k, v); err != nil {
			return nil, err
		}
	}
	b[i&(1<<thoughtBlockBits-1)] = value
	return encodeThoughts(&b), nil
}

// appendRecord returns block v (key k) of space with record n (its low
// bits) set to seq, the one after its last, appended, if the record fits
// v's width and base: the bytes encodeThoughts would write, without
// decoding the block. ok is false otherwise (a new block, a wider record, a
// number out of turn).
func appendRecord(space string, k, v []byte, n, seq uint64) (next []byte, ok bool) {
	if v == nil {
		return nil, false
	}
	return appendRecordTo(make([]byte, 0, len(v)+8), space, k, v, n, seq)
}

// appendRecordTo is appendRecord into dst: dst, empty, gets v and the
// record; or dst is v itself, which gets the record appended in place.
func appendRecordTo(dst []byte, space string, k, v []byte, n, seq uint64) (next []byte, ok bool) {
	if v == nil {
		return nil, false
	}
	w, base, recs, err := blockLayout(space, k, v)
	if err != nil || int(n&(1<<thoughtBlockBits-1)) != len(recs)/w || seq < base || (bits.Len64(seq-base+1)+7)/8 > w {
		return nil, false
	}
	r := seq - base + 1
	if len(dst) == 0 {
		dst = append(dst, v...)
	}
	for j := range w {
		dst = append(dst, byte(r>>(8*j)))
	}
	return dst, true
}

// thoughtSeq is the seq that recorded thought number n; ok false if none
// did. A value that is not a block of seqs is ErrDamaged.
func thoughtSeq(tx *boltstore.Tx, n uint64) (seq uint64, ok bool, err error) {
	sp, err := tx.Space(spThoughts)
	if err != nil {
		return 0, false, err
	}
	return thoughtSeqIn(sp, n)
}

// thoughtSeqIn is thoughtSeq read from sp (the thoughts space, or a fold's
// blockBuffer over it).
func thoughtSeqIn(sp interface{ Get([]byte) []byte }, n uint64) (seq uint64, ok bool, err error) {
	k := short(nil, n>>thoughtBlockBits)
	v := sp.Get(k)
	if v == nil {
		return 0, false, nil
	}
	return blockRecord(spThoughts, k, v, n)
}

// thoughtSeq is thoughtSeq as the fold left it (a batch's writes
// included).
func (f *folder) thoughtSeq(n uint64) (seq uint64, ok bool, err error) {
	sp, err := f.blocks(spThoughts)
	if err != nil {
		return 0, false, err
	}
	return thoughtSeqIn(sp, n)
}

// blockRecord is record i (its low bits) of block v of space; ok false if
// it holds none.
func blockRecord(space string, k, v []byte, i uint64) (value uint64, ok bool, err error) {
	w, base, recs, err := blockLayout(space, k, v)
	if i := int(i & (1<<thoughtBlockBits - 1)); err == nil && (i+1)*w <= len(recs) {
		if r := search.LE(recs[i*w : (i+1)*w]); r != 0 {
			return base + r - 1, true, nil
		}
	}
	return 0, false, err
}

func applyThoughtRecorded(f *folder, r ledger.Record) error {
	p, err := payloadOf(f, r, decodeForFold)
	if err != nil {
		return err
	}
	if err := f.unindexThought(p.ThoughtID); err != nil {
		return err
	}
	n, err := putThought(f, p.ThoughtID, r.Seq)
	if err != nil {
		return err
	}
	tn, valid := domain.ParseID(domain.TaskPrefix, p.TaskID)
	ok, err := f.hasTask(tn)
	if err != nil || !ok || !valid {
		return fmt.Errorf("thought on unknown task %q: %v", p.TaskID, err)
	}
	chain, err := f.blocks(spTaskThoughts)
	if err != nil {
		return err
	}
	if err := putInBlock(chain, spTaskThoughts, chainKey(tn, p.ChainPosition), p.ChainPosition, n); err != nil {
		return err
	}
	if p.SessionID != "" {
		sn, _ := domain.ParseID(domain.SessionPrefix, p.SessionID)
		bySession, err := f.writeOnly(spSessionThoughts, true)
		if err != nil {
			return err
		}
		if err := bySession.Put(key2(sn, n), nil); err != nil {
			return err
		}
	}
	return nil // its index entry: indexEvent
}

// decodeForFold is decode for the folds of a thought (applyThoughtRecorded,
// indexEvent), which read only its ids, chain position, session, content
// and blockers: the other fields are checked, as decode checks them, but
// not kept (fastcodec.go).
func decodeForFold(r ledger.Record, p *events.ThoughtRecorded) error {
	if tryFast(r.Payload, (*thoughtFoldPayload)(p)) {
		return events.Upcast(r.Type, r.Version, r.Subjects, p)
	}
	return decode(r, p)
}

// unindexThought takes the thought id out of the knowledge index if a
// thought of that id was recorded before (a log that records one twice,
// which commands never write), so the later one replaces it there as in
// every other space. The index keeps no id entry for a thought
// (search.Index.Add): the earlier one is found by the seq the thoughts
// space holds, looked up only for an id not past the highest seen. An
// earlier one already indexed (in a lump before this event) is taken out
// now; one still waiting for its lump is never indexed (indexEvent skips a
// thought the thoughts space no longer names).
func (f *folder) unindexThought(id string) error {
	n, valid := domain.ParseID(domain.ThoughtPrefix, id)
	highest, err := f.counter(counterThought)
	if err != nil || !valid || n > highest {
		return err
	}
	f.reRecorded = true
	seq, ok, err := f.thoughtSeq(n)
	if err != nil || !ok {
		return err
	}
	l, err := f.lumpState()
	if err != nil || seq > l.indexed {
		return err
	}
	ix, err := f.knowledge()
	if err != nil {
		return err
	}
	return ix.RemoveAt(seq)
}

// replacedThought reports whether the thought recorded at seq is no longer
// the one its id names: a later event recorded that id again. A batch
// knows it was not for a thought it folded itself while every thought id
// it folded was above all before it (unindexThought).
func (f *folder) replacedThought(id string, seq uint64) (bool, error) {
	if f.puts != nil && f.first != 0 && seq >= f.first && !f.reRecorded {
		return false, nil
	}
	n, valid := domain.ParseID(domain.ThoughtPrefix, id)
	if !valid {
		return false, nil
	}
	latest, ok, err := f.thoughtSeq(n)
	return ok && latest != seq, err
}

// thoughtDoc is what the knowledge index holds of a thought.
func thoughtDoc(r ledger.Record, p *events.ThoughtRecorded, project string) search.Doc {
	doc := thoughtDocOf(r, p, project)
	doc.Fields = thoughtTexts(p)
	return doc
}

// thoughtDocOf is thoughtDoc without its texts, for a fold that counted
// their terms ahead (Prepare).
func thoughtDocOf(r ledger.Record, p *events.ThoughtRecorded, project string) search.Doc {
	return search.Doc{ID: p.ThoughtID, Kind: search.Thought, Project: project, Author: r.Actor, Seq: r.Seq, Hash: r.Hash}
}

// thoughtTexts are the texts of a thought the knowledge index holds.
func thoughtTexts(p *events.ThoughtRecorded) []search.Field {
	return []search.Field{{Name: "content", Text: p.Content}, {Name: "blockers", Text: joinLines(p.Blockers)}}
}

// thoughtByNumber reads thought number n; known is what the caller knows of
// it from the key it came by (its task and chain position, or its session).
func thoughtByNumber(tx *boltstore.Tx, n uint64, known Thought) (Thought, error) {
	seq, ok, err := thoughtSeq(tx, n)
	if err == nil && !ok {
		err = fmt.Errorf("thought %d missing from projection", n)
	}
	if err != nil {
		return Thought{}, err
	}
	known.ThoughtID, known.Seq = domain.FormatID(domain.ThoughtPrefix, n), seq
	return thoughtAt(tx, known)
}

// thoughtAt reads thought th.ThoughtID from the event at th.Seq that
// recorded it (the projection keeps nothing else of it). An event that no
// longer reads as that thought is a damaged ledger: an error wrapping
// boltstore.ErrDamaged, never a thought with its hash and content missing
// (a thought_record would chain to it, a session would take it as a leaf).
func thoughtAt(tx *boltstore.Tx, th Thought) (Thought, error) {
	damaged := func(why any) (Thought, error) {
		return th, fmt.Errorf("thought %s: the event at seq %d %v: %w", th.ThoughtID, th.Seq, why, boltstore.ErrDamaged)
	}
	r, err := tx.Event(th.Seq)
	switch {
	case err != nil:
		return damaged(err)
	case r.Type != events.TypeThoughtRecorded:
		return damaged("is a " + r.Type)
	}
	var p events.ThoughtRecorded
	if err := decode(r, &p); err != nil {
		return damaged(err)
	}
	if p.ThoughtID != th.ThoughtID {
		return damaged("records " + p.ThoughtID)
	}
	return Thought{ThoughtRecorded: p, Hash: r.Hash.String(), RecordedAt: FormatTime(r.Time), RecordedBy: r.Actor, Seq: r.Seq}, nil
}

// LastThought is the task's latest thought; ok false if it has none.
func LastThought(tx *boltstore.Tx, taskID string) (th Thought, ok bool, err error) {
	chain, tn, err := spaceOf(tx, spTaskThoughts, domain.TaskPrefix, taskID)
	if chain == nil {
		return th, false, err
	}
	err = chain.Scan(short(nil, tn), true, func(k, v []byte) (bool, error) {
		first, b, err := chainBlock(k, v)
		for i := len(b) - 1; err == nil && i >= 0; i-- {
			if b[i] != 0 {
				th, err = thoughtByNumber(tx, b[i], chainLink(taskID, first+uint64(i)))
				ok = err == nil
				return false, err
			}
		}
		return false, err
	})
	return th, ok, err
}

// CountThoughts sets t.Thoughts, the number of thoughts on the task, from
// its chain (the projection keeps no count in the task's record).
func CountThoughts(tx *boltstore.Tx, t *Task) error {
	chain, tn, err := spaceOf(tx, spTaskThoughts, domain.TaskPrefix, t.ID)
	if chain == nil {
		return err
	}
	t.Thoughts = 0
	return chain.Scan(short(nil, tn), false, func(k, v []byte) (bool, error) {
		_, b, err := chainBlock(k, v)
		for _, n := range b {
			if n != 0 {
				t.Thoughts++
			}
		}
		return err == nil, err
	})
}

// TaskThoughts calls fn for the task's thoughts in chain order.
// A thought whose event is damaged is listed as in listedThoughts.
func TaskThoughts(tx *boltstore.Tx, taskID string, fn func(Thought) bool) error {
	return taskChain(tx, taskID, func(n, position uint64) (bool, error) {
		th, err := thoughtByNumber(tx, n, chainLink(taskID, position))
		if err != nil && !errors.Is(err, boltstore.ErrDamaged) {
			return false, err
		}
		return fn(th), nil
	})
}

// TaskTrail calls fn with the id and the seq of each of the task's
// thoughts in chain order, as TaskThoughts gives them, read from the
// projection alone: none of their events is read, so a trail of a
// thousand thoughts costs a thousand lookups, not a thousand event reads
// and decodes.
func TaskTrail(tx *boltstore.Tx, taskID string, fn func(id string, seq uint64) bool) error {
	return taskChain(tx, taskID, func(n, _ uint64) (bool, error) {
		seq, ok, err := thoughtSeq(tx, n)
		if err == nil && !ok {
			err = fmt.Errorf("thought %d missing from projection", n)
		}
		if err != nil {
			return false, err
		}
		return fn(domain.FormatID(domain.ThoughtPrefix, n), seq), nil
	})
}

// taskChain calls fn with the number and chain position of each of the
// task's thoughts, in chain order, while it answers true.
func taskChain(tx *boltstore.Tx, taskID string, fn func(n, position uint64) (bool, error)) error {
	chain, tn, err := spaceOf(tx, spTaskThoughts, domain.TaskPrefix, taskID)
	if chain == nil {
		return err
	}
	return chain.Scan(short(nil, tn), false, func(k, v []byte) (bool, error) {
		first, b, err := chainBlock(k, v)
		if err != nil {
			return false, err
		}
		for i, n := range b {
			if n == 0 {
				continue
			}
			if more, err := fn(n, first+uint64(i)); !more || err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// SessionThoughts calls fn for the thoughts recorded with the session id,
// in ledger order.
func SessionThoughts(tx *boltstore.Tx, sessionID string, fn func(Thought) bool) error {
	return listedThoughts(tx, spSessionThoughts, domain.SessionPrefix, sessionID, u64, func(k, _ []byte) (uint64, Thought, error) {
		var known Thought
		known.SessionID = sessionID
		if len(k) != 16 {
			return 0, known, fmt.Errorf("session_thoughts key %x: %w", k, boltstore.ErrDamaged)
		}
		return be64(k[8:]), known, nil
	}, fn)
}

// listedThoughts calls fn for the thoughts a space lists under the number
// of id (a prefix's id; under keys starting with under(number)), in key
// order; listed is a thought's number from its key and value there, and
// what they say of it (see thoughtByNumber).
// A thought whose event is damaged is listed with only what its keys say
// (no hash), so that the chain checks over a list report it as a broken
// link; LastThought and ThoughtAt, which a new thought chains to, fail.
func listedThoughts(tx *boltstore.Tx, space, prefix, id string, under func(uint64) []byte,
	listed func(k, v []byte) (uint64, Thought, error), fn func(Thought) bool) error {
	sp, n, err := spaceOf(tx, space, prefix, id)
	if sp == nil {
		return err
	}
	return sp.Scan(under(n), false, func(k, v []byte) (bool, error) {
		num, known, err := listed(k, v)
		if err != nil {
			return false, err
		}
		th, err := thoughtByNumber(tx, num, known)
		if err != nil && !errors.Is(err, boltstore.ErrDamaged) {
			return false, err
		}
		return fn(th), nil
	})
}

// Thoughts calls fn for every thought in ledger order.
func Thoughts(tx *boltstore.Tx, fn func(Thought) bool) error {
	return eachThought(tx, func(n, seq uint64) (bool, error) {
		th, err := thoughtNumbered(tx, n, seq)
		return err == nil && fn(th), err
	})
}

// ThoughtsPage calls fn for the first limit thoughts in ledger order and
// returns how many there are: the others are counted, not read (each
// thought read is its event, decoded).
func ThoughtsPage(tx *boltstore.Tx, limit int, fn func(Thought)) (count int, err error) {
	err = eachThought(tx, func(n, seq uint64) (bool, error) {
		if count++; count <= limit {
			th, err := thoughtNumbered(tx, n, seq)
			if err != nil {
				return false, err
			}
			fn(th)
		}
		return true, nil
	})
	return count, err
}

// eachThought calls fn with the number and seq of every thought, in ledger
// order, until fn returns false or an error.
func eachThought(tx *boltstore.Tx, fn func(n, seq uint64) (bool, error)) error {
	thoughts, err := tx.Space(spThoughts)
	if err != nil {
		return err
	}
	return thoughts.Scan(nil, false, func(k, v []byte) (bool, error) {
		bn, rest, ok := readShort(k)
		if !ok || len(rest) != 0 {
			return false, fmt.Errorf("thoughts key %x: %w", k, boltstore.ErrDamaged)
		}
		b, err := decodeThoughts(k, v)
		if err != nil {
			return false, err
		}
		for i, seq := range b {
			if seq == 0 {
				continue
			}
			if more, err := fn(bn<<thoughtBlockBits+uint64(i), seq); err != nil || !more {
				return false, err
			}
		}
		return true, nil
	})
}

// thoughtNumbered is thought number n, recorded at seq, read from its
// event; a damaged one is returned as listedThoughts lists it.
func thoughtNumbered(tx *boltstore.Tx, n, seq uint64) (Thought, error) {
	var th Thought
	th.ThoughtID, th.Seq = domain.FormatID(domain.ThoughtPrefix, n), seq
	th, err := thoughtAt(tx, th)
	if errors.Is(err, boltstore.ErrDamaged) {
		err = nil
	}
	return th, err
}

// NextThoughtID is the id the next recorded thought gets.
func NextThoughtID(tx *boltstore.Tx) (string, error) {
	n, err := nextNumber(tx, counterThought)
	return domain.FormatID(domain.ThoughtPrefix, n), err
}

// ThoughtAt is the task's thought at a chain position; ok false if none.
func ThoughtAt(tx *boltstore.Tx, taskID string, position uint64) (th Thought, ok bool, err error) {
	chain, tn, err := spaceOf(tx, spTaskThoughts, domain.TaskPrefix, taskID)
	if chain == nil {
		return th, false, err
	}
	k := chainKey(tn, position)
	v := chain.Get(k)
	if v == nil {
		return th, false, nil
	}
	n, ok, err := blockRecord(spTaskThoughts, k, v, position)
	if err != nil || !ok {
		return th, false, err
	}
	th, err = thoughtByNumber(tx, n, chainLink(taskID, position))
	return th, err == nil, err
}

// The task_thoughts space keeps a task's chain in blocks of the thoughts
// space's layout (thoughtBlock): the thought numbers at 1<<thoughtBlockBits
// consecutive chain positions share a key, chainKey, the records the
// numbers (0: no thought at that position). A task's thought numbers only
// grow, so a record takes a byte or two; a thought_record appends to its
// task's last block in place instead of inserting a key.

// chainKey is the task_thoughts key of the block holding a task's thought
// at a chain position: the task and the block number (position >>
// thoughtBlockBits), both short, so in task then position order.
func chainKey(task, position uint64) []byte {
	return short(short(make([]byte, 0, 8), task), position>>thoughtBlockBits)
}

// chainBlock reads a task_thoughts key and value: the chain position of
// the block's first record and the thought numbers by position from it. A
// key or value that is not one is a damaged file.
func chainBlock(k, v []byte) (first uint64, b thoughtBlock, err error) {
	_, rest, ok := readShort(k)
	block, rest, ok2 := readShort(rest)
	if !ok || !ok2 || len(rest) != 0 || block > 1<<(64-thoughtBlockBits)-1 {
		return 0, b, fmt.Errorf("task_thoughts key %x: %w", k, boltstore.ErrDamaged)
	}
	b, err = decodeBlock(spTaskThoughts, k, v)
	return block << thoughtBlockBits, b, err
}

// chainLink is what the task_thoughts space says of the thought it leads
// to at a chain position.
func chainLink(taskID string, position uint64) Thought {
	var th Thought
	th.TaskID, th.ChainPosition = taskID, position
	return th
}

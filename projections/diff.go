package projections

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// Difference is one key whose value differs between two projection states.
type Difference struct {
	Space string // the projection space
	Key   string // the key, as an id (T-0003) where the space is keyed by one, else quoted or hex
	// Seq is the event that last changed the record, as the reference state
	// has it (0 if the value is not a record with a seq, or is missing there).
	Seq     uint64
	Problem string // "value differs", "missing", "unexpected key"
}

func (d *Difference) Error() string {
	s := fmt.Sprintf("projection %s, key %s: %s", d.Space, d.Key, d.Problem)
	if d.Seq > 0 {
		s = fmt.Sprintf("seq %d: %s", d.Seq, s)
	}
	return s
}

// Comparison compares two projection states key by key, in steps, so that
// comparing large states can be split across short transactions. The zero
// value starts at the first key of the first space.
type Comparison struct {
	space int    // index in spaces of the space being compared
	after []byte // the last key compared in it; nil before its first

	Keys        uint64      // keys compared so far
	Differences uint64      // keys that differ so far
	First       *Difference // the difference with the lowest seq so far

	want *fingerprint // of the reference state, as its keys are compared
}

// Fingerprint is Fingerprint of the reference state, from the keys the
// steps read: valid once Done, if the reference did not change between
// steps.
func (c *Comparison) Fingerprint() uint64 {
	if c.want == nil {
		c.want = newFingerprint()
	}
	return c.want.d.Sum64()
}

// Done reports whether every space has been compared.
func (c *Comparison) Done() bool { return c.space >= len(spaces) }

// Step compares up to about limit keys of got with want (the reference, a
// state refolded from the log), from where the last step stopped. Within a
// step both must be folded to the same seq; between steps both may move on
// (keys are compared once each, at the state of their step).
func (c *Comparison) Step(want, got *boltstore.Tx, limit int) error {
	if c.Done() {
		return nil
	}
	name := spaces[c.space]
	w, err := want.Space(name)
	if err != nil {
		return err
	}
	g, err := got.Space(name)
	if err != nil {
		return err
	}
	var begin []byte
	if c.after != nil {
		begin = boltstore.KeyAfter(c.after)
	}
	type kv struct{ k, v []byte }
	ws := make([]kv, 0, min(limit, 1024))
	err = w.Range(begin, nil, func(k, v []byte) (bool, error) {
		ws = append(ws, kv{k, v})
		return len(ws) < limit, nil
	})
	if err != nil {
		return err
	}
	if c.want == nil {
		c.want = newFingerprint()
	}
	if c.after == nil {
		c.want.write([]byte(name))
	}
	for _, x := range ws {
		c.want.write(x.k)
		c.want.write(x.v)
	}
	// want's keys up to its last one here, or all the rest of got's if want
	// has no more.
	var end []byte
	last := len(ws) == limit
	if last {
		end = boltstore.KeyAfter(ws[len(ws)-1].k)
	}
	i := 0
	keep := func(d *Difference) {
		c.Differences++
		if c.First == nil || (d.Seq != 0 && (c.First.Seq == 0 || d.Seq < c.First.Seq)) {
			c.First = d
		}
	}
	missing := func(x kv) {
		keep(&Difference{Space: name, Key: keyName(name, x.k), Seq: recordSeq(name, x.v), Problem: "missing"})
	}
	err = g.Range(begin, end, func(k, v []byte) (bool, error) {
		for i < len(ws) && bytes.Compare(ws[i].k, k) < 0 {
			c.Keys++
			missing(ws[i])
			i++
		}
		c.Keys++
		if i < len(ws) && bytes.Equal(ws[i].k, k) {
			if !bytes.Equal(ws[i].v, v) {
				keep(&Difference{Space: name, Key: keyName(name, k), Seq: recordSeq(name, ws[i].v), Problem: "value differs"})
			}
			i++
		} else {
			keep(&Difference{Space: name, Key: keyName(name, k), Problem: "unexpected key"})
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for ; i < len(ws); i++ {
		c.Keys++
		missing(ws[i])
	}
	if last {
		c.after = bytes.Clone(ws[len(ws)-1].k)
	} else {
		c.space, c.after = c.space+1, nil
	}
	return nil
}

// recordSeq is the seq field of a stored record (tasks, sessions, findings,
// learnings and memories carry the seq of the event that last changed
// them; a block of thoughts the latest seq that recorded one of them), 0
// if it has none. Values of other spaces are not records: read as one, a
// leaf hash or an index block could name any seq (one beginning 0x91 0x18
// read as seq 24), and the reported seq would be made up.
func recordSeq(space string, v []byte) uint64 {
	switch space {
	case spThoughts: // a block of thoughts: the latest of them
		b, _ := decodeThoughts(nil, v)
		return slices.Max(b[:])
	case spTasks:
		var t Task
		if decodeTask(&t, 0, v, nil) != nil {
			return 0
		}
		return t.Seq
	case spSessions, spFindings, spLearnings, spMemories:
	default:
		return 0
	}
	var r struct {
		Seq uint64 `json:"seq"`
	}
	if unmarshal(v, &r) != nil {
		return 0
	}
	return r.Seq
}

// keyName shows a key the way the tools name what it stores.
func keyName(space string, k []byte) string {
	if b, rest, ok := readShort(k); ok && len(rest) == 0 && space == spThoughts { // a block of thoughts
		first := b << thoughtBlockBits
		return domain.FormatID(domain.ThoughtPrefix, first) + "…" + domain.FormatID(domain.ThoughtPrefix, first+1<<thoughtBlockBits-1)
	}
	if task, rest, ok := readShort(k); ok && space == spTaskThoughts { // a block of a task's chain
		if b, rest, ok := readShort(rest); ok && len(rest) == 0 {
			first := b << thoughtBlockBits
			return fmt.Sprintf("%s positions %d…%d", domain.FormatID(domain.TaskPrefix, task), first, first+1<<thoughtBlockBits-1)
		}
	}
	if space == spTasks && isIndexKey(k) { // a block's task index entry
		first := be64(k) &^ 63
		return "index of " + domain.FormatID(domain.TaskPrefix, max(first, 1)) + "…" + domain.FormatID(domain.TaskPrefix, first+63)
	}
	if len(k) == 8 {
		n := be64(k)
		switch space {
		case spTasks:
			return domain.FormatID(domain.TaskPrefix, n)
		case spSessions, spOpenSessions:
			return domain.FormatID(domain.SessionPrefix, n)
		}
	}
	if space == spMeta || space == spProjects || space == spSkills {
		return fmt.Sprintf("%q", k)
	}
	return hex.EncodeToString(k)
}

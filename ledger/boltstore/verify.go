package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// VerifyEvents checks the events with seq in [begin, end) inside this
// transaction — hashes against stored leaves, links, positions — and calls
// fn for every problem (not just the first). fn returning an error stops the
// check. It returns how many events were checked. In a file that stores no
// leaves (formats 2 and 3) an event's bytes are checked against the next event's
// link, so it reads one event past end.
func (tx *Tx) VerifyEvents(begin, end uint64, fn func(*ledger.IntegrityError) error) (uint64, error) {
	begin = max(begin, 1)
	end = min(end, tx.head.Seq+1)
	c := tx.newChecker()
	if begin > 1 {
		// The link into the range is checked against the hash of event
		// begin-1's bytes, as the whole-log check sees it (a changed stored
		// leaf there is outside the range); against its stored leaf only
		// if the event is gone (format 2: against begin's own link).
		var prev ledger.Hash
		if raw := tx.events.Get(u64(begin - 1)); raw != nil {
			prev = ledger.LeafHash(raw)
		} else if tx.base == 0 {
			var err error
			if prev, err = tx.Node(0, begin-2); err != nil {
				return 0, err
			}
		} else if _, link, ok := linkOf(tx.events.Get(u64(begin))); ok {
			prev = link
		}
		c.Resume(begin-1, prev)
	}
	checked := func() uint64 {
		if c.Seq() < begin || end <= begin {
			return 0
		}
		return min(c.Seq(), end-1) - (begin - 1) // format 2 reads event end too
	}
	report, last := fn, end
	if tx.base > 0 {
		// Event end-1 is judged by event end's link; the problems of the
		// events either side of the range are not the range's.
		last = min(end+1, tx.head.Seq+1)
		report = func(p *ledger.IntegrityError) error {
			if p.Seq < begin || p.Seq >= end {
				return nil
			}
			return fn(p)
		}
	}
	if err := tx.CheckEvents(c, begin, last, report); err != nil {
		return checked(), err
	}
	var err error
	if last == tx.head.Seq+1 {
		if err = c.Finish(report); err == nil {
			// After the head: nothing (a problem of the range that
			// reaches it, though named past it).
			err = tx.checkPastHead(tx.head.Seq, fn)
		}
	} else {
		err = c.EndBefore(tx.events.Get(u64(last)), report)
	}
	return checked(), err
}

// linkOf decodes an event's stored bytes for the seq they claim and their
// prev; ok is false if they do not decode.
func linkOf(raw []byte) (uint64, ledger.Hash, bool) {
	r, err := ledger.DecodeRecord(raw)
	if err != nil {
		return 0, ledger.Hash{}, false
	}
	return r.Seq, r.Prev, true
}

// newChecker returns the chain checker for this file's format: with the
// stored leaves, or (formats 2 and 3) links only.
func (tx *Tx) newChecker() *ledger.ChainChecker {
	if tx.base > 0 {
		return ledger.NewLinkChecker(tx.head)
	}
	return ledger.NewChainChecker(tx.head)
}

// CheckEvents feeds the stored events with seq in [begin, end), with their
// stored leaves (if the file stores them), to c, which calls fn for each
// problem. A missing event is reported and the check resumes at the next
// stored one.
func (tx *Tx) CheckEvents(c *ledger.ChainChecker, begin, end uint64, fn func(*ledger.IntegrityError) error) error {
	return tx.checkEvents(c, begin, end, fn, nil)
}

// checkEvents is CheckEvents calling each, if set, with every event checked.
func (tx *Tx) checkEvents(c *ledger.ChainChecker, begin, end uint64, fn func(*ledger.IntegrityError) error, each EachEvent) error {
	if end <= begin {
		return nil
	}
	var lc *bolt.Cursor
	if tx.base == 0 {
		leaves, err := tx.level(0, false)
		if err != nil {
			return fn(&ledger.IntegrityError{Seq: begin, Problem: ledger.ProblemNode, Detail: "no stored leaves"})
		}
		lc = leaves.Cursor()
	}
	// Every key of the bucket is looked at once, whatever the chunks: a
	// range starts right after the key of event begin-1 (at the first key
	// for the whole log), so a key sorting between two events' is the
	// range's that checks the second.
	ec := tx.events.Cursor()
	var k, raw []byte
	if begin <= 1 {
		k, raw = ec.First()
	} else if k, raw = ec.Seek(u64(begin - 1)); keyIs(k, begin-1) {
		k, raw = ec.Next()
	}
	next := func() error {
		prev := k
		if k, raw = ec.Next(); k == nil {
			return nil
		}
		return inOrder(prev, k, false)
	}
	for seq := begin; seq < end; seq++ {
		// Keys no event has (not 8 bytes, or seq 0) are reported and
		// passed over.
		for k != nil {
			if s, ok := seqOf(k); ok && s >= seq && s > 0 {
				break
			}
			if err := fn(strayEventKey(k, seq)); err != nil {
				return err
			}
			if err := next(); err != nil {
				return err
			}
		}
		if s, ok := seqOf(k); !ok || s != seq {
			if err := c.Missing(seq, fn); err != nil {
				return err
			}
			// Resynchronise on the next stored event.
			if s, ok := seqOf(k); ok && s > seq && s < end {
				seq = s - 1
				c.Skip(seq)
				continue
			}
			return nil
		}
		var leaf []byte
		if lc != nil {
			if lk, lv := lc.Seek(u64(seq - 1)); keyIs(lk, seq-1) {
				leaf = lv
			}
		}
		if err := c.Event(seq, raw, leaf, fn); err != nil {
			return err
		}
		if each != nil {
			if err := each(seq, raw, c.Hash()); err != nil {
				return err
			}
		}
		if (seq-begin+1)%releaseEvery == 0 {
			tx.releaseMapped()
		}
		if err := next(); err != nil {
			return err
		}
	}
	return nil
}

// strayEventKey is the problem of a key in the events bucket that is no
// event's, found where event seq was expected: named at the seq its first
// 8 bytes say (which sort it there), else at seq.
func strayEventKey(k []byte, seq uint64) *ledger.IntegrityError {
	at := seq
	if len(k) >= 8 {
		at = min(max(binary.BigEndian.Uint64(k), 1), seq)
	}
	why := fmt.Sprintf("%d bytes, not 8", len(k))
	if len(k) == 8 {
		why = "seqs start at 1"
	}
	return &ledger.IntegrityError{Seq: at, Problem: ledger.ProblemSeq,
		Detail: fmt.Sprintf("key %x in the events bucket is no event's key (%s)", k, why)}
}

// checkPastHead checks the keys of the events bucket after event n, the
// last one checked: in one transaction they are the events appended since
// (n+1 up to the head this transaction reads, an append moves both at
// once) and nothing else. An event past the recorded head is a head that
// is not the last event (a log cut back with the head alone, or an event
// added), named at n+1; any other key is a stray key.
func (tx *Tx) checkPastHead(n uint64, fn func(*ledger.IntegrityError) error) error {
	c := tx.events.Cursor()
	var k []byte
	if n == 0 {
		k, _ = c.First()
	} else if k, _ = c.Seek(u64(n)); keyIs(k, n) {
		k, _ = c.Next()
	}
	for next := n + 1; k != nil; {
		switch s, ok := seqOf(k); {
		case !ok || s < next:
			if err := fn(strayEventKey(k, n+1)); err != nil {
				return err
			}
		case s != next || s > tx.head.Seq:
			return fn(&ledger.IntegrityError{Seq: n + 1, Problem: ledger.ProblemHead,
				Detail: fmt.Sprintf("event %d is stored past the recorded head %d", s, tx.head.Seq)})
		default:
			next++
		}
		prev := k
		if k, _ = c.Next(); k != nil {
			if err := inOrder(prev, k, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckNodes re-hashes the nodes at level (>= 1) with index in [begin, end)
// from the level below, and calls fn for each problem. It returns how many
// nodes it checked.
func (tx *Tx) CheckNodes(level uint, begin, end uint64, fn func(*ledger.IntegrityError) error) (uint64, error) {
	var checked uint64
	if tx.nodes != nil {
		// Format 3: the nodes of every level in one bucket, in the order
		// they were completed; each is sought by its key.
		c := tx.nodes.Cursor()
		for i := begin; i < end; i++ {
			left := nodeAt(c, level-1, 2*i)
			right := nodeAt(c, level-1, 2*i+1)
			got := nodeAt(c, level, i)
			checked++
			if p := ledger.CheckNode(level, i, left, right, got); p != nil {
				if err := fn(p); err != nil {
					return checked, err
				}
			}
		}
		return checked, nil
	}
	for _, l := range []uint{level - 1, level} {
		if _, err := tx.level(l, false); err != nil {
			return 0, fn(&ledger.IntegrityError{Seq: (begin + 1) << level, Problem: ledger.ProblemNode, Detail: fmt.Sprintf("level %d missing", l)})
		}
	}
	below, _ := tx.level(level-1, false)
	here, _ := tx.level(level, false)
	bc, hc := below.Cursor(), here.Cursor()
	bk, bv := bc.Seek(u64(2 * begin))
	hk, hv := hc.Seek(u64(begin))
	// at returns the value at index i if the cursor is on it, advancing it.
	at := func(c interface{ Next() ([]byte, []byte) }, k, v *[]byte, i uint64) []byte {
		if !keyIs(*k, i) {
			return nil
		}
		got := *v
		*k, *v = c.Next()
		return got
	}
	for i := begin; i < end; i++ {
		left := at(bc, &bk, &bv, 2*i)
		right := at(bc, &bk, &bv, 2*i+1)
		got := at(hc, &hk, &hv, i)
		checked++
		if p := ledger.CheckNode(level, i, left, right, got); p != nil {
			if err := fn(p); err != nil {
				return checked, err
			}
		}
	}
	return checked, nil
}

// nodeAt is the value of node (level, index) in a format-3 merkle bucket,
// sought with c; nil if it is not there.
func nodeAt(c *bolt.Cursor, level uint, index uint64) []byte {
	key, ok := nodeKey(level, index)
	if !ok {
		return nil
	}
	if k, v := c.Seek(key); bytes.Equal(k, key) {
		return v
	}
	return nil
}

// VerifyOptions tune Store.Verify.
type VerifyOptions struct {
	Chunk    uint64                   // events per read transaction; default 65536
	Progress func(done, total uint64) // called after each chunk, if set
	// Each, if set, is called with every event checked, in seq order, in
	// the chunk's read transaction: a caller that reads the log for more
	// (a refold, a recomputed root) does so in the same pass. An event
	// passed to Each may still be reported bad afterwards (a changed
	// stored leaf is told from changed bytes by the next event's link).
	Each EachEvent
	// Group, if set, is called in a file that stores no leaves with the
	// root of each group of 1<<level events (index its index at that
	// level) as the check hashed it from their hashes, before Each with
	// the group's last event: a caller that recomputes the tree takes it
	// rather than hash the group again.
	Group func(level uint, index uint64, root ledger.Hash)
	// Chunked, if set, is called after each chunk's read transaction with
	// the last seq it read, outside it (where a caller hands on what Each
	// gathered without holding the file). Its error stops Verify.
	Chunked func(last uint64) error
}

// EachEvent is called with an event's seq, its stored bytes (valid during
// the call only) and their hash; its error stops the check.
type EachEvent func(seq uint64, raw []byte, hash ledger.Hash) error

// VerifyReport is what a successful Verify checked.
type VerifyReport struct {
	Size  uint64      // events verified: seq 1..Size
	Head  ledger.Hash // hash of event Size
	Root  ledger.Hash // RFC 9162 root of the first Size events
	Nodes uint64      // Merkle nodes above the leaves re-hashed
}

// errStop ends a scan early once a problem has been kept.
var errStop = errors.New("stop")

// CheckPages is Verify's check of the file's pages (checkKeyRanges): every
// page of every tree read, none reached twice, every key in its range, and
// the freelist listing no page in use; ErrDamaged names the first thing
// wrong. Opening a file checks only the trees' roots and the freelist
// against them: a writer that frees a tree's pages (a rebuild drops every
// projection) calls it first, since freeing a page another tree still
// uses would damage that tree too, past what snapshot can still copy.
func (s *Store) CheckPages() error {
	return s.withDB(true, func(db *bolt.DB, file *os.File) error {
		return db.View(func(btx *bolt.Tx) error { return checkKeyRanges(btx, file, db.Info().PageSize) })
	})
}

// Verify re-hashes every stored event, checks every link and every stored
// Merkle node, for the log as it stood when Verify began. It reads in chunks
// of short read transactions so writers in other processes keep going. On
// the first problem it returns a *ledger.IntegrityError naming the lowest bad
// seq; other errors are I/O.
func (s *Store) Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	if opts.Chunk == 0 {
		opts.Chunk = 1 << 16
	}
	// No log is longer than maxSeq: a larger chunk reads the same, and
	// seqs plus a chunk (verify --chunk 18446744073709551615) would wrap
	// around to an empty chunk, reported as a missing event.
	opts.Chunk = min(opts.Chunk, maxSeq)
	var head ledger.Head
	var base uint
	var format uint64
	err := s.withDB(true, func(db *bolt.DB, file *os.File) error {
		return db.View(func(btx *bolt.Tx) error {
			if err := checkFormat(btx); err != nil {
				return err
			}
			tx := newTx(btx)
			head, base, format = tx.Head(), tx.base, tx.format
			return checkKeyRanges(btx, file, db.Info().PageSize)
		})
	})
	if err != nil {
		return VerifyReport{}, err
	}
	rep := VerifyReport{Size: head.Seq, Head: head.Hash}
	total := head.Seq + head.Seq>>base // events, then about as many nodes
	var first *ledger.IntegrityError
	keep := func(p *ledger.IntegrityError) error {
		if first == nil || p.Seq < first.Seq {
			first = p
		}
		return errStop
	}

	c := ledger.NewChainChecker(head)
	var groups *groupCheck
	if base > 0 {
		// No stored leaves: each event is judged by the next link, and
		// the nodes of the lowest stored level are hashed from the events
		// as they are read.
		c = ledger.NewLinkChecker(head)
		groups = &groupCheck{base: base, c: c, keep: keep, group: opts.Group}
	}
	for begin := uint64(1); begin <= head.Seq && first == nil; begin += opts.Chunk {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		end := min(begin+opts.Chunk, head.Seq+1)
		err := s.View(func(tx *Tx) error {
			each := opts.Each
			if groups != nil {
				each = groups.each(tx, opts.Each)
			}
			return tx.checkEvents(c, begin, end, keep, each)
		})
		if err != nil && err != errStop {
			return rep, err
		}
		if opts.Chunked != nil && first == nil {
			if err := opts.Chunked(end - 1); err != nil {
				return rep, err
			}
		}
		if opts.Progress != nil {
			opts.Progress(end-1, total)
		}
	}
	if first == nil {
		c.Finish(keep)
	}
	if first == nil {
		if err := s.View(func(tx *Tx) error { return tx.checkPastHead(head.Seq, keep) }); err != nil && err != errStop {
			return rep, err
		}
	}
	if groups != nil {
		rep.Nodes += groups.nodes
		if groups.pending != nil {
			keep(groups.pending)
		}
	}
	if format >= 3 {
		// One pass over the nodes in the order they were completed.
		w := &nodeWalk{base: base, head: head.Seq, seq: 1 << base, level: base}
		for !w.done {
			if first != nil {
				w.limit = first.Seq // found before, or by the walk itself
			}
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			before := w.nodes
			err := s.View(func(tx *Tx) error { return w.walk(tx, opts.Chunk, keep) })
			rep.Nodes += w.nodes - before
			if err != nil && err != errStop {
				return rep, err
			}
			if opts.Progress != nil {
				opts.Progress(min(head.Seq+rep.Nodes, total), total)
			}
		}
	}
	// Formats 1 and 2: the levels above, each against the level below it.
	for level := base + 1; format < 3 && head.Seq>>level > 0; level++ {
		n := head.Seq >> level
		for begin := uint64(0); begin < n; begin += opts.Chunk {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			if first != nil && (begin+1)<<level > first.Seq {
				break // nothing earlier than what we already have
			}
			end := min(begin+opts.Chunk, n)
			var checked uint64
			err := s.View(func(tx *Tx) error {
				var err error
				checked, err = tx.CheckNodes(level, begin, end, keep)
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
	// Formats 1 and 2: every key of the level buckets is a node's.
	for w := (&levelWalk{base: base, head: head.Seq}); format < 3 && !w.done; {
		if first != nil {
			w.limit = first.Seq
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		err := s.View(func(tx *Tx) error { return w.walk(tx, opts.Chunk, keep) })
		if err != nil && err != errStop {
			return rep, err
		}
	}
	if first != nil {
		return rep, first
	}
	err = s.View(func(tx *Tx) error {
		var err error
		rep.Root, err = tx.Root(head.Seq)
		return err
	})
	return rep, err
}

// levelWalk checks the keys of a format-1 or 2 merkle bucket, which the
// checks of the nodes' hashes seek by index and so never see all of: every
// key of it is the sub-bucket of a level the format stores (from base up),
// every key of a level L the index i of a node of the log (completed by
// event (i+1)·2^L <= the head), in order from 0, and past the head only
// the nodes appended since (up to the head of the transaction reading
// them). Anything else is merkle node wrong, named at the seq that
// completes the node its key names (the one expected there, for a key
// that is not 8 bytes), at most the head + 1. It reads up to a chunk of
// keys per read transaction and carries on from the last in the next.
type levelWalk struct {
	base  uint
	head  uint64
	name  []byte // the level being walked, or the key last looked at
	after []byte // the last key walked in it
	limit uint64 // a problem is known at this seq (0: none)
	done  bool
}

func (w *levelWalk) walk(tx *Tx, chunk uint64, keep func(*ledger.IntegrityError) error) error {
	atSeq := func(s uint64) uint64 { return min(max(s, 1), w.head+1) }
	// A problem is kept, and the walk goes on with the next level: a
	// later key of this one names a later seq.
	report := func(p *ledger.IntegrityError) {
		keep(p)
		if w.limit == 0 || p.Seq < w.limit {
			w.limit = p.Seq
		}
	}
	c := tx.btx.Bucket(bucketMerkle).Cursor()
	name, v := c.First()
	if w.name != nil {
		name, v = c.Seek(w.name)
	}
	for n := uint64(0); ; name, v = c.Next() {
		if name == nil {
			w.done = true
			return nil
		}
		if w.name != nil && !bytes.Equal(name, w.name) {
			if err := inOrder(w.name, name, false); err != nil {
				return err
			}
			w.after = nil
		}
		w.name = append(w.name[:0], name...)
		if v != nil || len(name) != 1 || name[0] >= 64 {
			if w.limit == 0 || w.head+1 < w.limit {
				report(&ledger.IntegrityError{Seq: w.head + 1, Problem: ledger.ProblemNode,
					Detail: fmt.Sprintf("key %x in the merkle bucket: no level's bucket", name)})
			}
			continue
		}
		level := uint(name[0])
		// completes is the seq whose append completes node i of the
		// level, false past any log.
		completes := func(i uint64) (uint64, bool) { return (i + 1) << level, i < math.MaxUint64>>level }
		bc := tx.btx.Bucket(bucketMerkle).Bucket(name).Cursor()
		var k, nv []byte
		want := uint64(0)
		if w.after == nil {
			k, nv = bc.First()
		} else {
			want = binary.BigEndian.Uint64(w.after) + 1
			if k, nv = bc.Seek(w.after); bytes.Equal(k, w.after) {
				k, nv = bc.Next()
			}
		}
		for ; k != nil; k, nv = bc.Next() {
			seq, _ := completes(want)
			at := atSeq(seq)
			// The earliest seq this key can be reported at: the node
			// expected, or the one its first 8 bytes name.
			named := at
			if len(k) >= 8 {
				named = w.head + 1
				if s, ok := completes(binary.BigEndian.Uint64(k)); ok {
					named = atSeq(s)
				}
			}
			if w.limit > 0 && min(at, named) >= w.limit {
				break // nothing in this level before what is already found
			}
			if n++; n > chunk {
				return nil
			}
			if w.after != nil {
				if err := inOrder(w.after, k, false); err != nil {
					return err
				}
			}
			if p := w.check(tx, level, want, at, named, k, nv); p != nil {
				report(p)
				break
			}
			want++
			w.after = append(w.after[:0], k...)
		}
	}
}

// check is the problem of key k (value v) of level found where node want
// (completed at seq at) was expected, nil if it is that node; named is
// the seq its first 8 bytes name.
func (w *levelWalk) check(tx *Tx, level uint, want, at, named uint64, k, v []byte) *ledger.IntegrityError {
	stray := func(what string) *ledger.IntegrityError {
		return &ledger.IntegrityError{Seq: named, Problem: ledger.ProblemNode,
			Detail: fmt.Sprintf("key %x of level %d in the merkle bucket: %s", k, level, what)}
	}
	index, ok := seqOf(k)
	end, inLog := (index+1)<<level, index < math.MaxUint64>>level
	switch {
	case level < w.base:
		return stray(fmt.Sprintf("this format stores no level below %d", w.base))
	case !ok:
		return stray("no node's key")
	case v == nil:
		return stray("a bucket, not a node")
	case index > want && at <= w.head:
		return &ledger.IntegrityError{Seq: at, Problem: ledger.ProblemNode, Detail: fmt.Sprintf("node %d/%d missing", level, want)}
	case index != want || !inLog || end > tx.head.Seq:
		return stray("no node of the log")
	case end > w.head && len(v) != len(ledger.Hash{}):
		return stray(fmt.Sprintf("a node past the head of %d bytes, not 32", len(v)))
	}
	return nil
}

// nodeWalk checks the nodes of a format-3 file in key order, which is the
// order they were completed: each key must be the next node the log's
// events complete (none missing, none stray; past the head, only nodes,
// which appends since Verify began may have stored), and each
// node above the lowest stored level the hash of the two before it at the
// level below (its children: the right one completed by the same event,
// just before it). The lowest level is checked against the events by
// groupCheck. It reads a chunk of keys per read transaction and carries on
// from the last key in the next.
type nodeWalk struct {
	base  uint
	head  uint64
	seq   uint64 // the seq completing the next node expected
	level uint   // and its level
	// last and prev are, per level, the hashes of the latest two nodes
	// walked: a parent's right and left children.
	last, prev [64][]byte
	after      []byte // the last key walked
	nodes      uint64 // nodes above base checked
	limit      uint64 // a problem is known at this seq (0: none): stop before it
	done       bool
}

// walk checks up to chunk keys in tx, calling keep with a problem (which
// stops it).
func (w *nodeWalk) walk(tx *Tx, chunk uint64, keep func(*ledger.IntegrityError) error) error {
	c := tx.nodes.Cursor()
	var k, v []byte
	if w.after == nil {
		k, v = c.First()
	} else if k, v = c.Seek(w.after); bytes.Equal(k, w.after) {
		k, v = c.Next()
	}
	for n := uint64(0); n < chunk; n++ {
		if w.limit > 0 {
			// The earliest seq this step can report: the node expected,
			// or a key sorting before it, named at the seq its first 8
			// bytes say but never below 1, as keep is told below (else a
			// key saying seq 0, reported at 1, was never at or past the
			// limit 1, and each walk found it again, for ever).
			at := w.seq
			if len(k) >= 8 {
				at = min(at, max(binary.BigEndian.Uint64(k), 1))
			}
			if at >= w.limit {
				w.done = true // nothing before what is already found
				return nil
			}
		}
		var want []byte
		if w.seq <= w.head {
			want, _ = nodeKey(w.level, w.seq>>w.level-1)
		}
		switch cmp := bytes.Compare(k, want); {
		case want == nil:
			// Every node of the log as it stood is checked. What follows,
			// every key of it, must be nodes appended since (Verify runs
			// beside writers).
			if k == nil {
				w.done = true
				return nil
			}
			if w.after != nil {
				// Only here can a damaged page give keys for ever:
				// before, each key is the next one expected.
				if err := inOrder(w.after, k, false); err != nil {
					return err
				}
			}
			if level, index, ok := nodeOfKey(k); !ok || level < w.base || (index+1)<<level <= w.head || len(v) != len(ledger.Hash{}) {
				// Named at the seq its first 8 bytes say, if in the log.
				seq := w.head + 1
				if len(k) >= 8 {
					seq = min(max(binary.BigEndian.Uint64(k), 1), seq)
				}
				return keep(&ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemNode,
					Detail: fmt.Sprintf("key %x in the merkle bucket after the last node: %s", k, describeKey(k))})
			}
			w.after = append(w.after[:0], k...)
			k, v = c.Next()
			continue
		case k == nil || cmp > 0:
			return keep(&ledger.IntegrityError{Seq: w.seq, Problem: ledger.ProblemNode,
				Detail: fmt.Sprintf("node %d/%d missing", w.level, w.seq>>w.level-1)})
		case cmp < 0:
			// Named at the seq its first 8 bytes say: they sort it there.
			seq := w.seq
			if len(k) >= 8 {
				seq = max(binary.BigEndian.Uint64(k), 1)
			}
			return keep(&ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemNode,
				Detail: fmt.Sprintf("key %x in the merkle bucket: %s where none is stored", k, describeKey(k))})
		}
		index := w.seq>>w.level - 1
		if len(v) != len(ledger.Hash{}) {
			return keep(&ledger.IntegrityError{Seq: w.seq, Problem: ledger.ProblemNode,
				Detail: fmt.Sprintf("node %d/%d is %d bytes, not 32", w.level, index, len(v))})
		}
		if w.level > w.base {
			w.nodes++
			if p := ledger.CheckNode(w.level, index, w.prev[w.level-1], w.last[w.level-1], v); p != nil {
				return keep(p)
			}
		}
		w.prev[w.level] = append(w.prev[w.level][:0], w.last[w.level]...)
		w.last[w.level] = append(w.last[w.level][:0], v...)
		w.after = append(w.after[:0], k...)
		// The same event completes the parent too when the node is a
		// right child; else the next group's event completes the next.
		if w.level < 63 && w.seq&(1<<(w.level+1)-1) == 0 {
			w.level++
		} else {
			w.seq, w.level = w.seq+1<<w.base, w.base
		}
		k, v = c.Next()
	}
	return nil
}

// describeKey says which node a format-3 key names, if any.
func describeKey(k []byte) string {
	if level, index, ok := nodeOfKey(k); ok {
		return fmt.Sprintf("node %d/%d", level, index)
	}
	return "no node's key"
}

// groupCheck checks, in Verify's pass over a file that stores no leaves,
// each stored node of the lowest stored level against the root of the
// events it covers, hashed as they are read. A node that differs is held
// until the chain checker has judged every event it covers (two events
// on), so a changed event is reported as such, at its own seq, rather than
// as the node above it.
type groupCheck struct {
	base    uint
	c       *ledger.ChainChecker
	keep    func(*ledger.IntegrityError) error
	leaves  []ledger.Hash
	pending *ledger.IntegrityError
	nodes   uint64                                           // nodes checked
	group   func(level uint, index uint64, root ledger.Hash) // VerifyOptions.Group
}

// each returns the EachEvent of one read transaction: the check, then next.
func (g *groupCheck) each(tx *Tx, next EachEvent) EachEvent {
	// One cursor and key for the transaction: a Get per node would
	// allocate a cursor's stack each time.
	var cur *bolt.Cursor
	var k [8]byte
	if tx.nodes != nil {
		cur = tx.nodes.Cursor()
	}
	return func(seq uint64, raw []byte, hash ledger.Hash) error {
		if g.pending != nil && g.c.Seq() >= g.pending.Seq+2 {
			return g.keep(g.pending)
		}
		g.leaves = append(g.leaves, hash)
		if len(g.leaves) == 1<<g.base {
			want := ledger.PerfectRoot(g.leaves)
			g.leaves = g.leaves[:0]
			g.nodes++
			index := seq>>g.base - 1
			if g.group != nil {
				g.group(g.base, index, want)
			}
			if cur == nil {
				if b, err := tx.level(g.base, false); err == nil {
					cur = b.Cursor()
				}
			}
			var got []byte
			if tx.nodes != nil {
				got = nodeAt(cur, g.base, index)
			} else if cur != nil {
				binary.BigEndian.PutUint64(k[:], index)
				if ck, cv := cur.Seek(k[:]); keyIs(ck, index) {
					got = cv
				}
			}
			var p *ledger.IntegrityError
			switch {
			case got == nil:
				p = &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemNode, Detail: fmt.Sprintf("node %d/%d missing", g.base, index)}
			case len(got) != len(want):
				p = &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemNode, Detail: fmt.Sprintf("node %d/%d is %d bytes, not 32", g.base, index, len(got))}
			case ledger.Hash(got) != want:
				p = &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemNode, Want: want, Got: ledger.Hash(got),
					Detail: fmt.Sprintf("node %d/%d is not the root of the events it covers", g.base, index)}
			}
			if p != nil && g.pending == nil {
				g.pending = p
			}
		}
		if next != nil {
			return next(seq, raw, hash)
		}
		return nil
	}
}

package projections

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// The tasks by the values task_list filters them on, so that a filtered
// list reads only the tasks that can match rather than decoding every
// task's record.
//
// The index is kept in the tasks space, one key per block of 64 task
// numbers: the block's last number (8 bytes big-endian, as a task's key)
// and ixMark, so that it sorts after every task of the block and before the
// next block's (indexKey). Its value is the block's entries, one per value
// some task of the block has, in order of their prefix: a kind byte, the
// value's length (uvarint), the value — the prefix —, then the bitmap (8
// bytes, big-endian: bit n & 63) of the block's tasks whose kind is that
// value, never zero (an entry whose last task left it goes, and a block
// left with none). A task is in one entry per kind, one per label for its
// labels; an empty value (no assignee) is in none. What the index holds is
// a function of the tasks' records alone: the fold sets and clears a
// task's bits whenever it stores the task (setTask), live and in a batch
// alike. A read seeks each block in turn, ORing the bitmaps of a filter's
// values and ANDing the filters.
//
// Beside the tasks, one key per block: storing a task writes its block's
// key on the leaf its record is on — a new task's, the last key, after its
// record on the space's last leaf — so a create dirties no other page and
// opens no other space. (In a space of its own, keyed by value then block,
// a create rewrote one leaf per value, across the space: 10 KB and 70
// allocations more per task_create and 230 B a task more of file; keyed by
// block, one leaf and the space's root: 3 KB and 23 allocations more.)
const ixMark = 'i'

// indexKey appends to dst the key of block b's entry in the tasks space.
func indexKey(dst []byte, b uint64) []byte {
	return append(binary.BigEndian.AppendUint64(dst, b<<6|63), ixMark)
}

// isIndexKey reports whether k, a key of the tasks space, is a block's
// entry rather than a task's.
func isIndexKey(k []byte) bool { return len(k) == 9 && k[8] == ixMark && k[7]&63 == 63 }

// The kinds of the index's entries.
const (
	ixAssignee = 'a'
	ixLabel    = 'l'
	ixProject  = 'p'
	ixPriority = 'r'
	ixStatus   = 's'
)

// indexPrefix appends to dst the prefix of the entry of the tasks whose
// kind is value. The length makes the prefix of one value never the prefix
// of another's (uvarints are prefix-free).
func indexPrefix(dst []byte, kind byte, value string) []byte {
	dst = binary.AppendUvarint(append(dst, kind), uint64(len(value)))
	return append(dst, value...)
}

// indexed is what the index entries of a task are made of.
type indexed struct {
	project, status, priority, assignee string
	labels                              []string
}

func indexedOf(t *Task) indexed {
	return indexed{project: t.Project, status: t.Status, priority: t.Priority, assignee: t.Assignee, labels: t.Labels}
}

// ixChange is what a fold changes of one entry of a block: its prefix
// (buf[start:end] of the reindex's buffer) and the bits it sets and
// clears.
type ixChange struct {
	start, end int
	set, clear uint64
}

// appendChanges appends to buf the prefixes of the entries that hold a
// task indexed as t, and to changes, for each, that bit is set (or
// cleared).
func appendChanges(changes []ixChange, buf []byte, t indexed, bit uint64, set bool) ([]ixChange, []byte) {
	add := func(kind byte, value string) {
		if value == "" {
			return
		}
		c := ixChange{start: len(buf)}
		buf = indexPrefix(buf, kind, value)
		c.end = len(buf)
		if set {
			c.set = bit
		} else {
			c.clear = bit
		}
		changes = append(changes, c)
	}
	add(ixAssignee, t.assignee)
	for _, l := range t.labels {
		add(ixLabel, l)
	}
	add(ixProject, t.project)
	add(ixPriority, t.priority)
	add(ixStatus, t.status)
	return changes, buf
}

// indexedAs records what the index entries of task number n are made of
// as it is stored (read from the space, or carried from the chunk before),
// before the fold changes it (which replaces a field, never changes what
// one holds: the labels' slice is kept as it was).
func (f *folder) indexedAs(n uint64, t *Task) {
	if f.indexed == nil {
		f.indexed = map[uint64]indexed{}
	}
	f.indexed[n] = indexedOf(t)
}

// reindex writes the index bits of the tasks numbered ns (in order) as
// they now are, in place of those they were stored with: one key per
// block, read and written once, after the block's tasks (whose pages the
// caller packs as it writes them).
func (f *folder) reindex(ns []uint64, task func(uint64) *Task) error {
	// A task's few changes and their prefixes fit here, on the stack: a
	// live fold allocates the block's new value and its key (which
	// bbolt's calls take to the heap), nothing else of its own.
	var changesArr [8]ixChange
	var bufArr [128]byte
	changes, buf := changesArr[:0], bufArr[:0]
	var sp *boltstore.Space
	var key [9]byte
	for i := 0; i < len(ns); {
		block := ns[i] >> 6
		changes, buf = changes[:0], buf[:0]
		for ; i < len(ns) && ns[i]>>6 == block; i++ {
			n := ns[i]
			bit := uint64(1) << (n & 63)
			if w, ok := f.indexed[n]; ok {
				changes, buf = appendChanges(changes, buf, w, bit, false)
			}
			t := task(n)
			changes, buf = appendChanges(changes, buf, indexedOf(t), bit, true)
			if f.tasks != nil {
				f.indexedAs(n, t)
			} else {
				// Live: a task is read from the space before it is
				// stored again (task), which records it afresh.
				delete(f.indexed, n)
			}
		}
		if changes = netChanges(changes, buf); len(changes) == 0 {
			continue
		}
		if sp == nil {
			var err error
			if sp, err = f.tx.Space(spTasks); err != nil {
				return err
			}
		}
		indexKey(key[:0], block)
		old := sp.Get(key[:])
		next, err := changeBlock(old, buf, changes)
		if err != nil {
			return fmt.Errorf("task index block %d: %w", block, err)
		}
		if len(next) == 0 {
			err = sp.Delete(key[:])
		} else {
			err = sp.Put(key[:], next)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// netChanges sorts a block's changes by prefix, merges those of one
// prefix, and drops what changes nothing: a task's bit both cleared and
// set (a value it kept). What is left changes the block.
func netChanges(changes []ixChange, buf []byte) []ixChange {
	slices.SortFunc(changes, func(a, b ixChange) int { return bytes.Compare(buf[a.start:a.end], buf[b.start:b.end]) })
	out := changes[:0]
	for i := 0; i < len(changes); {
		c := changes[i]
		for i++; i < len(changes) && bytes.Equal(buf[changes[i].start:changes[i].end], buf[c.start:c.end]); i++ {
			c.set |= changes[i].set
			c.clear |= changes[i].clear
		}
		kept := c.set & c.clear
		if c.set, c.clear = c.set&^kept, c.clear&^kept; c.set|c.clear != 0 {
			out = append(out, c)
		}
	}
	return out
}

// changeBlock is a block's value old (nil: none yet) with changes
// (sorted by prefix, one per prefix) made, in a new slice; empty if no
// entry is left.
func changeBlock(old, buf []byte, changes []ixChange) ([]byte, error) {
	size := len(old)
	for _, c := range changes {
		size += c.end - c.start + 8
	}
	out := make([]byte, 0, size)
	put := func(prefix []byte, of uint64) {
		if of != 0 {
			out = binary.BigEndian.AppendUint64(append(out, prefix...), of)
		}
	}
	if old != nil {
		err := entries(old, func(prefix []byte, of uint64) {
			for len(changes) > 0 && bytes.Compare(buf[changes[0].start:changes[0].end], prefix) < 0 {
				put(buf[changes[0].start:changes[0].end], changes[0].set)
				changes = changes[1:]
			}
			if len(changes) > 0 && bytes.Equal(buf[changes[0].start:changes[0].end], prefix) {
				of = of&^changes[0].clear | changes[0].set
				changes = changes[1:]
			}
			put(prefix, of)
		})
		if err != nil {
			return nil, err
		}
	}
	for _, c := range changes {
		put(buf[c.start:c.end], c.set)
	}
	return out, nil
}

// entries calls fn for each entry of a block's value v, in order, having
// checked it is as the fold writes them: at least one, in order of their
// prefix, each prefix once, none of no task.
func entries(v []byte, fn func(prefix []byte, of uint64)) error {
	if len(v) == 0 {
		return fmt.Errorf("no entry: %w", boltstore.ErrDamaged)
	}
	var prev []byte
	for len(v) > 0 {
		prefix, of, rest, err := nextEntry(v)
		if err != nil {
			return err
		}
		if prev != nil && bytes.Compare(prev, prefix) >= 0 {
			return fmt.Errorf("entry %x after %x: %w", prefix, prev, boltstore.ErrDamaged)
		}
		fn(prefix, of)
		prev, v = prefix, rest
	}
	return nil
}

// nextEntry splits a block's value v into its first entry's prefix and
// bitmap and the entries after it.
func nextEntry(v []byte) (prefix []byte, of uint64, rest []byte, err error) {
	if len(v) >= 2 {
		l, w := binary.Uvarint(v[1:])
		if w > 0 && l <= uint64(len(v)) {
			if end := 1 + w + int(l); end+8 <= len(v) {
				if of = be64(v[end:]); of != 0 {
					return v[:end], of, v[end+8:], nil
				}
			}
		}
	}
	return nil, 0, nil, fmt.Errorf("entry %x: %w", v[:min(len(v), 64)], boltstore.ErrDamaged)
}

// TaskFilter is what task_list's indexed filters ask of a task: each one
// given (not empty) holds.
type TaskFilter struct {
	Project  string
	Status   []string // one of them
	Priority []string // one of them
	Assignee string
	Label    string
}

// TasksMatching calls fn, as TasksInPlace does, for each task that may
// match f: every one that does, perhaps others (fn checks). With no filter
// of f given it is TasksInPlace; else it reads the index's blocks, ORing
// the bitmaps of each filter's values and ANDing the filters, and reads
// only the tasks all of them hold, in creation order — unless they are
// more than a quarter of all, which one scan of every task reads for less.
func TasksMatching(tx *boltstore.Tx, f TaskFilter, fn func(*Task) bool) error {
	// Each filter given: the prefixes of its values' entries.
	var filters [][][]byte
	for _, c := range []struct {
		kind   byte
		values []string
	}{{ixAssignee, nonEmpty(f.Assignee)}, {ixLabel, nonEmpty(f.Label)}, {ixProject, nonEmpty(f.Project)}, {ixStatus, f.Status}, {ixPriority, f.Priority}} {
		if len(c.values) == 0 {
			continue
		}
		var prefixes [][]byte
		for _, v := range c.values {
			if v == "" { // which the index does not hold
				return TasksInPlace(tx, fn)
			}
			prefixes = append(prefixes, indexPrefix(nil, c.kind, v))
		}
		filters = append(filters, prefixes)
	}
	if len(filters) == 0 {
		return TasksInPlace(tx, fn)
	}
	meta, err := tx.Space(spMeta)
	if err != nil {
		return err
	}
	last := getU64(meta, counterTask)
	most := last / 4
	tasks, err := tx.Space(spTasks)
	if err != nil {
		return err
	}
	var match []block // the blocks' tasks every filter holds
	count := uint64(0)
	either := make([]uint64, len(filters)) // per filter, the block's tasks one of its values holds
	var key [9]byte
	for b := uint64(0); b <= last>>6 && count <= most; b++ {
		v := tasks.Get(indexKey(key[:0], b))
		if v == nil {
			continue
		}
		clear(either)
		err := entries(v, func(prefix []byte, of uint64) {
			for i, prefixes := range filters {
				for _, p := range prefixes {
					if bytes.Equal(prefix, p) {
						either[i] |= of
					}
				}
			}
		})
		if err != nil {
			return fmt.Errorf("task index block %d: %w", b, err)
		}
		all := ^uint64(0)
		for _, e := range either {
			all &= e
		}
		if all != 0 {
			match = append(match, block{b, all})
			count += uint64(bits.OnesCount64(all))
		}
	}
	if count > most {
		return TasksInPlace(tx, fn)
	}
	var t Task
	var id []byte
	for _, b := range match {
		for w := b.bits; w != 0; w &= w - 1 {
			n := b.n<<6 | uint64(bits.TrailingZeros64(w))
			v := tasks.Get(u64(n))
			if v == nil {
				return fmt.Errorf("the task index names task number %d, which the tasks space does not hold: %w", n, boltstore.ErrDamaged)
			}
			if err := decodeTask(&t, n, v, &id); err != nil {
				return err
			}
			if !fn(&t) {
				return nil
			}
		}
	}
	return nil
}

// block is a block of 64 task numbers (n: the numbers >> 6) and a bitmap
// of some of its tasks.
type block struct{ n, bits uint64 }

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

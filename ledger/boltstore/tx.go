package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// Tx is one transaction on the ledger: read-only inside View, writable
// inside Update. It is valid only during the function it is passed to, and
// so are the Raw bytes of records it returns.
type Tx struct {
	btx       *bolt.Tx
	now       func() time.Time
	head      ledger.Head
	headDirty bool
	events    *bolt.Bucket
	// eventCur is the cursor Event seeks with in events, made on its
	// first call, as nodeCur.
	eventCur *bolt.Cursor
	// levels are the Merkle levels' sub-buckets looked up so far (formats
	// 1 and 2); nodes is the merkle bucket itself, which holds every
	// stored node in format 3.
	levels []*bolt.Bucket
	nodes  *bolt.Bucket
	// nodeCur is the cursor nodeValue seeks with in nodes, made on its
	// first call (bbolt's Get makes one, and its stack, every call).
	nodeCur *bolt.Cursor
	// base is the lowest Merkle level the file stores: 0 in format 1,
	// baseLevel from format 2, whose lower nodes are hashed from the events.
	base   uint
	format uint64
	// tail holds the hashes of the events after the last stored node of
	// level base, when base > 0: the Store's, kept across commits, or the
	// transaction's own.
	tail     *leafTail
	appended [][]byte // stored bytes of the events Append added, in order
	noAppend bool     // Options.NoAppend: Append and Ingest are refused
	// live are the spaces looked up so far, by name: a call asks for the
	// same few spaces dozens of times, and each lookup made a Space, a
	// cursor and its stack (DropSpaces and CopySpaces clear it).
	live map[string]*Space
	// spaceBlock is where the next Spaces are made, a few at a time (a
	// call looks up about five).
	spaceBlock []Space
	// file is the open ledger file of a writer's transaction, whose trees
	// DropSpaces checks before it frees their pages.
	file *os.File
}

func newTx(btx *bolt.Tx) *Tx {
	tx := &Tx{btx: btx, events: btx.Bucket(bucketEvents)}
	if v := btx.Bucket(bucketMeta).Get(keyHead); len(v) == 8+len(ledger.Hash{}) {
		tx.head.Seq = binary.BigEndian.Uint64(v)
		copy(tx.head.Hash[:], v[8:])
	}
	if v := btx.Bucket(bucketMeta).Get(keyFormat); len(v) == 8 {
		tx.format = binary.BigEndian.Uint64(v)
	}
	if tx.format >= 2 {
		tx.base = baseLevel
	}
	if tx.format >= 3 {
		tx.nodes = btx.Bucket(bucketMerkle)
	}
	if btx.Writable() {
		// The log and its nodes only grow at the end: pack pages full.
		tx.events.FillPercent = 1
		if tx.nodes != nil {
			tx.nodes.FillPercent = 1
		}
	}
	return tx
}

// Writable reports whether the transaction may append.
func (tx *Tx) Writable() bool { return tx.btx.Writable() }

// Format is the file's format version (FormatVersion or older).
func (tx *Tx) Format() uint64 { return tx.format }

// Head is the log's last event as of this transaction (including appends
// made in it).
func (tx *Tx) Head() ledger.Head { return tx.head }

// Append assigns e its sequence number, time and previous hash, stores its
// encoding and the Merkle nodes it completes, and returns the stored record.
func (tx *Tx) Append(e ledger.Event) (ledger.Record, error) {
	if !tx.btx.Writable() {
		return ledger.Record{}, ErrReadOnly // (a read's Tx has no clock either)
	}
	if tx.noAppend {
		return ledger.Record{}, ErrNoAppend
	}
	e.Envelope = 0 // the current envelope version, whatever e was read with
	e.Seq = tx.head.Seq + 1
	e.Prev = tx.head.Hash
	e.Time = tx.now().UTC().Truncate(time.Millisecond)
	raw, err := e.Encode()
	if err != nil {
		return ledger.Record{}, err
	}
	h, err := tx.store(e.Seq, raw)
	if err != nil {
		return ledger.Record{}, err
	}
	tx.appended = append(tx.appended, raw)
	return ledger.Record{Event: e, Raw: raw, Hash: h}, nil
}

// Ingest appends an event that another node already appended to the
// replicated log the store follows (Options.Replica), as its stored bytes.
// It checks them first — a canonical envelope claiming the next seq and
// linking to the head — so loss or corruption in the replicated log is
// reported as a *ledger.IntegrityError and never stored or folded.
func (tx *Tx) Ingest(raw []byte) (ledger.Record, error) {
	if !tx.btx.Writable() {
		return ledger.Record{}, ErrReadOnly
	}
	if tx.noAppend {
		return ledger.Record{}, ErrNoAppend
	}
	want := tx.head.Seq + 1
	r, err := ledger.DecodeRecord(raw)
	switch {
	case err != nil:
		return ledger.Record{}, &ledger.IntegrityError{Seq: want, Problem: ledger.ProblemMalformed, Detail: err.Error()}
	case r.Seq != want:
		return ledger.Record{}, &ledger.IntegrityError{Seq: want, Problem: ledger.ProblemSeq, Detail: fmt.Sprintf("the replicated log's next event claims seq %d", r.Seq)}
	case r.Prev != tx.head.Hash && !(want == 1 && r.Prev == ledger.Hash{}):
		return ledger.Record{}, &ledger.IntegrityError{Seq: want, Problem: ledger.ProblemLink, Want: tx.head.Hash, Got: r.Prev}
	}
	raw = append([]byte(nil), raw...)
	r.Raw = raw
	if _, err := tx.store(want, raw); err != nil {
		return ledger.Record{}, err
	}
	return r, nil
}

// store puts the stored bytes of event seq (the head's successor) and the
// Merkle nodes it completes, and makes it the head.
func (tx *Tx) store(seq uint64, raw []byte) (ledger.Hash, error) {
	h := ledger.LeafHash(raw)
	if err := tx.events.Put(u64(seq), raw); err != nil {
		return h, fmt.Errorf("append seq %d: %w", seq, err)
	}
	var nodes []ledger.Node
	var err error
	if tx.base == 0 {
		nodes, err = ledger.AppendNodes(seq-1, h, tx.Node)
	} else {
		nodes, err = tx.appendTail(seq, h)
	}
	if err != nil {
		return h, fmt.Errorf("append seq %d: merkle: %w", seq, err)
	}
	for _, n := range nodes {
		if err := tx.putNode(n); err != nil {
			return h, fmt.Errorf("append seq %d: merkle node %d/%d: %w", seq, n.Level, n.Index, err)
		}
	}
	tx.head = ledger.Head{Seq: seq, Hash: h}
	tx.headDirty = true
	return h, nil
}

// leafTail is the hashes of the events after the last complete group of
// 1<<baseLevel: what the next node of level baseLevel is hashed from. It is
// valid for a log whose head is (seq, hash): a commit rolled back leaves it
// ahead of the file's head, and the next append reads it again.
type leafTail struct {
	seq    uint64
	hash   ledger.Hash
	leaves []ledger.Hash // events seq-len(leaves)+1 .. seq
}

// appendTail adds the leaf h of event seq to the tail and returns the
// stored nodes it completes: none until it completes a group, then the
// group's node at level base and the parents that completes. Only the first
// append of a log whose tail is not known reads events: at most
// 1<<base - 1 of them, hashed once.
func (tx *Tx) appendTail(seq uint64, h ledger.Hash) ([]ledger.Node, error) {
	t := tx.tail
	if t == nil {
		t = &leafTail{}
		tx.tail = t
	}
	group := uint64(1) << tx.base
	if t.seq != tx.head.Seq || t.hash != tx.head.Hash || uint64(len(t.leaves)) != tx.head.Seq%group {
		// Read the events of the group so far.
		t.leaves = t.leaves[:0]
		first := tx.head.Seq - tx.head.Seq%group + 1
		if err := tx.leafHashes(first, tx.head.Seq+1, func(l ledger.Hash) { t.leaves = append(t.leaves, l) }); err != nil {
			return nil, err
		}
	}
	t.leaves = append(t.leaves, h)
	t.seq, t.hash = seq, h
	if uint64(len(t.leaves)) < group {
		return nil, nil
	}
	root := ledger.PerfectRoot(t.leaves)
	t.leaves = t.leaves[:0]
	return ledger.AppendNode(tx.base, (seq-1)>>tx.base, root, tx.Node)
}

// leafHashes calls fn with the hash of each stored event with seq in
// [begin, end), in order; a missing event is ErrDamaged if the head is past
// it, else ErrNotFound.
func (tx *Tx) leafHashes(begin, end uint64, fn func(ledger.Hash)) error {
	if begin >= end {
		return nil
	}
	c := tx.events.Cursor()
	seq := begin
	for k, v := c.Seek(u64(begin)); seq < end; k, v = c.Next() {
		if !keyIs(k, seq) {
			if seq <= tx.head.Seq {
				// An event the log holds is gone: the nodes over it
				// cannot be hashed, as a stored node could not be read.
				return fmt.Errorf("%w: event %d is missing", ErrDamaged, seq)
			}
			return fmt.Errorf("event %d: %w", seq, ErrNotFound)
		}
		fn(ledger.LeafHash(v))
		seq++
	}
	return nil
}

// flush writes the head once per commit rather than once per event.
func (tx *Tx) flush() error {
	if !tx.headDirty {
		return nil
	}
	v := append(u64(tx.head.Seq), tx.head.Hash[:]...)
	return tx.btx.Bucket(bucketMeta).Put(keyHead, v)
}

// putNode stores a Merkle node: in format 3 in the merkle bucket under
// nodeKey, before that in its level's sub-bucket under its index.
func (tx *Tx) putNode(n ledger.Node) error {
	v := append([]byte(nil), n.Hash[:]...)
	if tx.nodes != nil {
		k, ok := nodeKey(n.Level, n.Index)
		if !ok {
			return fmt.Errorf("no such node in a log of at most 2^64-1 events")
		}
		return tx.nodes.Put(k, v)
	}
	b, err := tx.level(n.Level, true)
	if err != nil {
		return err
	}
	return b.Put(u64(n.Index), v)
}

// nodeKeySize is the length of a format-3 node's key.
const nodeKeySize = 9

// nodeKey is the key of node (level, index) in a format-3 merkle bucket:
// the seq of the event that completes it, (index+1)<<level, big-endian,
// then the level. Keys sort in the order the nodes are completed (by seq,
// then upwards), so every append writes at the end of one key space: the
// pages it dirties are that space's last leaf and the branches above it,
// however many levels the events complete. ok is false for a node past
// any log's end.
func nodeKey(level uint, index uint64) ([]byte, bool) {
	var k [nodeKeySize]byte
	if !putNodeKey(&k, level, index) {
		return nil, false
	}
	return k[:], true
}

// putNodeKey writes nodeKey(level, index) to k; false if there is none.
func putNodeKey(k *[nodeKeySize]byte, level uint, index uint64) bool {
	if level >= 64 || index >= (^uint64(0))>>level {
		return false
	}
	binary.BigEndian.PutUint64(k[:], (index+1)<<level)
	k[8] = byte(level)
	return true
}

// nodeOfKey decodes a format-3 node key; ok is false for a key that no
// node has (a damaged file).
func nodeOfKey(k []byte) (level uint, index uint64, ok bool) {
	if len(k) != nodeKeySize || k[8] >= 64 {
		return 0, 0, false
	}
	seq, level := binary.BigEndian.Uint64(k), uint(k[8])
	if seq == 0 || seq&(1<<level-1) != 0 {
		return 0, 0, false
	}
	return level, seq>>level - 1, true
}

// nodeValue returns the stored bytes of node (level, index), nil if it is
// not stored; an error only for a format-1 or 2 file without that level.
func (tx *Tx) nodeValue(level uint, index uint64) ([]byte, error) {
	if tx.nodes != nil {
		var key [nodeKeySize]byte
		if !putNodeKey(&key, level, index) {
			return nil, nil
		}
		if tx.nodeCur == nil {
			tx.nodeCur = tx.nodes.Cursor()
		}
		// Seek searches from the bucket's root, through what this
		// transaction wrote, wherever the cursor was.
		if k, v := tx.nodeCur.Seek(key[:]); bytes.Equal(k, key[:]) {
			return v, nil
		}
		return nil, nil
	}
	b, err := tx.level(level, false)
	if err != nil {
		return nil, err
	}
	return b.Get(u64(index)), nil
}

// level returns the bucket of Merkle nodes at level (formats 1 and 2),
// creating it if asked.
func (tx *Tx) level(level uint, create bool) (*bolt.Bucket, error) {
	if tx.nodes != nil {
		return nil, fmt.Errorf("merkle level %d: a format-%d file has no level buckets", level, tx.format)
	}
	for uint(len(tx.levels)) <= level {
		tx.levels = append(tx.levels, nil)
	}
	if b := tx.levels[level]; b != nil {
		return b, nil
	}
	parent := tx.btx.Bucket(bucketMerkle)
	name := []byte{byte(level)}
	b := parent.Bucket(name)
	if b == nil {
		if !create {
			return nil, fmt.Errorf("merkle level %d: %w", level, ErrNotFound)
		}
		var err error
		if b, err = parent.CreateBucket(name); err != nil {
			return nil, err
		}
	}
	if tx.btx.Writable() {
		b.FillPercent = 1
	}
	tx.levels[level] = b
	return b, nil
}

// Node returns the Merkle node at (level, index): the root of the perfect
// subtree over leaves [index<<level, (index+1)<<level). A node of a level
// the file does not store (formats 2 and 3: below baseLevel) is hashed from the
// events, at most 1<<(baseLevel-1) of them.
func (tx *Tx) Node(level uint, index uint64) (ledger.Hash, error) {
	var h ledger.Hash
	if level < tx.base {
		var buf [1 << (baseLevel - 1)]ledger.Hash
		leaves := buf[:0]
		begin := index<<level + 1
		if err := tx.leafHashes(begin, begin+1<<level, func(l ledger.Hash) { leaves = append(leaves, l) }); err != nil {
			return h, fmt.Errorf("merkle node %d/%d: %w", level, index, err)
		}
		return ledger.PerfectRoot(leaves), nil
	}
	// A node the log completed (its last leaf at or before the head) that
	// is not stored is damage, as a missing event is; past the head, not
	// found.
	inLog := (index+1)<<level <= tx.head.Seq
	v, err := tx.nodeValue(level, index)
	if err != nil {
		if inLog && errors.Is(err, ErrNotFound) {
			return h, fmt.Errorf("%w: merkle node %d/%d is missing (%v)", ErrDamaged, level, index, err)
		}
		return h, err
	}
	switch {
	case v == nil && inLog:
		return h, fmt.Errorf("%w: merkle node %d/%d is missing", ErrDamaged, level, index)
	case v == nil:
		return h, fmt.Errorf("merkle node %d/%d: %w", level, index, ErrNotFound)
	case len(v) != len(h):
		return h, fmt.Errorf("%w: merkle node %d/%d is %d bytes, not %d", ErrDamaged, level, index, len(v), len(h))
	}
	copy(h[:], v)
	return h, nil
}

// Committed returns the hash the log commits to for event seq, whatever its
// stored bytes now hash to: its stored leaf in format 1; from format 2 (no
// leaves) the prev of event seq+1, or the head's hash for the last event.
// ErrNotFound past the head; ErrDamaged if what commits to it is unreadable.
func (tx *Tx) Committed(seq uint64) (ledger.Hash, error) {
	if seq < 1 || seq > tx.head.Seq {
		return ledger.Hash{}, fmt.Errorf("event %d: %w", seq, ErrNotFound)
	}
	if tx.base == 0 {
		return tx.Node(0, seq-1)
	}
	if seq == tx.head.Seq {
		return tx.head.Hash, nil
	}
	next, err := tx.Event(seq + 1)
	if err != nil {
		return ledger.Hash{}, fmt.Errorf("%w: the link to event %d: %v", ErrDamaged, seq, err)
	}
	return next.Prev, nil
}

// Event reads and decodes the event at seq. ErrNotFound if absent past the
// head; ErrDamaged if the head says the log holds it.
func (tx *Tx) Event(seq uint64) (ledger.Record, error) {
	if tx.eventCur == nil {
		tx.eventCur = tx.events.Cursor()
	}
	// Seek searches from the bucket's root, through the events appended
	// in this transaction (Space.Get).
	k, raw := tx.eventCur.Seek(u64(seq))
	if !keyIs(k, seq) {
		raw = nil
	}
	if raw == nil {
		if seq >= 1 && seq <= tx.head.Seq {
			return ledger.Record{}, tx.missing(seq)
		}
		return ledger.Record{}, fmt.Errorf("event %d: %w", seq, ErrNotFound)
	}
	return ledger.DecodeRecord(raw)
}

// Scan calls fn for each event with seq in [begin, end), in order. It stops
// at the first error and returns it.
func (tx *Tx) Scan(begin, end uint64, fn func(ledger.Record) error) error {
	var dec ledger.EventDecoder
	return tx.ScanRaw(begin, end, func(seq uint64, raw []byte) error {
		r, err := dec.DecodeRecord(raw)
		if err != nil {
			return fmt.Errorf("event %d: %w", seq, err)
		}
		return fn(r)
	})
}

// Root is the RFC 9162 root of the first size events.
func (tx *Tx) Root(size uint64) (ledger.Hash, error) {
	if err := tx.checkSize(size); err != nil {
		return ledger.Hash{}, err
	}
	return ledger.Root(size, tx.Node)
}

// RangeRoot is the RFC 9162 root of the events with seq in [begin, end),
// as if they were a log of their own.
func (tx *Tx) RangeRoot(begin, end uint64) (ledger.Hash, error) {
	if begin < 1 || end < begin {
		return ledger.Hash{}, fmt.Errorf("range [%d, %d): want 1 <= begin <= end", begin, end)
	}
	if err := tx.checkSize(end - 1); err != nil {
		return ledger.Hash{}, err
	}
	return ledger.RangeRoot(begin-1, end-1, tx.Node)
}

// InclusionProof proves the event at seq is in the log of the first size
// events (leaf index seq-1).
func (tx *Tx) InclusionProof(seq, size uint64) ([]ledger.Hash, error) {
	if seq < 1 || seq > size {
		return nil, fmt.Errorf("inclusion of seq %d in size %d: want 1 <= seq <= size", seq, size)
	}
	if err := tx.checkSize(size); err != nil {
		return nil, err
	}
	return ledger.InclusionProof(seq-1, size, tx.Node)
}

// ConsistencyProof proves the log of size newSize extends the log of size
// oldSize.
func (tx *Tx) ConsistencyProof(oldSize, newSize uint64) ([]ledger.Hash, error) {
	if oldSize < 1 || oldSize > newSize {
		return nil, fmt.Errorf("consistency %d → %d: want 1 <= old <= new", oldSize, newSize)
	}
	if err := tx.checkSize(newSize); err != nil {
		return nil, err
	}
	return ledger.ConsistencyProof(oldSize, newSize, tx.Node)
}

func (tx *Tx) checkSize(size uint64) error {
	if size > tx.head.Seq {
		return fmt.Errorf("size %d beyond head %d: %w", size, tx.head.Seq, ErrNotFound)
	}
	return nil
}

// Space is a named key/value area in the ledger file for state derived from
// the log (projections). It commits with the events of the same
// transaction. Keys iterate in byte order.
type Space struct {
	b    *bolt.Bucket
	name string
	// get is the cursor Get seeks with, made on its first call: bbolt's
	// own Get makes a cursor, and grows its stack, for every call.
	get *bolt.Cursor
}

// Space returns the named space, creating it in a writable transaction. In a
// read transaction a missing space is returned empty.
func (tx *Tx) Space(name string) (*Space, error) {
	if sp := tx.live[name]; sp != nil {
		return sp, nil
	}
	parent := tx.btx.Bucket(bucketSpaces)
	if parent == nil && tx.btx.Writable() {
		var err error
		if parent, err = tx.btx.CreateBucket(bucketSpaces); err != nil {
			return nil, fmt.Errorf("space %s: %w", name, err)
		}
	}
	var b *bolt.Bucket
	if parent != nil {
		b = parent.Bucket([]byte(name))
	}
	if b == nil && tx.btx.Writable() {
		var err error
		if b, err = parent.CreateBucket([]byte(name)); err != nil {
			return nil, fmt.Errorf("space %s: %w", name, err)
		}
	}
	if len(tx.spaceBlock) == cap(tx.spaceBlock) {
		tx.spaceBlock = make([]Space, 0, 8)
	}
	tx.spaceBlock = append(tx.spaceBlock, Space{b: b, name: name})
	sp := &tx.spaceBlock[len(tx.spaceBlock)-1]
	if tx.live == nil {
		tx.live = make(map[string]*Space)
	}
	tx.live[name] = sp
	return sp, nil
}

// AppendOnly tells the store the space's keys only ever grow (or that this
// transaction writes its keys in key order), so its pages are packed full
// rather than split half-empty. A no-op when reading.
func (s *Space) AppendOnly() {
	if s.b != nil && s.b.Writable() {
		s.b.FillPercent = 1
	}
}

// Dense tells the store the transaction writes keys in the middle of the
// space (an index's), so its pages are split 90% full rather than half
// empty. Not full: bbolt splits a page that overflows by a key or two
// leaving its last three keys to a new page, so a tree split full at each
// insert in the middle sheds pages of three keys, its branches most (pages
// of 3 to 5 children beside one of 135). A no-op when reading.
func (s *Space) Dense() {
	if s.b != nil && s.b.Writable() {
		s.b.FillPercent = 0.9
	}
}

// Get returns the value at key, nil if absent. Valid during the transaction.
func (s *Space) Get(key []byte) []byte {
	if s.b == nil {
		return nil
	}
	if s.get == nil {
		c := s.b.Cursor()
		s.get = c
	}
	// Seek searches from the bucket's root, through the nodes written in
	// this transaction, whatever the cursor saw before; it gives a nested
	// bucket's key with a nil value, as Get gives nil for it.
	k, v := s.get.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// Put stores value at key.
func (s *Space) Put(key, value []byte) error { return s.b.Put(key, value) }

// Delete removes key.
func (s *Space) Delete(key []byte) error { return s.b.Delete(key) }

// Scan calls fn for each key with the prefix, in order (reverse order if
// reverse), until fn returns false or an error.
func (s *Space) Scan(prefix []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	if s.b == nil {
		return nil
	}
	c := s.b.Cursor()
	var k, v []byte
	if !reverse {
		k, v = c.Seek(prefix)
	} else {
		// Position after the last key with the prefix, then step back.
		end := prefixEnd(prefix)
		if end == nil {
			k, v = c.Last()
		} else if k, _ = c.Seek(end); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	}
	var prev []byte
	for n := 1; k != nil && bytes.HasPrefix(k, prefix); n++ {
		if err := inOrder(prev, k, reverse); err != nil {
			return err
		}
		if err := s.notBucket(k, v); err != nil {
			return err
		}
		if n%releaseEvery == 0 {
			releaseMapped(s.b.Tx())
		}
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
		prev = k
		if reverse {
			k, v = c.Prev()
		} else {
			k, v = c.Next()
		}
	}
	return nil
}

// notBucket is ErrDamaged if the key k a cursor gave with the value v is
// a bucket (bbolt gives a bucket's key a nil value): a space holds none,
// and a walk that took it for a key with an empty value would pass a
// damaged file (verify's comparison of the projections did).
func (s *Space) notBucket(k, v []byte) error {
	if v == nil && s.b.Bucket(k) != nil {
		return fmt.Errorf("%w: space %q holds a bucket (key %x): spaces hold none", ErrDamaged, s.name, k)
	}
	return nil
}

// prefixEnd is the smallest key greater than every key with the prefix, or
// nil if there is none.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// seqOf decodes a key of the events bucket or of a Merkle level; ok is
// false for a missing key or one that is not 8 bytes (a damaged file).
func seqOf(k []byte) (uint64, bool) {
	if len(k) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(k), true
}

// keyIs reports whether k is the key of seq (or index) n.
func keyIs(k []byte, n uint64) bool {
	s, ok := seqOf(k)
	return ok && s == n
}

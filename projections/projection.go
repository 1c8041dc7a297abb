package projections

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cespare/xxhash/v2"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// Version is the layout version of the projection spaces. A ledger whose
// stored version differs is rebuilt from its log; bump it whenever the
// fold or the stored shapes change.
//
//	1: the first release
//	2: task.created payload v2 (project_sequence), read through its upcaster
//	3: a thought's text (content, tests, blockers, metadata) is read from
//	   its event, not copied into the projection
//	4: the tokens space (token.issued, token.revoked)
//	5: findings, learnings and memory, and the full-text index of thoughts,
//	   findings, learnings and memory (package search)
//	6: the full-text index keeps no text (it reads it from the events) and
//	   packs each term's postings into delta-coded blocks; a thought is
//	   kept as the seq of its event alone
//	7: denser full-text index: term and id keys led by their length (so
//	   numbered ids and numbers insert in key order), postings coded
//	   against the posting before (doc and seq gaps, tf and kind in one
//	   byte, the project only when it changes)
//	8: the index folds knowledge events in lumps of indexLump (knowledge.go)
//	9: the full-text index keeps no id entry for a thought (thoughts are
//	   never removed by id; a thought id recorded twice is taken out by
//	   the seq of the earlier one); task_thoughts keys are the task and
//	   chain position as short numbers, its values uvarints; the thoughts
//	   space maps a short thought number to the uvarint seq
//	10: the full-text index keeps a document's kind, project, length and
//	   seq once, in a table of its own, not in each of its postings (doc
//	   gap and tf); an id entry holds the doc number alone; the thoughts
//	   space keeps the seqs of 64 thought numbers under one key
//	11: task_thoughts keeps the thought numbers of 64 chain positions of
//	   a task under one key, in the thoughts space's block layout
//	12: task_events keeps a task's updates alone: its task.created is
//	   the task's created_seq, so a task_create writes no key there
//	13: the full-text index's terms and the live learnings' shingles fold
//	   case as Unicode does (domain.FoldCase), not as strings.ToLower:
//	   "ΟΔΌΣ" finds "οδός" (final sigma), "5ΜS" finds "5µs"
//	14: case folding (domain.FoldCase) first composes the text (NFKC): a
//	   word typed with a combining accent, a ligature or full-width
//	   letters is the same term as the one composed; and a combining mark
//	   no longer ends a word, in the index or in the learnings' shingles
//	15: a task's record keeps no count of its thoughts (Task.Thoughts is
//	   counted from task_thoughts where it is shown: CountThoughts), so a
//	   thought_record does not rewrite its task
//	16: the full-text index cuts a run of text written without spaces
//	   (Han, kana, Hangul) into its characters and their overlapping
//	   pairs, not one term for the whole run: 数据库 is found in a sentence
//	17: such a character is cut where NFKC would not cut it (ｶﾞ is one
//	   character, ガ; a Hangul syllable written as its jamo is one), and
//	   a learning's shingles count a mark of such a script once (Words)
//	18: Thai, Lao, Khmer and Myanmar are such scripts too
//	19: case folding (domain.FoldCase) is Unicode's full folding, not only
//	   the simple one: "Straße" and "STRASSE" are one term, and one word
//	   in the learnings' shingles
//	20: folding leaves out the optional marks of Arabic and Hebrew (vowel
//	   points, cantillation, the tatweel): "مَرْحَبًا" is the term "مرحبا"
//	21: a task's record is positional, not a map keyed by field names, and
//	   holds neither its id (its key's number) nor, until the task is
//	   first updated, its updated_at, updated_by and seq (taskrecord.go)
//	22: the full-text index's document table keeps 64 documents a block,
//	   not 256, so its pages are packed as it is written (search/doctable.go)
//	23: the task index, the tasks by project, status, priority, assignee
//	   and label, a key per block of 64 in the tasks space, which a
//	   filtered task_list reads (taskindex.go)
//	24: open_sessions holds each open session's id, task and scope, so an
//	   event is offered only to the sessions it may concern (session.go)
const Version = 24

// spaces lists every space a projection owns, so rebuilds drop them all.
var spaces = []string{spMeta, spTasks, spTaskEvents, spChildren, spProjects, spThoughts, spTaskThoughts, spSessionThoughts, spSessions, spSessionLeaves, spOpenSessions, spSkills, spTokens,
	spFindings, spLearnings, spLiveLearnings, spMemories, spMemoryKeys, spKnowledge}

const (
	spMeta = "meta"

	keyVersion = "version"
	keyApplied = "applied"
)

// ErrVersionChanged: the stored projections are not of this binary's
// version — another logbook version rebuilt them while this one ran (the
// process must restart, and rebuild, or be upgraded, before it folds
// again), or a rebuild that did not finish dropped them (no version:
// ErrNoProjections too; they are folded again from the log).
var ErrVersionChanged = errors.New("projections are of another version")

// ErrNoProjections: the file holds no complete projections (none built
// yet, or a rebuild that did not finish dropped them); Current returns it
// with ErrVersionChanged.
var ErrNoProjections = errors.New("the file holds no complete projections")

// ErrNewerVersion: the file's projections were written by a newer binary.
var ErrNewerVersion = errors.New("projections are newer than this binary")

// State reports the stored projection version and the last folded seq.
func State(tx *boltstore.Tx) (version, applied uint64, err error) {
	meta, err := tx.Space(spMeta)
	if err != nil {
		return 0, 0, err
	}
	return getU64(meta, keyVersion), getU64(meta, keyApplied), nil
}

// NeedsRebuild reports whether the stored projections were built by another
// projection version (or never built). ErrNewerVersion if they are newer.
func NeedsRebuild(tx *boltstore.Tx) (bool, error) {
	v, _, err := State(tx)
	if err != nil {
		return false, err
	}
	if v > Version {
		return false, fmt.Errorf("%w: stored version %d, binary version %d", ErrNewerVersion, v, Version)
	}
	return v != Version, nil
}

// Reset marks the projections in tx empty at this binary's version: the
// next CatchUp folds the log from seq 1. tx's spaces must be empty: a
// rebuild resets a fresh scratch file, and swaps its projections in once
// they have caught up (Rebuild), so nobody sees a half-built projection.
func Reset(tx *boltstore.Tx) error {
	meta, err := tx.Space(spMeta)
	if err != nil {
		return err
	}
	if applied := getU64(meta, keyApplied); applied != 0 {
		return fmt.Errorf("reset projections: they hold state up to seq %d", applied)
	}
	return errors.Join(putU64(meta, keyVersion, Version), putU64(meta, keyApplied, 0))
}

// Current checks that tx's projections are this binary's: ErrVersionChanged
// if another version built them (and ErrNewerVersion too if a newer one
// did), or if there are none (and ErrNoProjections too: none built yet, or
// a rebuild that did not finish dropped them and left at most part of a
// set). Whatever reads them — CatchUp before it folds, the views and the
// console before they show anything — checks it first: a part of a set
// reads as a smaller ledger.
func Current(tx *boltstore.Tx) error {
	version, _, err := State(tx)
	switch {
	case err != nil:
		return err
	case version == Version:
		return nil
	case version == 0:
		return fmt.Errorf("%w: %w (none built yet, or a rebuild that did not finish dropped them)", ErrVersionChanged, ErrNoProjections)
	case version > Version:
		return fmt.Errorf("%w (%w): stored version %d, this binary's %d", ErrVersionChanged, ErrNewerVersion, version, Version)
	}
	// Another binary rebuilt them: folding or reading them with this
	// binary's rules would mix two versions in one state.
	return fmt.Errorf("%w: stored version %d, this binary's %d", ErrVersionChanged, version, Version)
}

// foldedPastHead is ErrDamaged if the projections were folded from events
// past the log's head, applied: the log held them and no longer does (cut
// short, its head moved back). Folding on would fold other events under
// their seqs; a rebuild would refold the shorter log and wipe out the one
// trace of what it lost; so neither is done.
func foldedPastHead(tx *boltstore.Tx, applied uint64) error {
	if head := tx.Head().Seq; applied > head {
		return fmt.Errorf("%w: the projections were folded from the log up to seq %d, but the log ends at seq %d: "+
			"events it held are gone (logbook verify says which), or the projections' counter was damaged; nothing was folded or rebuilt "+
			"(logbook rebuild --past-head refolds the log as it is, wiping this trace)", boltstore.ErrDamaged, applied, head)
	}
	return nil
}

// CheckFolded is ErrDamaged if the projections tx holds were folded past
// its log's head (foldedPastHead): a rebuild, a catch-up or a snapshot's
// refold of such a log would wipe the trace of its cut.
func CheckFolded(tx *boltstore.Tx) error {
	_, applied, err := State(tx)
	if err != nil {
		return err
	}
	return foldedPastHead(tx, applied)
}

func init() { boltstore.Refold = refoldIngested }

// refoldIngested folds the events a Store ingested onto head from
// (boltstore.Refold) — and any before them the projections had not folded
// yet, as every call's catch-up would —, where the projections are of this
// version and complete; otherwise they are left as they are, for a
// rebuild.
func refoldIngested(tx *boltstore.Tx, from uint64) error {
	if Current(tx) != nil {
		return nil
	}
	if _, applied, err := State(tx); err != nil || applied > from {
		return nil
	}
	_, err := CatchUp(tx, 0)
	return err
}

// CatchUp folds the events after the last applied one, at most limit of
// them (0: all), and returns how many it folded.
func CatchUp(tx *boltstore.Tx, limit uint64) (uint64, error) {
	if err := Current(tx); err != nil {
		return 0, err
	}
	_, applied, err := State(tx)
	if err != nil {
		return 0, err
	}
	if err := foldedPastHead(tx, applied); err != nil {
		return 0, err
	}
	end := tx.Head().Seq + 1
	if limit > 0 && applied+1+limit < end {
		end = applied + 1 + limit
	}
	if applied+1 >= end { // the usual case: nothing to fold, no folder to make
		return 0, nil
	}
	// What is folded must be the log as its hashes say: each event links
	// to the one before it (the last applied first), and the head's is the
	// recorded head's hash.
	var link ledger.Hash
	if applied > 0 {
		r, err := tx.Event(applied)
		if err != nil {
			return 0, err
		}
		link = r.Hash
	}
	head := tx.Head()
	f := newFolder(tx, nil, nil, true)
	var n uint64
	fold := func(r ledger.Record) error {
		if err := checkLink(r, link, head); err != nil {
			return err
		}
		link = r.Hash
		n++
		return f.apply(r)
	}
	if end-applied > 2*decodeBatch {
		err = scanDecoded(tx, applied+1, end, func(p *Prepared) error {
			f.prePrev, f.pre = f.pre, p
			for _, r := range p.Recs {
				if err := fold(r); err != nil {
					return err
				}
			}
			return nil
		})
	} else {
		err = tx.Scan(applied+1, end, fold)
	}
	if err == nil {
		err = f.flush()
	}
	if err != nil {
		return n, err
	}
	if n > 0 {
		meta, err := tx.Space(spMeta)
		if err != nil {
			return n, err
		}
		return n, putU64(meta, keyApplied, applied+n)
	}
	return 0, nil
}

// Apply folds one record just appended in this transaction. Records must be
// applied in seq order with none skipped.
func Apply(tx *boltstore.Tx, r ledger.Record) error {
	meta, err := tx.Space(spMeta)
	if err != nil {
		return err
	}
	if applied := getU64(meta, keyApplied); applied+1 != r.Seq {
		if err := foldedPastHead(tx, applied); err != nil {
			return fmt.Errorf("apply seq %d: %w", r.Seq, err)
		}
		return fmt.Errorf("apply seq %d: projections are at seq %d", r.Seq, applied)
	}
	f := newFolder(tx, nil, nil, false)
	if err := f.apply(r); err != nil {
		return err
	}
	if err := f.flush(); err != nil {
		return err
	}
	return putU64(meta, keyApplied, r.Seq)
}

// Fold folds recs, events of another ledger's log, into the projections in
// tx: a verifier refolds a log into a scratch file this way, to compare the
// result with the projections stored beside that log. As with Apply,
// records must come in seq order with none skipped, starting after the
// state's applied seq (1 after Reset); tx's own log plays no part. root
// returns the RFC 9162 root of the records' log of the given size; it is
// asked only by the folds that record a ledger root. event returns an
// earlier event of that log by seq: the full-text index keeps no text, so
// it reads a document it takes out (a superseded learning, a replaced
// memory version) from its event.
func Fold(tx *boltstore.Tx, recs []ledger.Record, root func(size uint64) (ledger.Hash, error), event func(seq uint64) (ledger.Record, error)) error {
	var rf Refold
	return rf.Fold(tx, &Prepared{Recs: recs}, root, event)
}

// A Refold folds a log, chunk after chunk, into projections that nothing
// else writes (a verifier's scratch file), with what Prepare worked out of
// each chunk ahead: each chunk starts from the tasks the one before it
// left, decoded as it wrote them, rather than decoding them again (a chunk
// touches the same few hundred recent tasks as the one before), and from
// the blocks of task_thoughts and thoughts it wrote, as it wrote them,
// rather than reading them again. It keeps the tasks and blocks of one
// chunk. The zero value is ready; after an error, or a transaction that
// did not commit, Reset it.
type Refold struct {
	carried carried
	// Between Add and Flush: the folder of the transaction under way, and
	// the seq it folded up to.
	f       *folder
	applied uint64
}

// carried is what a Refold's chunk hands the next: its tasks, and its
// blocks by space then key, as it stored them.
type carried struct {
	tasks  map[uint64]*Task
	blocks map[string]map[string]*bufferedBlock
}

// Fold folds p.Recs, with what Prepare worked out of them, and writes
// them out: Add, then Flush.
func (rf *Refold) Fold(tx *boltstore.Tx, p *Prepared, root func(size uint64) (ledger.Hash, error), event func(seq uint64) (ledger.Record, error)) error {
	if err := rf.Add(tx, p, root, event); err != nil {
		return err
	}
	return rf.Flush()
}

// Add folds p.Recs, with what Prepare worked out of them, after the chunks
// added since the last Flush, which must have been added in tx too; Flush
// writes them out before tx commits. A transaction that folds several
// chunks writes what they changed once (a task they all touch is encoded
// and put once, not once a chunk), as CatchUp does. root and event serve
// p's records (the chunks before them were folded with theirs).
func (rf *Refold) Add(tx *boltstore.Tx, p *Prepared, root func(size uint64) (ledger.Hash, error), event func(seq uint64) (ledger.Record, error)) error {
	f := rf.f
	switch {
	case f == nil:
		meta, err := tx.Space(spMeta)
		if err != nil {
			return err
		}
		f = newFolder(tx, root, event, true)
		f.carried, f.carriedBlocks = rf.carried.tasks, rf.carried.blocks
		rf.f, rf.carried, rf.applied = f, carried{}, getU64(meta, keyApplied)
	case f.tx != tx:
		return errors.New("refold: a chunk added in another transaction than the chunks before it, not flushed")
	}
	f.root, f.event = root, event
	f.prePrev, f.pre = f.pre, p
	for _, r := range p.Recs {
		var err error
		if rf.applied+1 != r.Seq {
			err = fmt.Errorf("fold seq %d: projections are at seq %d", r.Seq, rf.applied)
		} else {
			err = f.apply(r)
		}
		if err != nil {
			rf.f = nil // (tx is not to commit: nothing to carry)
			return err
		}
		rf.applied = r.Seq
	}
	return nil
}

// Flush writes out what the chunks added since the last Flush changed, in
// key order, and the seq they were folded up to.
func (rf *Refold) Flush() error {
	f := rf.f
	if f == nil {
		return nil
	}
	rf.f = nil
	if err := f.flush(); err != nil {
		return err
	}
	meta, err := f.tx.Space(spMeta)
	if err != nil {
		return err
	}
	if err := putU64(meta, keyApplied, rf.applied); err != nil {
		return err
	}
	rf.carried = carried{tasks: f.tasks, blocks: map[string]map[string]*bufferedBlock{}}
	for space, bb := range f.blockBufs {
		rf.carried.blocks[space] = bb.written
	}
	return nil
}

// Reset forgets what is carried, and what was added since the last
// Flush: the next chunk reads the projections as stored.
func (rf *Refold) Reset() { *rf = Refold{} }

// apply dispatches on the event type, then offers the record to every open
// audit session (after the type's own fold, so a session's start event is
// its first leaf and its finalization is not a leaf).
func (f *folder) apply(r ledger.Record) error {
	if f.first == 0 {
		f.first = r.Seq
	}
	var err error
	switch r.Type {
	case events.TypeTaskCreated:
		err = applyTaskCreated(f, r)
	case events.TypeTaskUpdated:
		err = applyTaskUpdated(f, r)
	case events.TypeThoughtRecorded:
		err = applyThoughtRecorded(f, r)
	case events.TypeSessionStarted:
		err = applySessionStarted(f, r)
	case events.TypeSessionFinalized:
		err = applySessionFinalized(f, r)
	case events.TypeSkillsLoaded:
		err = applySkillsLoaded(f.tx, r)
	case events.TypeTokenIssued:
		err = applyTokenIssued(f.tx, r)
	case events.TypeTokenRevoked:
		err = applyTokenRevoked(f.tx, r)
	case events.TypeFindingRecorded:
		err = applyFindingRecorded(f, r)
	case events.TypeLearningRecorded:
		err = applyLearningRecorded(f, r)
	case events.TypeLearningSuperseded:
		err = applyLearningSuperseded(f, r)
	case events.TypeMemoryWritten:
		err = applyMemoryWritten(f, r)
	case TypeToolCalled:
		// Only sessions fold calls (below).
	default:
		// Unknown types are kept in the log and skipped here, so a newer
		// writer's events never stop an older reader.
	}
	if err == nil && isKnowledge(r.Type) {
		err = f.noteKnowledge(r)
	}
	if err != nil {
		return fmt.Errorf("fold seq %d (%s v%d): %w", r.Seq, r.Type, r.Version, err)
	}
	return offerToSessions(f, r)
}

// Fingerprint hashes every projection space (names, keys and values) with
// xxhash: two states with equal fingerprints hold the same data. The
// applied seq is included, so compare states folded to the same seq.
func Fingerprint(tx *boltstore.Tx) (uint64, error) {
	f := newFingerprint()
	for _, name := range spaces {
		sp, err := tx.Space(name)
		if err != nil {
			return 0, err
		}
		f.write([]byte(name))
		err = sp.Scan(nil, false, func(k, v []byte) (bool, error) {
			f.write(k)
			f.write(v)
			return true, nil
		})
		if err != nil {
			return 0, err
		}
	}
	return f.d.Sum64(), nil
}

// fingerprint is Fingerprint's hash, fed the names of the spaces and their
// keys and values in order, each after its length.
type fingerprint struct {
	d      *xxhash.Digest
	lenBuf [8]byte
}

func newFingerprint() *fingerprint { return &fingerprint{d: xxhash.New()} }

func (f *fingerprint) write(b []byte) {
	binary.BigEndian.PutUint64(f.lenBuf[:], uint64(len(b)))
	f.d.Write(f.lenBuf[:])
	f.d.Write(b)
}

// decode reads a payload into v through the type's upcasters: a payload of
// an older version is decoded as that version and converted.
func decode(r ledger.Record, v any) error {
	if err := unmarshal(r.Payload, v); err != nil {
		return err
	}
	return events.Upcast(r.Type, r.Version, r.Subjects, v)
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func key2(a, b uint64) []byte { return append(u64(a), u64(b)...) }

// short appends v to key as its length in bytes then its big-endian bytes
// without leading zeros (0 is one zero byte): numbers in key order, as
// u64's are, in 2 to 4 bytes for the usual ones rather than 8.
func short(key []byte, v uint64) []byte {
	n := max(1, (bits.Len64(v)+7)/8)
	key = append(key, byte(n))
	for i := n - 1; i >= 0; i-- {
		key = append(key, byte(v>>(8*i)))
	}
	return key
}

// readShort reads a number short wrote at the start of b, and the rest of
// b; ok false if b does not start with one.
func readShort(b []byte) (v uint64, rest []byte, ok bool) {
	if len(b) == 0 || b[0] < 1 || b[0] > 8 || len(b) < 1+int(b[0]) {
		return 0, b, false
	}
	for _, c := range b[1 : 1+b[0]] {
		v = v<<8 | uint64(c)
	}
	return v, b[1+b[0]:], true
}

func getU64(sp *boltstore.Space, key string) uint64 {
	v := sp.Get([]byte(key))
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// putU64 writes v at key, the two in one allocation (bbolt keeps both until
// the commit): a call writes a few.
func putU64(sp *boltstore.Space, key string, v uint64) error {
	b := binary.BigEndian.AppendUint64(append(make([]byte, 0, len(key)+8), key...), v)
	return sp.Put(b[:len(key):len(key)], b[len(key):])
}

// putU64Changed is putU64 unless key already holds v: a lump's counters
// are written back at every flush that changed either, and a put bbolt is
// given costs a cursor and a copy of the key even when it stores what was
// there.
func putU64Changed(sp *boltstore.Space, key string, v uint64) error {
	if old := sp.Get([]byte(key)); len(old) == 8 && binary.BigEndian.Uint64(old) == v {
		return nil
	}
	return putU64(sp, key, v)
}

// nextNumber is the number the next id of the counter key will get.
func nextNumber(tx *boltstore.Tx, key string) (uint64, error) {
	meta, err := tx.Space(spMeta)
	if err != nil {
		return 0, err
	}
	return getU64(meta, key) + 1, nil
}

// spaceOf is a space and the number of id, an id of prefix; a nil space
// for an id that is not one.
func spaceOf(tx *boltstore.Tx, space, prefix, id string) (*boltstore.Space, uint64, error) {
	n, valid := domain.ParseID(prefix, id)
	if !valid {
		return nil, 0, nil
	}
	sp, err := tx.Space(space)
	return sp, n, err
}

// getRecord decodes the msgpack value at key into v; false if absent.
func getRecord(sp *boltstore.Space, key []byte, v any) (bool, error) {
	b := sp.Get(key)
	if b == nil {
		return false, nil
	}
	return true, decodeStored(b, v)
}

// decodeStored decodes a record the fold stored into v. What this binary
// stored always decodes (a projection of another version is never read:
// Current), so one that does not is a damaged file, ErrDamaged, as a key
// of the wrong length is.
func decodeStored(b []byte, v any) error {
	if err := unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: a stored record does not decode: %v", boltstore.ErrDamaged, err)
	}
	return nil
}

func putRecord(sp *boltstore.Space, key []byte, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return sp.Put(key, b)
}

func be64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

package projections

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

// spKnowledge holds the full-text index of the knowledge agents keep
// (package search): thoughts, findings, live learnings and the latest
// version of each memory key. It is folded like every other space, in the
// commit that appends the events, so a rebuild from the log reproduces it
// byte for byte.
const spKnowledge = "knowledge_index"

func knowledgeIndex(tx *boltstore.Tx) (*search.Index, error) {
	sp, err := tx.Space(spKnowledge)
	if err != nil {
		return nil, err
	}
	return search.New(sp, knowledgeDocs(tx.Event, func(taskID string) (string, error) {
		t, ok, err := GetTask(tx, taskID)
		if err == nil && !ok {
			err = fmt.Errorf("task %q missing from projection", taskID)
		}
		return t.Project, err
	})), nil
}

// knowledge is the index the folder writes to: the space itself for a
// record-by-record Apply; for a batch, a write buffer over it, with the
// term entries and stats kept decoded in the batch until flush.
func (f *folder) knowledge() (*search.Index, error) {
	if f.indexBuf == nil {
		sp, err := f.tx.Space(spKnowledge)
		if err != nil {
			return nil, err
		}
		sp.AppendOnly()
		return search.New(sp, knowledgeDocs(f.eventAt, f.taskProject)), nil
	}
	if f.ix != nil && f.ixBuf == f.indexBuf && f.ixBatch == f.indexBatch {
		return f.ix, nil // made once per batch, not once per document
	}
	if f.indexBuf.sp == nil {
		sp, err := f.tx.Space(spKnowledge)
		if err != nil {
			return nil, err
		}
		if f.tasks != nil {
			sp.AppendOnly() // a batch's flush: the keys of many documents, in order
		} else {
			// A live lump's terms land all over the index: packed full,
			// its branch pages were most of them 3 to 5 children (at
			// 20,000 thoughts, 6.3 B/thought of branches, 0.5 in use).
			sp.Dense()
		}
		f.indexBuf.sp = sp
	}
	f.ix, f.ixBuf, f.ixBatch = search.Batched(f.indexBuf, knowledgeDocs(f.eventAt, f.taskProject), f.indexBatch), f.indexBuf, f.indexBatch
	return f.ix, nil
}

// taskProject is the project of a task as the fold sees it (a batch's
// tasks included).
func (f *folder) taskProject(taskID string) (string, error) {
	tn, valid := domain.ParseID(domain.TaskPrefix, taskID)
	t, ok, err := f.task(tn)
	if err == nil && (!ok || !valid) {
		err = fmt.Errorf("task %q missing from projection", taskID)
	}
	if err != nil {
		return "", err
	}
	return t.Project, nil
}

// knowledgeDocs reads the index's documents from their events, which event
// returns by seq: the index keeps no text. taskProject names the project of
// a thought's task.
func knowledgeDocs(event func(seq uint64) (ledger.Record, error), taskProject func(taskID string) (string, error)) search.Docs {
	return func(seq uint64) (search.Doc, error) {
		r, err := event(seq)
		if err != nil {
			return search.Doc{}, err
		}
		return knowledgeDoc(r, taskProject)
	}
}

// knowledgeDoc is the document the event r added to the knowledge index,
// exactly as its fold built it.
func knowledgeDoc(r ledger.Record, taskProject func(taskID string) (string, error)) (search.Doc, error) {
	var err error
	switch r.Type {
	case events.TypeThoughtRecorded:
		var p events.ThoughtRecorded
		if err = decode(r, &p); err == nil {
			var project string
			if project, err = taskProject(p.TaskID); err == nil {
				return thoughtDoc(r, &p, project), nil
			}
		}
	case events.TypeFindingRecorded:
		var p events.FindingRecorded
		if err = decode(r, &p); err == nil {
			return findingDoc(r, &p), nil
		}
	case events.TypeLearningRecorded:
		var p events.LearningRecorded
		if err = decode(r, &p); err == nil {
			return learningDoc(r, &p), nil
		}
	case events.TypeMemoryWritten:
		var p events.MemoryWritten
		if err = decode(r, &p); err == nil {
			return memoryDoc(r, &p), nil
		}
	default:
		err = fmt.Errorf("a %s event indexes no knowledge", r.Type)
	}
	return search.Doc{}, fmt.Errorf("event %d: %w", r.Seq, err)
}

// index adds doc to the full-text index. An id already indexed (a log that
// records it twice, which commands never write) is replaced, as every other
// space keeps the last record of an id.
func (f *folder) index(doc search.Doc) error {
	ix, err := f.knowledge()
	if err != nil {
		return err
	}
	// Add looks the id up before it writes anything: asking Has first
	// would look it up twice for every document.
	if err := ix.Add(doc); !errors.Is(err, search.ErrDuplicate) {
		return err
	}
	if err := ix.Remove(doc.ID); err != nil {
		return err
	}
	return ix.Add(doc)
}

// unindex takes id out of the full-text index: a superseded learning, a
// memory version that a newer one replaced.
func (f *folder) unindex(id string) error {
	ix, err := f.knowledge()
	if err != nil || !ix.Has(id) {
		return err
	}
	return ix.Remove(id)
}

// SearchKnowledge ranks the indexed knowledge against query (BM25 over
// stemmed terms, package search), best first. The knowledge events still
// waiting for the next lump are indexed for the query alone, in memory over
// the stored index, so it finds exactly what a fully folded index would.
func SearchKnowledge(tx *boltstore.Tx, query string, filter search.Filter) ([]search.Hit, error) {
	f := newFolder(tx, nil, nil, false)
	lump, err := f.lumpState()
	if err != nil {
		return nil, err
	}
	if lump.pending == 0 {
		ix, err := knowledgeIndex(tx)
		if err != nil {
			return nil, err
		}
		return ix.Search(query, filter)
	}
	meta, err := tx.Space(spMeta)
	if err != nil {
		return nil, err
	}
	sp, err := tx.Space(spKnowledge)
	if err != nil {
		return nil, err
	}
	// As a batch, each term's entry is decoded and written once.
	f.indexBuf, f.indexBatch = newWriteBuffer(), search.NewBatch()
	f.indexBuf.sp, f.indexBuf.keep = sp, true
	if err := f.indexRange(lump.indexed+1, getU64(meta, keyApplied)); err != nil {
		return nil, err
	}
	if err := f.indexBatch.Flush(f.indexBuf); err != nil {
		return nil, err
	}
	return search.New(f.indexBuf, knowledgeDocs(f.eventAt, f.taskProject)).Search(query, filter)
}

// The index folds knowledge in lumps. Indexing one thought rewrites the
// entries of each of its terms, spread over many pages of the index: in a
// commit of one thought_record that was 12 of its 23 page writes. So the
// knowledge events wait until indexLump of them have been folded into the
// other projections, and are then indexed together (a term's entry is then
// written once for all of them); a search indexes the waiting ones in
// memory for itself (SearchKnowledge). The rule depends only on the log —
// the index holds the knowledge events up to the last lump, keyIndexed
// names the seq it is folded to, keyIndexPending how many wait after it —
// so a live fold, a rebuild and a verifier's refold store the same bytes.
var indexLump uint64 = 16 // a var for the tests (export_test.go)

const (
	keyIndexed      = "indexed"
	keyIndexPending = "index_pending"
)

// lump is a folder's view of the index's lumps (lumpState).
type lump struct {
	indexed, pending uint64
	dirty            bool            // changed since loaded: written back at flush
	recs             []ledger.Record // a batch's knowledge events since the last lump, in order
}

// lumpState loads the lump counters on first use.
func (f *folder) lumpState() (*lump, error) {
	if f.lump != nil {
		return f.lump, nil
	}
	meta, err := f.tx.Space(spMeta)
	if err != nil {
		return nil, err
	}
	f.lump = &lump{indexed: getU64(meta, keyIndexed), pending: getU64(meta, keyIndexPending)}
	return f.lump, nil
}

// isKnowledge reports whether events of type typ change the index.
func isKnowledge(typ string) bool {
	switch typ {
	case events.TypeThoughtRecorded, events.TypeFindingRecorded, events.TypeLearningRecorded,
		events.TypeLearningSuperseded, events.TypeMemoryWritten:
		return true
	}
	return false
}

// noteKnowledge counts r, a knowledge event just folded into the other
// projections, and indexes the lump it completes.
func (f *folder) noteKnowledge(r ledger.Record) error {
	l, err := f.lumpState()
	if err != nil {
		return err
	}
	if f.tasks != nil { // a batch: keep it for its lump, rather than read it again
		l.recs = append(l.recs, r)
	}
	if l.pending, l.dirty = l.pending+1, true; l.pending < indexLump {
		return nil
	}
	if f.indexBuf == nil {
		// One lump is a batch of its own: each term's entry is written once.
		f.indexBuf, f.indexBatch = newWriteBuffer(), search.NewBatch()
		defer func() { f.indexBuf, f.indexBatch = nil, nil }()
		if err := f.indexRange(l.indexed+1, r.Seq); err != nil {
			return err
		}
		if err := f.flushIndex(); err != nil {
			return err
		}
	} else if err := f.indexRange(l.indexed+1, r.Seq); err != nil {
		return err
	}
	l.indexed, l.pending = r.Seq, 0
	clear(l.recs) // (their payloads and subjects are not kept alive)
	l.recs = l.recs[:0]
	return nil
}

// indexRange indexes the knowledge events with seq in [begin, end], in
// order: those a batch kept, the others read from the log — but for the
// events a batch folded itself, whose knowledge events it kept: reading the
// others only to skip them read most of the log again (and a verifier's
// refold reads each event in a read transaction of its own).
func (f *folder) indexRange(begin, end uint64) error {
	// A batch kept its own knowledge events (noteKnowledge): the log is
	// read only before the first event it folded.
	var kept []ledger.Record
	logEnd := end
	if f.tasks != nil && f.first != 0 {
		if f.lump != nil {
			kept = f.lump.recs
		}
		logEnd = min(end, f.first-1)
	}
	for seq := begin; seq <= logEnd; seq++ {
		r, err := f.eventAt(seq)
		if err != nil {
			return fmt.Errorf("index seq %d: %w", seq, err)
		}
		if err := f.indexKnowledge(r); err != nil {
			return err
		}
	}
	for _, r := range kept {
		if r.Seq >= begin && r.Seq <= end {
			if err := f.indexKnowledge(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexKnowledge is indexEvent of r if r is a knowledge event.
func (f *folder) indexKnowledge(r ledger.Record) error {
	if !isKnowledge(r.Type) {
		return nil
	}
	if err := indexEvent(f, r); err != nil {
		return fmt.Errorf("index seq %d (%s v%d): %w", r.Seq, r.Type, r.Version, err)
	}
	return nil
}

// indexEvent makes the index change knowledge event r makes: a thought, a
// finding, a learning and a memory version are indexed; a superseded
// learning and the memory version a newer one replaces leave it (only the
// latest version of a key is searched; either stays in the log).
func indexEvent(f *folder, r ledger.Record) error {
	switch r.Type {
	case events.TypeThoughtRecorded:
		p, err := payloadOf(f, r, decodeForFold)
		if err != nil {
			return err
		}
		if replaced, err := f.replacedThought(p.ThoughtID, r.Seq); err != nil || replaced {
			return err // a later thought of its id is indexed in its place (unindexThought)
		}
		project, err := f.taskProject(p.TaskID)
		if err != nil {
			return err
		}
		if pr := f.prepared(r.Seq); pr != nil && pr.counts != nil {
			// Counted ahead: Add reads the counts, not the texts.
			doc := thoughtDocOf(r, p, project)
			doc.Counts = pr.counts
			return f.index(doc)
		}
		return f.index(thoughtDoc(r, p, project))
	case events.TypeFindingRecorded:
		var p events.FindingRecorded
		if err := decode(r, &p); err != nil {
			return err
		}
		return f.index(findingDoc(r, &p))
	case events.TypeLearningRecorded:
		var p events.LearningRecorded
		if err := decode(r, &p); err != nil {
			return err
		}
		return f.index(learningDoc(r, &p))
	case events.TypeLearningSuperseded:
		var p events.LearningSuperseded
		if err := decode(r, &p); err != nil {
			return err
		}
		return f.unindex(p.LearningID)
	case events.TypeMemoryWritten:
		var p events.MemoryWritten
		if err := decode(r, &p); err != nil {
			return err
		}
		keys, err := f.tx.Space(spMemoryKeys)
		if err != nil {
			return err
		}
		prev, err := replacedMemory(keys, &p)
		if err != nil {
			return err
		}
		if prev != "" {
			if err := f.unindex(prev); err != nil {
				return err
			}
		}
		return f.index(memoryDoc(r, &p))
	}
	return nil
}

func joinLines(lines []string) string {
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	b := make([]byte, 0, n)
	for i, l := range lines {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, l...)
	}
	return string(b)
}

// writeBuffer holds a batch's writes to a space and writes them in key
// order at flush. Why: a rebuild's chunk indexes thousands of documents in
// one transaction, whose postings land all over the (at first empty) index
// space; bbolt inserts each key into its in-memory node by moving the keys
// after it, and a node splits only at commit, so random inserts into a few
// nodes cost quadratic time (memmove was 90% of a rebuild's CPU). In key
// order every insert appends. The bytes written are the same either way.
type writeBuffer struct {
	sp   *boltstore.Space
	over map[string][]byte // nil: deleted in this batch
	slab []byte            // where the values put are copied, many to an allocation
	// keep makes the buffer an overlay that is never written to sp (a
	// search's view of the lump still waiting): Scan merges instead.
	keep bool
}

func newWriteBuffer() *writeBuffer { return &writeBuffer{over: map[string][]byte{}} }

func (w *writeBuffer) Get(key []byte) []byte {
	if v, ok := w.over[string(key)]; ok {
		return v
	}
	return w.sp.Get(key)
}

// slabSize is the largest allocation values are copied into; a value
// larger than a quarter of it gets its own. A buffer's first slab is
// firstSlab, each next one twice the last: a call's lump puts a few KB
// (a 64 KB slab for each was 4 KB of every thought_record's allocations),
// a rebuild's chunk MBs.
const (
	slabSize  = 64 << 10
	firstSlab = 4 << 10
)

func (w *writeBuffer) Put(key, value []byte) error {
	if len(value) > slabSize/4 {
		w.over[string(key)] = append(make([]byte, 0, len(value)), value...)
		return nil
	}
	if w.slab == nil || cap(w.slab)-len(w.slab) < len(value) {
		n := firstSlab
		if w.slab != nil {
			n = min(2*cap(w.slab), slabSize)
		}
		for n < len(value) {
			n *= 2
		}
		w.slab = make([]byte, 0, n)
	}
	n := len(w.slab)
	w.slab = append(w.slab, value...)
	// Never nil, even when empty: nil marks a deletion.
	w.over[string(key)] = w.slab[n:len(w.slab):len(w.slab)]
	return nil
}

func (w *writeBuffer) Delete(key []byte) error {
	w.over[string(key)] = nil
	return nil
}

// Scan writes the buffer out first, so it sees every write; an overlay's
// Scan merges its writes with the space's keys instead.
func (w *writeBuffer) Scan(prefix []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	if w.keep {
		return w.mergedScan(prefix, reverse, fn)
	}
	if err := w.flush(); err != nil {
		return err
	}
	return w.sp.Scan(prefix, reverse, fn)
}

// mergedScan is Scan over the space's keys as the buffer's writes change
// them: a key put in the buffer has its value, a key deleted there is
// skipped, in key order (reversed if reverse).
func (w *writeBuffer) mergedScan(prefix []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	var mine []string
	for k := range w.over {
		if strings.HasPrefix(k, string(prefix)) {
			mine = append(mine, k)
		}
	}
	slices.Sort(mine)
	if reverse {
		slices.Reverse(mine)
	}
	// before reports whether key a comes before b in the scan's order.
	before := func(a string, b []byte) bool {
		if reverse {
			return a > string(b)
		}
		return a < string(b)
	}
	i, stopped := 0, false
	// emit hands fn the buffer's keys that come before next (all if nil).
	emit := func(next []byte) (bool, error) {
		for ; i < len(mine) && (next == nil || before(mine[i], next)); i++ {
			if v := w.over[mine[i]]; v != nil {
				if more, err := fn([]byte(mine[i]), v); err != nil || !more {
					stopped = true
					return false, err
				}
			}
		}
		return true, nil
	}
	err := w.sp.Scan(prefix, reverse, func(k, v []byte) (bool, error) {
		if more, err := emit(k); err != nil || !more {
			return false, err
		}
		if i < len(mine) && mine[i] == string(k) {
			v = w.over[mine[i]]
			if i++; v == nil {
				return true, nil // deleted in the buffer
			}
		}
		more, err := fn(k, v)
		stopped = !more
		return more, err
	})
	if err != nil || stopped {
		return err
	}
	_, err = emit(nil)
	return err
}

func (w *writeBuffer) flush() error {
	if w == nil || len(w.over) == 0 {
		return nil
	}
	if w.keep {
		return errors.New("an overlay is never written to its space")
	}
	for _, k := range slices.Sorted(maps.Keys(w.over)) {
		var err error
		if v := w.over[k]; v == nil {
			err = w.sp.Delete([]byte(k))
		} else {
			err = w.sp.Put([]byte(k), v)
		}
		if err != nil {
			return err
		}
	}
	clear(w.over)
	return nil
}

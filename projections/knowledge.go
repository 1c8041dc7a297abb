package projections

import (
	"errors"
	"fmt"
	"maps"
	"slices"

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
		return search.New(sp, knowledgeDocs(f.event, f.taskProject)), nil
	}
	if f.indexBuf.sp == nil {
		sp, err := f.tx.Space(spKnowledge)
		if err != nil {
			return nil, err
		}
		sp.AppendOnly()
		f.indexBuf.sp = sp
	}
	return search.Batched(f.indexBuf, knowledgeDocs(f.event, f.taskProject), f.indexBatch), nil
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
// stemmed terms, package search), best first.
func SearchKnowledge(tx *boltstore.Tx, query string, filter search.Filter) ([]search.Hit, error) {
	ix, err := knowledgeIndex(tx)
	if err != nil {
		return nil, err
	}
	return ix.Search(query, filter)
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
}

func newWriteBuffer() *writeBuffer { return &writeBuffer{over: map[string][]byte{}} }

func (w *writeBuffer) Get(key []byte) []byte {
	if v, ok := w.over[string(key)]; ok {
		return v
	}
	return w.sp.Get(key)
}

// slabSize is the size of the allocations values are copied into; a value
// larger than a quarter of it gets its own.
const slabSize = 64 << 10

func (w *writeBuffer) Put(key, value []byte) error {
	if len(value) > slabSize/4 {
		w.over[string(key)] = append(make([]byte, 0, len(value)), value...)
		return nil
	}
	if w.slab == nil || cap(w.slab)-len(w.slab) < len(value) {
		w.slab = make([]byte, 0, slabSize)
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

// Scan writes the buffer out first, so it sees every write.
func (w *writeBuffer) Scan(prefix []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	if err := w.flush(); err != nil {
		return err
	}
	return w.sp.Scan(prefix, reverse, fn)
}

func (w *writeBuffer) flush() error {
	if w == nil || len(w.over) == 0 {
		return nil
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

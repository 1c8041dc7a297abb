package projections

import (
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
	return search.New(sp), nil
}

// index adds the knowledge recorded by r to the full-text index, under id.
// An id already indexed (a log that records it twice, which commands never
// write) is replaced, as every other space keeps the last record of an id.
func (f *folder) index(r ledger.Record, id string, kind search.Kind, project string, fields ...search.Field) error {
	ix, err := knowledgeIndex(f.tx)
	if err != nil {
		return err
	}
	if ix.Has(id) {
		if err := ix.Remove(id); err != nil {
			return err
		}
	}
	return ix.Add(search.Doc{ID: id, Kind: kind, Project: project, Author: r.Actor, Seq: r.Seq, Hash: r.Hash, Fields: fields})
}

// unindex takes id out of the full-text index: a superseded learning, a
// memory version that a newer one replaced.
func (f *folder) unindex(id string) error {
	ix, err := knowledgeIndex(f.tx)
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

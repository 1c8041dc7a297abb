package search

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// BM25 parameters: the usual defaults (Robertson & Zaragoza).
const (
	k1 = 1.2
	b  = 0.75
)

// Limits on the number of hits.
const (
	DefaultLimit = 10
	MaxLimit     = 100
)

// Filter narrows a search. The zero Filter searches every kind in every
// project, at the head of the log, for DefaultLimit hits.
type Filter struct {
	Kinds   []Kind // empty: all kinds
	Project string // "": all projects
	AsOfSeq uint64 // 0: no bound; else only documents with Seq <= AsOfSeq
	Limit   int    // 0: DefaultLimit; capped at MaxLimit
}

// Hit is one ranked result. Seq and Hash name the ledger event that recorded
// the document, so the hit can be proven with an inclusion proof.
type Hit struct {
	ID      string
	Kind    Kind
	Project string
	Author  string
	Seq     uint64
	Hash    [32]byte
	Score   float64
	Field   string   // the field the snippet comes from
	Snippet string   // the best-matching window of that field
	Matched []string // the words of the snippet that matched, as written
}

// candidate is a document being scored.
type candidate struct {
	num, seq uint64
	score    float64
}

// better orders candidates: higher score, then newer seq, then earlier added.
func better(a, c candidate) bool {
	if a.score != c.score {
		return a.score > c.score
	}
	if a.seq != c.seq {
		return a.seq > c.seq
	}
	return a.num < c.num
}

// Search returns the documents matching query, best first. A query with no
// searchable terms (only stop words or punctuation) returns no hits.
func (ix *Index) Search(query string, f Filter) ([]Hit, error) {
	terms := Terms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	s, err := ix.stats()
	if err != nil || s.docs == 0 {
		return nil, err
	}
	project, ok, err := ix.lookupProject(f.Project)
	if err != nil || !ok {
		return nil, err
	}
	var kinds [Memory + 1]bool
	for _, k := range f.Kinds {
		if k >= Thought && k <= Memory {
			kinds[k] = true
		}
	}
	avgLen := float64(s.totalLen) / float64(s.docs)
	n := float64(s.docs)
	index := map[uint64]int{}
	var cands []candidate
	for _, t := range terms {
		df, err := ix.df(t)
		if err != nil {
			return nil, err
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		err = ix.sp.Scan(postingPrefix(t), false, func(k, v []byte) (bool, error) {
			p, err := decodePosting(v)
			if err != nil {
				return false, fmt.Errorf("posting of %q: %w", t, err)
			}
			if (len(f.Kinds) > 0 && !kinds[p.kind]) ||
				(f.Project != "" && p.project != project) ||
				(f.AsOfSeq != 0 && p.seq > f.AsOfSeq) {
				return true, nil
			}
			tf := float64(p.tf)
			score := idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(p.length)/avgLen))
			num := binary.BigEndian.Uint64(k[len(k)-8:])
			if i, ok := index[num]; ok {
				cands[i].score += score
			} else {
				index[num] = len(cands)
				cands = append(cands, candidate{num: num, seq: p.seq, score: score})
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	top := topK(cands, limit(f.Limit))
	hits := make([]Hit, 0, len(top))
	for _, c := range top {
		doc, err := decodeDoc(ix.sp.Get(docKey(c.num)))
		if err != nil {
			return nil, fmt.Errorf("hit %d: %w", c.num, err)
		}
		h := Hit{ID: doc.ID, Kind: doc.Kind, Project: doc.Project, Author: doc.Author,
			Seq: doc.Seq, Hash: doc.Hash, Score: c.score}
		h.Field, h.Snippet, h.Matched = snippet(doc.Fields, terms)
		hits = append(hits, h)
	}
	return hits, nil
}

func limit(l int) int {
	if l <= 0 {
		return DefaultLimit
	}
	return min(l, MaxLimit)
}

// lookupProject returns the number of project; ok is false when the project
// has never been indexed (nothing can match). "" means every project.
func (ix *Index) lookupProject(project string) (num uint64, ok bool, err error) {
	if project == "" {
		return 0, true, nil
	}
	v := ix.sp.Get(append([]byte{keyProject}, project...))
	if v == nil {
		return 0, false, nil
	}
	num, _, err = uvarint(v)
	return num, err == nil, err
}

// topK returns the k best candidates in order, keeping a sorted window of k
// so that a common term's many postings cost O(n·log k) rather than a sort.
func topK(cands []candidate, k int) []candidate {
	top := make([]candidate, 0, k+1)
	for _, c := range cands {
		if len(top) == k && !better(c, top[k-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, c, func(a, c candidate) int {
			if better(a, c) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, c)
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// posting is the decoded value of a posting key.
type posting struct {
	tf, length, seq, project uint64
	kind                     Kind
}

func decodePosting(v []byte) (posting, error) {
	var p posting
	var err error
	if p.tf, v, err = uvarint(v); err != nil {
		return p, err
	}
	if p.length, v, err = uvarint(v); err != nil {
		return p, err
	}
	if len(v) == 0 {
		return p, ErrCorrupt
	}
	p.kind, v = Kind(v[0]), v[1:]
	if p.seq, v, err = uvarint(v); err != nil {
		return p, err
	}
	p.project, _, err = uvarint(v)
	return p, err
}

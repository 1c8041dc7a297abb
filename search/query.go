package search

import (
	"cmp"
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
	num, seq, length uint64
	score            float64
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
	// Searched as of a seq, the documents recorded after it do not count
	// in BM25's figures either (the documents, their mean length, each
	// term's document frequency): the same search at the same seq scores
	// the same whatever the log recorded since — but for a document of
	// that time removed since (a learning superseded, a memory's older
	// version), which the index no longer holds.
	var asOf *docsAsOf
	if f.AsOfSeq != 0 {
		if asOf, err = ix.countAsOf(f.AsOfSeq, s); err != nil {
			return nil, err
		}
		if asOf.docs == 0 {
			return nil, nil
		}
		s.docs, s.totalLen = asOf.docs, asOf.totalLen
	}
	avgLen := float64(s.totalLen) / float64(s.docs)
	n := float64(s.docs)
	k := limit(f.Limit)
	qts, err := ix.queryTerms(terms, n, asOf)
	if err != nil {
		return nil, err
	}
	match := func(d docInfo) bool {
		return (len(f.Kinds) == 0 || kinds[d.kind]) &&
			(f.Project == "" || d.project == project) &&
			(f.AsOfSeq == 0 || d.seq <= f.AsOfSeq)
	}
	bm25 := func(idf float64, tf, length uint64) float64 {
		return idf * float64(tf) * (k1 + 1) / (float64(tf) + k1*(1-b+b*float64(length)/avgLen))
	}
	docs := newDocReader(ix, s.nextDoc)
	defer docs.release()
	// slot[doc number] is 1 + the document's index in cands, -1 for a
	// document the filter leaves out (its record is read once): doc numbers
	// are dense, so a slice beats a map by the cost of hashing every posting.
	slot := make([]int32, s.nextDoc)
	var cands []candidate
	for _, qt := range qts {
		// MaxScore: once the terms left cannot lift a document never seen
		// above the k-th partial score, only the candidates need these terms:
		// a block none of them falls in is skipped undecoded.
		closed := len(cands) >= k && qt.rest < topK(cands, k)[k-1].score
		var bad error
		score := func(base uint64, block []byte) error {
			err := eachPosting(base, block, func(num, tf uint64) bool {
				if num >= uint64(len(slot)) {
					bad = fmt.Errorf("doc %d: %w", num, ErrCorrupt)
					return false
				}
				if c := slot[num]; c > 0 { // matched the filter when first seen
					cands[c-1].score += bm25(qt.idf, tf, cands[c-1].length)
					return true
				} else if closed || c < 0 {
					return true
				}
				d, err := docs.get(num)
				switch {
				case err != nil:
					bad = err
					return false
				case match(d):
					cands = append(cands, candidate{num: num, seq: d.seq, length: d.length, score: bm25(qt.idf, tf, d.length)})
					slot[num] = int32(len(cands))
				default:
					slot[num] = -1
				}
				return true
			})
			if err == nil {
				err = bad
			}
			return err
		}
		var nums []uint64 // the candidates' doc numbers, in order
		if closed {
			for _, c := range cands {
				nums = append(nums, c.num)
			}
			slices.Sort(nums)
		}
		// holds reports whether a candidate falls in [lo, hi).
		holds := func(lo, hi uint64) bool {
			i, _ := slices.BinarySearch(nums, lo)
			return i < len(nums) && nums[i] < hi
		}
		// A block's postings lie below the next block's base: a block is
		// decoded once the next one's base says whether it holds a candidate.
		var pending []byte
		var pendBase uint64
		visit := func(base uint64, block []byte) error {
			if !closed {
				return score(base, block)
			}
			var err error
			if pending != nil && holds(pendBase, base) {
				err = score(pendBase, pending)
			}
			pending, pendBase = append(pending[:0], block...), base
			return err
		}
		err = ix.sp.Scan(postingPrefix(qt.term), false, func(key, block []byte) (bool, error) {
			base, err := keyBase(key)
			if err == nil {
				err = visit(base, block)
			}
			return err == nil, err
		})
		if err == nil && qt.open != nil {
			err = visit(qt.base, qt.open)
		}
		if err == nil && pending != nil && holds(pendBase, math.MaxUint64) {
			err = score(pendBase, pending)
		}
		if err != nil {
			return nil, fmt.Errorf("postings of %q: %w", qt.term, err)
		}
	}
	top := topK(cands, k)
	hits := make([]Hit, 0, len(top))
	for _, c := range top {
		doc, err := ix.doc(c.seq, "")
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

// queryTerm is a query term present in the index, with its idf, document
// frequency, and rest: the most that it and the terms after it can add to a
// document's score (BM25's tf factor stays below k1+1).
type queryTerm struct {
	term string
	termEntry
	idf, rest float64
}

// queryTerms returns the terms that occur in the index, rarest (highest
// bound) first, so that the common terms come last and can be skipped;
// with asOf, their document frequencies as of its seq.
func (ix *Index) queryTerms(terms []string, n float64, asOf *docsAsOf) ([]queryTerm, error) {
	var qts []queryTerm
	for _, t := range terms {
		e, err := ix.term(t)
		if err != nil {
			return nil, err
		}
		if asOf != nil && asOf.later && e.df > 0 {
			if e.df, err = ix.dfAsOf(t, e, asOf); err != nil {
				return nil, fmt.Errorf("postings of %q: %w", t, err)
			}
		}
		if df := float64(e.df); df > 0 {
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			qts = append(qts, queryTerm{term: t, termEntry: e, idf: idf})
		}
	}
	slices.SortStableFunc(qts, func(a, c queryTerm) int { return cmp.Compare(a.df, c.df) })
	rest := 0.0
	for i := len(qts) - 1; i >= 0; i-- {
		rest += qts[i].idf * (k1 + 1)
		qts[i].rest = rest
	}
	return qts, nil
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

// docsAsOf is what BM25 counts of the documents recorded at a seq or
// before: how many the index holds, their total length, and whether it
// holds any recorded later (if not, every figure is the index's own).
// Documents are numbered in log order (the fold indexes the knowledge
// events in order), so those recorded after seq are the numbers from
// bound on: counting them, at the end of the table and of each term's
// postings, costs what was recorded since, not the whole index.
type docsAsOf struct {
	seq            uint64
	docs, totalLen uint64
	bound          uint64 // the first document number recorded after seq
	later          bool
}

// countAsOf takes the documents the index holds that were recorded after
// seq off s's figures, reading the document table back from its end.
func (ix *Index) countAsOf(seq uint64, s stats) (*docsAsOf, error) {
	a := &docsAsOf{seq: seq, docs: s.docs, totalLen: s.totalLen, bound: s.nextDoc}
	for b := s.nextDoc>>docBlockBits + 1; b > 0; b-- {
		reached := false // a document recorded at seq or before: the ones before it are too
		err := eachDoc(ix.docBlockBytes(b-1), func(i int, d docInfo) {
			if d.seq <= seq {
				reached = true
				return
			}
			a.bound = min(a.bound, (b-1)<<docBlockBits+uint64(i))
			if !d.removed {
				a.later = true
				a.docs--
				a.totalLen -= d.length
			}
		})
		if err != nil {
			return nil, fmt.Errorf("documents %d…: %w", (b-1)<<docBlockBits, err)
		}
		if a.docs > s.docs || a.totalLen > s.totalLen {
			return nil, fmt.Errorf("documents after seq %d: more than the index holds: %w", seq, ErrCorrupt)
		}
		if reached {
			break
		}
	}
	return a, nil
}

// dfAsOf is the number of documents holding term (whose entry is e) that
// were recorded at a.seq or before: e's, less its postings from a.bound
// on, read back from the last.
func (ix *Index) dfAsOf(term string, e termEntry, a *docsAsOf) (uint64, error) {
	var later uint64
	count := func(base uint64, block []byte) error {
		return eachPosting(base, block, func(num, _ uint64) bool {
			if num >= a.bound {
				later++
			}
			return true
		})
	}
	var err error
	if e.open != nil {
		err = count(e.base, e.open)
	}
	if err == nil && (e.open == nil || e.base >= a.bound) {
		err = ix.sp.Scan(postingPrefix(term), true, func(key, block []byte) (bool, error) {
			base, err := keyBase(key)
			if err == nil {
				err = count(base, block)
			}
			return err == nil && base >= a.bound, err
		})
	}
	if err == nil && later > e.df {
		err = fmt.Errorf("%d postings after seq %d, of %d: %w", later, a.seq, e.df, ErrCorrupt)
	}
	return e.df - later, err
}

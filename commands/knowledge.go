package commands

import (
	"cmp"
	"encoding/hex"
	"fmt"

	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/search"
)

// SearchKnowledgeInput is knowledge_search's arguments.
type SearchKnowledgeInput struct {
	Query        string   `json:"query"`
	Kinds        []string `json:"kinds"`
	Project      string   `json:"project"`
	CrossProject bool     `json:"cross_project"`
	Limit        *int     `json:"limit"`
	AsOfSeq      *uint64  `json:"as_of_seq"`
}

// KnowledgeHit is one ranked result: what it is, who recorded it, and the
// seq and hash of the event that did, so it can be proven included.
type KnowledgeHit struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	Project string   `json:"project,omitempty"`
	Field   string   `json:"field"`
	Snippet string   `json:"snippet"`
	Matched []string `json:"matched"`
	Author  string   `json:"author"`
	Seq     uint64   `json:"seq"`
	Hash    string   `json:"hash"`
	Score   float64  `json:"score"`
}

// SearchKnowledgeResult is knowledge_search's answer.
type SearchKnowledgeResult struct {
	Query   string         `json:"query"`
	Project string         `json:"project,omitempty"` // the project searched; absent: every project
	Count   int            `json:"count"`
	Hits    []KnowledgeHit `json:"hits"`
	AsOfSeq uint64         `json:"as_of_seq"`
}

// SearchKnowledge ranks thoughts, findings, live learnings and the latest
// version of each memory key against the query (BM25 over stemmed terms).
// The project searched is project, else the server's --project, else every
// project; cross_project searches every project instead of the server's
// --project, and is refused beside a project (the request would ask for
// one project and for all). A project searched must have a task, as
// everything indexed under a project needs one: an unknown project is
// ERR_PROJECT_NOT_FOUND, not an empty answer that looks like no match.
func (s *Service) SearchKnowledge(tx *Tx, in SearchKnowledgeInput) (*SearchKnowledgeResult, error) {
	limit, err := pageLimit(in.Limit, search.DefaultLimit, search.MaxLimit)
	if err != nil {
		return nil, err
	}
	if in.CrossProject && in.Project != "" {
		return nil, Invalid("cross_project", "searches every project, and project %q one: give one of them", in.Project)
	}
	filter := search.Filter{Limit: limit}
	if !in.CrossProject {
		filter.Project = cmp.Or(in.Project, s.opts.Project)
	}
	for i, k := range in.Kinds {
		kind, err := search.ParseKind(k)
		if err != nil {
			return nil, Invalid(indexPath("kinds", i), "must be one of: thought, finding, learning, memory")
		}
		filter.Kinds = append(filter.Kinds, kind)
	}
	res := &SearchKnowledgeResult{Query: in.Query, Project: filter.Project, Hits: []KnowledgeHit{}, AsOfSeq: tx.lt.Head().Seq}
	if in.AsOfSeq != nil && *in.AsOfSeq > res.AsOfSeq {
		return nil, Invalid("as_of_seq", "is beyond the ledger head %d", res.AsOfSeq)
	}
	if filter.Project != "" {
		if err := requireProject(tx, filter.Project); err != nil {
			return nil, err
		}
	}
	if in.AsOfSeq != nil {
		res.AsOfSeq = *in.AsOfSeq
		if res.AsOfSeq == 0 {
			return res, nil // nothing was recorded as of seq 0
		}
		filter.AsOfSeq = res.AsOfSeq
	}
	hits, err := projections.SearchKnowledge(tx.lt, in.Query, filter)
	if err != nil {
		return nil, err
	}
	for _, h := range hits {
		res.Hits = append(res.Hits, KnowledgeHit{ID: h.ID, Kind: h.Kind.String(), Project: h.Project, Field: h.Field,
			Snippet: h.Snippet, Matched: nonNil(h.Matched), Author: h.Author, Seq: h.Seq, Hash: hex.EncodeToString(h.Hash[:]),
			Score: h.Score})
	}
	res.Count = len(res.Hits)
	return res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func indexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

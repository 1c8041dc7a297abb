package commands

import (
	"cmp"
	"math"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// MemoryVersion is one version of a memory key, as the memory tools answer
// it: the projection's record.
type MemoryVersion = projections.Memory

// namespace binds a scope to its owner: scope "project" to the project
// argument, else the server's --project (which must name a project with
// tasks); scope "agent" to the calling actor, so an agent reads and writes
// only its own; scope "global" to nobody.
func (s *Service) namespace(tx *Tx, scope, project string) (projections.Namespace, error) {
	switch scope {
	case "project":
		project = cmp.Or(project, s.opts.Project)
		if project == "" {
			return projections.Namespace{}, Invalid("project", `is required with scope "project" (the server has no --project)`)
		}
		if err := requireProject(tx, project); err != nil {
			return projections.Namespace{}, err
		}
		return projections.Namespace{Scope: scope, Owner: project}, nil
	case "agent":
		return projections.Namespace{Scope: scope, Owner: tx.actor}, nil
	}
	return projections.Namespace{Scope: scope}, nil
}

// WriteMemoryInput is memory_write's arguments.
type WriteMemoryInput struct {
	Key     string `json:"key"`
	Scope   string `json:"scope"`
	Project string `json:"project"`
	Content string `json:"content"`
}

// WriteMemory appends memory.written: the next version of the key in its
// namespace. Earlier versions stay readable (memory_history, as_of_seq).
func (s *Service) WriteMemory(tx *Tx, in WriteMemoryInput) (*MemoryVersion, error) {
	ns, err := s.namespace(tx, in.Scope, in.Project)
	if err != nil {
		return nil, err
	}
	last, _, err := projections.LatestMemory(tx.lt, in.Key, ns, math.MaxUint64)
	if err != nil {
		return nil, err
	}
	id, err := projections.NextMemoryID(tx.lt)
	if err != nil {
		return nil, err
	}
	p := events.MemoryWritten{MemoryID: id, Key: in.Key, Scope: in.Scope, Version: last.Version + 1, Content: in.Content}
	switch in.Scope {
	case "project":
		p.Project = ns.Owner
	case "agent":
		p.Agent = ns.Owner
	}
	rec, err := tx.emit(events.TypeMemoryWritten, []string{id}, p)
	if err != nil {
		return nil, err
	}
	m := projections.MemoryOf(rec, p)
	return &m, nil
}

// ReadMemoryInput is memory_read's arguments.
type ReadMemoryInput struct {
	Key     string  `json:"key"`
	Scope   string  `json:"scope"`
	Project string  `json:"project"`
	AsOfSeq *uint64 `json:"as_of_seq"`
}

// ReadMemoryResult is memory_read's answer: Memory is nil when the key had
// no version at AsOfSeq.
type ReadMemoryResult struct {
	Key     string         `json:"key"`
	Scope   string         `json:"scope"`
	Owner   string         `json:"owner,omitempty"` // the project or agent of the namespace
	Found   bool           `json:"found"`
	Memory  *MemoryVersion `json:"memory"`
	AsOfSeq uint64         `json:"as_of_seq"`
}

// ReadMemory reads the latest version of a key, or with as_of_seq the
// version current right after that seq. A key never written is found false,
// not an error.
func (s *Service) ReadMemory(tx *Tx, in ReadMemoryInput) (*ReadMemoryResult, error) {
	ns, err := s.namespace(tx, in.Scope, in.Project)
	if err != nil {
		return nil, err
	}
	asOf := tx.lt.Head().Seq
	if in.AsOfSeq != nil {
		if *in.AsOfSeq > asOf {
			return nil, Invalid("as_of_seq", "is beyond the ledger head %d", asOf)
		}
		asOf = *in.AsOfSeq
	}
	m, ok, err := projections.LatestMemory(tx.lt, in.Key, ns, asOf)
	if err != nil {
		return nil, err
	}
	res := &ReadMemoryResult{Key: in.Key, Scope: in.Scope, Owner: ns.Owner, Found: ok, AsOfSeq: asOf}
	if ok {
		v := m
		res.Memory = &v
	}
	return res, nil
}

// MemoryHistoryInput is memory_history's arguments.
type MemoryHistoryInput struct {
	Key     string `json:"key"`
	Scope   string `json:"scope"`
	Project string `json:"project"`
	Limit   *int   `json:"limit"`
}

// MemoryHistoryResult is memory_history's answer.
type MemoryHistoryResult struct {
	Key          string          `json:"key"`
	VersionCount int             `json:"version_count"` // all that match, before limit
	Versions     []MemoryVersion `json:"versions"`
}

// MemoryHistory lists the versions of a key in ledger order, each with who
// wrote it and its seq. Without scope it lists every namespace of the key,
// other agents' included: the ledger hides nothing from its readers. A
// project must have a task, as for memory_read: one without has no memory.
func (s *Service) MemoryHistory(tx *Tx, in MemoryHistoryInput) (*MemoryHistoryResult, error) {
	limit, err := pageLimit(in.Limit, 100, 500)
	if err != nil {
		return nil, err
	}
	switch {
	case in.Scope == "project":
		// The project's namespace, as memory_read and memory_write name
		// it: the argument, else the server's --project.
		ns, err := s.namespace(tx, in.Scope, in.Project)
		if err != nil {
			return nil, err
		}
		in.Project = ns.Owner
	case in.Project != "":
		if err := requireProject(tx, in.Project); err != nil {
			return nil, err
		}
	}
	keep := func(ns projections.Namespace) bool {
		switch {
		case in.Scope == "agent":
			return ns.Scope == "agent" && ns.Owner == tx.actor
		case in.Scope != "" && ns.Scope != in.Scope:
			return false
		case in.Project != "":
			return ns.Scope == "project" && ns.Owner == in.Project
		}
		return true
	}
	res := &MemoryHistoryResult{Key: in.Key, Versions: []MemoryVersion{}}
	err = projections.MemoryVersions(tx.lt, in.Key, keep, func(m projections.Memory) bool {
		res.VersionCount++
		if len(res.Versions) < limit {
			res.Versions = append(res.Versions, m)
		}
		return true
	})
	return res, err
}

package commands

import (
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// RecordFindingInput is finding_record's arguments.
type RecordFindingInput struct {
	TaskID   string   `json:"task_id"`
	Category string   `json:"category"`
	Summary  string   `json:"summary"`
	Details  string   `json:"details"`
	Files    []string `json:"files"`
}

// RecordFindingResult is finding_record's answer.
type RecordFindingResult struct {
	FindingID  string   `json:"finding_id"`
	TaskID     string   `json:"task_id"`
	Project    string   `json:"project"`
	Category   string   `json:"category"`
	Files      []string `json:"files"`
	Hash       string   `json:"hash"`
	RecordedAt string   `json:"recorded_at"`
	RecordedBy string   `json:"recorded_by"`
	Seq        uint64   `json:"seq"`
}

// RecordFinding appends finding.recorded on an existing task (closed tasks
// take findings too, as they take thoughts). Findings are never edited: a
// correction is a new finding. Its files are written in the one spelling
// of each path, duplicates removed.
func (s *Service) RecordFinding(tx *Tx, in RecordFindingInput) (*RecordFindingResult, error) {
	t, err := getTask(tx, in.TaskID)
	if err != nil {
		return nil, err
	}
	id, err := projections.NextFindingID(tx.lt)
	if err != nil {
		return nil, err
	}
	// A path is kept in its one spelling (domain.CleanRepoPath), so that
	// "a\\b" and "./a/b" are not a second file beside "a/b".
	files := make([]string, len(in.Files))
	for i, f := range in.Files {
		files[i] = domain.CleanRepoPath(f)
	}
	files = dedupe(files)
	p := events.FindingRecorded{FindingID: id, TaskID: t.ID, Project: t.Project, Category: in.Category,
		Summary: in.Summary, Details: in.Details, Files: files}
	rec, err := tx.emit(events.TypeFindingRecorded, []string{id, t.ID}, p)
	if err != nil {
		return nil, err
	}
	return &RecordFindingResult{FindingID: id, TaskID: t.ID, Project: t.Project, Category: in.Category,
		Files: files, Hash: rec.Hash.String(), RecordedAt: projections.FormatTime(rec.Time),
		RecordedBy: rec.Actor, Seq: rec.Seq}, nil
}

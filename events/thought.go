package events

import (
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
)

// TypeThoughtRecorded is the event of thought_record.
const TypeThoughtRecorded = "thought.recorded"

// ThoughtRecorded is the payload of thought.recorded. PreviousHash and
// ChainPosition are written into the event so the per-task chain is itself
// committed to by the log. Payload version 2 is the array of its fields
// (PayloadFields) with PreviousHash as 32 bytes (ledger.Digest); version 1
// was a map with PreviousHash in hex, read as before. Version 3 is version
// 2's array with thought_id and task_id empty and no session_id: they are
// the event's subjects (ThoughtID, TaskID[, SessionID]), which hold them
// already (FromSubjects).
type ThoughtRecorded struct {
	ThoughtID     string        `json:"thought_id"`
	TaskID        string        `json:"task_id"`
	Type          string        `json:"type"`
	Content       string        `json:"content"`
	SessionID     string        `json:"session_id,omitempty"`
	Branch        string        `json:"branch,omitempty"`
	CommitSHA     string        `json:"commit_sha,omitempty"`
	TestsRun      []string      `json:"tests_run,omitempty"`
	Blockers      []string      `json:"blockers,omitempty"`
	Metadata      string        `json:"metadata,omitempty"` // compact JSON object
	PreviousHash  ledger.Digest `json:"previous_hash,omitempty"`
	ChainPosition uint64        `json:"chain_position"`
}

// ThoughtTypeCodes are the codes thought.recorded v3 stores a thought's
// type as (ledger.Field.Codes): ThoughtTypeCodes[code] is the type; 0 is
// not a code. Append-only, each addition with a new payload version; a type
// without a code is stored as its name.
var ThoughtTypeCodes = [...]string{1: "plan", 2: "analysis", 3: "decision", 4: "reflection", 5: "discovery", 6: "risk", 7: "blockers"}

// PayloadFields are thought.recorded's fields in their order in a version
// 2 payload's array (ledger.Positional): the ones every thought has first,
// then the optional ones, most used first, so a plain thought's array ends
// early.
func (p *ThoughtRecorded) PayloadFields() []ledger.Field {
	return []ledger.Field{
		{Name: "thought_id", Ptr: &p.ThoughtID},
		{Name: "task_id", Ptr: &p.TaskID},
		{Name: "type", Ptr: &p.Type, Codes: ThoughtTypeCodes[:]},
		{Name: "content", Ptr: &p.Content},
		{Name: "chain_position", Ptr: &p.ChainPosition},
		{Name: "previous_hash", Ptr: &p.PreviousHash, Optional: true},
		{Name: "session_id", Ptr: &p.SessionID, Optional: true},
		{Name: "branch", Ptr: &p.Branch, Optional: true},
		{Name: "commit_sha", Ptr: &p.CommitSHA, Optional: true},
		{Name: "tests_run", Ptr: &p.TestsRun, Optional: true},
		{Name: "blockers", Ptr: &p.Blockers, Optional: true},
		{Name: "metadata", Ptr: &p.Metadata, Optional: true},
	}
}

// SubjectIDs returns p as version 3 stores it: without the ids the event's
// subjects hold (ThoughtID, TaskID, and SessionID if any, in that order).
func (p ThoughtRecorded) SubjectIDs() ThoughtRecorded {
	p.ThoughtID, p.TaskID, p.SessionID = "", "", ""
	return p
}

// FromSubjects sets the ids a version 3 payload leaves to the event's
// subjects: ThoughtID, TaskID and, with a third subject, SessionID. A
// version 3 payload that stores an id, or subjects that are not two or
// three non-empty ids, is an error. Older versions store their ids.
func (p *ThoughtRecorded) FromSubjects(version uint16, subjects []string) error {
	if version < 3 {
		return nil
	}
	if p.ThoughtID != "" || p.TaskID != "" || p.SessionID != "" {
		return fmt.Errorf("thought.recorded v%d stores an id its subjects hold", version)
	}
	if len(subjects) < 2 || len(subjects) > 3 || subjects[0] == "" || subjects[1] == "" || len(subjects) == 3 && subjects[2] == "" {
		return fmt.Errorf("thought.recorded v%d: subjects %q are not thought, task[, session]", version, subjects)
	}
	p.ThoughtID, p.TaskID = subjects[0], subjects[1]
	if len(subjects) == 3 {
		p.SessionID = subjects[2]
	}
	return nil
}

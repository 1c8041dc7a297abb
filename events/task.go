package events

import "fmt"

// Task event types.
const (
	TypeTaskCreated = "task.created"
	TypeTaskUpdated = "task.updated"
)

// TaskCreated is the payload of task.created, version 2.
//
// Version 1 named the task's number within its project "sequence", which
// reads like the envelope's seq (the event's position in the ledger) to
// anyone replaying the log. Version 2 calls it "project_sequence". Version 1
// payloads stay in the ledger as written and are upcast when read.
type TaskCreated struct {
	TaskID        string   `json:"task_id"`
	Project       string   `json:"project"`
	Sequence      uint64   `json:"project_sequence"` // the task's number within its project, from 1
	Title         string   `json:"title"`
	Description   string   `json:"description"`
	ParentID      string   `json:"parent_id,omitempty"`
	Priority      string   `json:"priority"`
	Labels        []string `json:"labels"`
	Assignee      string   `json:"assignee"`
	EstimateHours *float64 `json:"estimate_hours,omitempty"`

	// V1Sequence is version 1's "sequence": set only while a version 1
	// payload is decoded, and moved to Sequence by Upcast.
	V1Sequence uint64 `json:"sequence,omitempty"`
}

// Upcast converts a payload decoded from an older version to this one. A
// newer version is taken as is: versions only ever add fields, which this
// reader ignores.
func (p *TaskCreated) Upcast(from uint16) error {
	switch {
	case from == 1:
		p.Sequence, p.V1Sequence = p.V1Sequence, 0
	case from == 0:
		return fmt.Errorf("task.created payload version 0")
	}
	return nil
}

// TaskUpdated is the payload of task.updated: the fields that changed, with
// their new values. BlockedReason "" clears it.
type TaskUpdated struct {
	TaskID         string    `json:"task_id"`
	Status         *string   `json:"status,omitempty"`
	PreviousStatus *string   `json:"previous_status,omitempty"`
	Progress       *int      `json:"progress,omitempty"`
	Title          *string   `json:"title,omitempty"`
	Description    *string   `json:"description,omitempty"`
	Priority       *string   `json:"priority,omitempty"`
	Assignee       *string   `json:"assignee,omitempty"`
	Labels         *[]string `json:"labels,omitempty"`
	BlockedReason  *string   `json:"blocked_reason,omitempty"`
}

package events

// TypeFindingRecorded is the event of finding_record.
const TypeFindingRecorded = "finding.recorded"

// FindingRecorded is the payload of finding.recorded. Project is the task's
// project when the finding was recorded, written into the event so a
// reader needs no other event to place it.
type FindingRecorded struct {
	FindingID string   `json:"finding_id"`
	TaskID    string   `json:"task_id"`
	Project   string   `json:"project"`
	Category  string   `json:"category"`
	Summary   string   `json:"summary"`
	Details   string   `json:"details,omitempty"`
	Files     []string `json:"files,omitempty"`
}

package events

// Learning event types.
const (
	TypeLearningRecorded   = "learning.recorded"
	TypeLearningSuperseded = "learning.superseded"
)

// LearningRecorded is the payload of learning.recorded.
type LearningRecorded struct {
	LearningID   string   `json:"learning_id"`
	Project      string   `json:"project"`
	Pattern      string   `json:"pattern"`
	Context      string   `json:"context"`
	Tags         []string `json:"tags,omitempty"`
	SourceTaskID string   `json:"source_task_id,omitempty"`
}

// LearningSuperseded is the payload of learning.superseded: LearningID is
// replaced by By. The superseded learning stays in the log as written.
type LearningSuperseded struct {
	LearningID string `json:"learning_id"`
	By         string `json:"by"`
}

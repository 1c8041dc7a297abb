package events

// TypeMemoryWritten is the event of memory_write.
const TypeMemoryWritten = "memory.written"

// MemoryWritten is the payload of memory.written: version Version of Key in
// its namespace. The namespace is Scope with its owner: Project for scope
// "project", Agent (the writer) for scope "agent", neither for "global".
type MemoryWritten struct {
	MemoryID string `json:"memory_id"`
	Key      string `json:"key"`
	Scope    string `json:"scope"`
	Project  string `json:"project,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Version  uint64 `json:"version"`
	Content  string `json:"content"`
}

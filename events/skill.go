package events

// TypeSkillsLoaded records the skill set a server loaded at start-up, so an
// auditor knows what the agents were shown.
const TypeSkillsLoaded = "skills.loaded"

// SkillsLoaded is the payload of skills.loaded.
type SkillsLoaded struct {
	Skills  []LoadedSkill  `json:"skills"`
	Skipped []SkippedSkill `json:"skipped,omitempty"`
}

// LoadedSkill is one skill as recorded: its name, file and content hash.
type LoadedSkill struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// SkippedSkill is a candidate skill that LoadSkills did not load.
type SkippedSkill struct {
	// Path is relative to the skills directory, like Skill.Path.
	Path string `json:"path"`
	// Reason names the problem. It contains no absolute path.
	Reason string `json:"reason"`
}

// Package skills loads the skills (SKILL.md files with YAML front matter)
// a server offers its agents, once, at start-up: Load reads a folder into an
// immutable Set, skipping and naming the files it cannot use.
//
// Invariants: a Set never changes after Load; no path outside the skills
// folder is read (symbolic links are not followed) and no absolute path
// appears in a skipped file's reason.
package skills

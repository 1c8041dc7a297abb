package skills

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"gopkg.in/yaml.v3"
)

// MaxSize is the largest SKILL.md, in bytes, that Load reads.
// Larger files are skipped, so a stray log or binary cannot bloat start-up
// or the ledger record of what agents were shown.
const MaxSize = 256 << 10

// DefaultVersion is the version of a skill whose front matter has none.
const DefaultVersion = "0.0.0"

// skillFile is the name of the file that makes a folder a skill.
const skillFile = "SKILL.md"

var skillNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Skill is one loaded SKILL.md.
type Skill struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description"`
	// Capabilities is never nil: a skill without any has an empty list.
	Capabilities []string `json:"capabilities"`
	// Path is the SKILL.md path relative to the skills directory,
	// slash-separated ("review/SKILL.md"). It is never absolute, because it
	// is shown to clients.
	Path string `json:"path"`
	// SHA256 is the lowercase hex SHA-256 of the file's bytes exactly as
	// read, recorded in the ledger so an auditor knows what agents were shown.
	SHA256 string `json:"-"`
}

// Set is an immutable set of loaded skills, sorted by name. The zero
// value and a nil *Set are empty sets. It is safe for concurrent use.
type Set struct {
	list []Skill
}

// Load reads every <dir>/<folder>/SKILL.md, one level deep.
//
// A folder without a SKILL.md and a plain file directly in dir are ignored.
// A candidate that cannot be loaded is reported in the returned
// []SkippedSkill (sorted by path) with a reason, and never fails the load:
// malformed front matter, a rule broken (see below), a SKILL.md over
// MaxSize, or a SKILL.md or skill folder that is not a regular
// file/directory. Symbolic links are never followed, so nothing outside dir
// is read.
//
// The file must start with a "---" line (after an optional UTF-8 BOM; CRLF
// line endings are accepted) and its YAML front matter runs to the next
// "---" line. Rules: name is a required string equal to the folder's name
// and matching ^[a-z0-9][a-z0-9-]*$; description is a required, non-empty
// string; version is an optional string (a bare number such as 1.0 is kept
// as written) defaulting to DefaultVersion; capabilities is an optional
// list of non-empty strings. Values of any other YAML type are reported, not
// coerced. Other keys are ignored, so skills written for other tools still
// load.
//
// A missing dir is not an error: it yields an empty set. The error is
// non-nil only when dir exists but cannot be opened or listed; the set and
// skipped list are then nil.
func Load(dir string) (*Set, []events.SkippedSkill, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &Set{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load skills: %w", err)
	}
	defer root.Close()

	d, err := root.Open(".")
	if err != nil {
		return nil, nil, fmt.Errorf("load skills: %w", err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("load skills: read %s: %w", dir, err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })

	var (
		skills  []Skill
		skipped []events.SkippedSkill
	)
	for _, e := range entries {
		folder := e.Name()
		rel := path.Join(folder, skillFile)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			// A link to a file in dir is not a skill candidate; anything
			// else (a folder, a dangling link, a link out of dir) is
			// reported, because someone probably meant it as a skill.
			if fi, err := root.Stat(folder); err == nil && !fi.IsDir() {
				continue
			}
			skipped = append(skipped, events.SkippedSkill{Path: rel, Reason: "skill folder is a symbolic link; links are not followed"})
			continue
		case !e.IsDir():
			continue
		}
		sk, reason, ok := loadSkill(root, folder)
		if !ok {
			continue
		}
		if reason != "" {
			skipped = append(skipped, events.SkippedSkill{Path: rel, Reason: reason})
			continue
		}
		skills = append(skills, sk)
	}
	// Names equal folder names, which are unique, so the order is total.
	slices.SortFunc(skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return &Set{list: skills}, skipped, nil
}

// loadSkill loads <folder>/SKILL.md from root. It returns ok == false when
// the folder has no SKILL.md (not a skill candidate), and a non-empty reason
// when the candidate is skipped.
func loadSkill(root *os.Root, folder string) (sk Skill, reason string, ok bool) {
	name := folder + "/" + skillFile
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return Skill{}, "", false
	}
	if err != nil {
		return Skill{}, "cannot stat " + skillFile + ": " + cause(err), true
	}
	if reason := notRegular(fi); reason != "" {
		return Skill{}, reason, true
	}
	if fi.Size() > MaxSize {
		return Skill{}, tooBig(fi.Size()), true
	}

	f, err := root.Open(name)
	if err != nil {
		return Skill{}, "cannot open " + skillFile + ": " + cause(err), true
	}
	defer f.Close()
	// The file may have been swapped (for a link or another file) between
	// Lstat and Open; make sure we read what we checked.
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return Skill{}, skillFile + " changed while it was being loaded", true
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return Skill{}, "cannot read " + skillFile + ": " + cause(err), true
	}
	if len(data) > MaxSize {
		return Skill{}, tooBig(int64(len(data))), true
	}

	sk, reason = parseSkill(folder, data)
	if reason != "" {
		return Skill{}, reason, true
	}
	sum := sha256.Sum256(data)
	sk.Path = path.Join(folder, skillFile)
	sk.SHA256 = hex.EncodeToString(sum[:])
	return sk, "", true
}

func notRegular(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return ""
	case m&fs.ModeSymlink != 0:
		return skillFile + " is a symbolic link; links are not followed"
	case m.IsDir():
		return skillFile + " is a directory, not a regular file"
	default:
		return skillFile + " is not a regular file"
	}
}

func tooBig(n int64) string {
	return fmt.Sprintf("%s is too big: %d bytes, over the %d-byte limit", skillFile, n, MaxSize)
}

// cause strips the path from a file system error, since reasons are shown
// to clients.
func cause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// frontMatter returns the YAML between the opening "---" line and the next
// "---" line, prefixed with one empty line so that line numbers in YAML
// errors and nodes count from the top of the file, not of the front matter. data has no BOM and only
// "\n" line endings.
func frontMatter(data []byte) ([]byte, string) {
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if !isFence(first) {
		return nil, `no front matter: the first line must be "---"`
	}
	var b bytes.Buffer
	b.WriteByte('\n')
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if isFence(line) {
			return b.Bytes(), ""
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return nil, `front matter is not terminated: no closing "---" line`
}

func isFence(line []byte) bool {
	return string(bytes.TrimRight(line, " \t")) == "---"
}

// parseSkill checks the front matter of the SKILL.md in folder. It returns
// a Skill without Path and SHA256, or a reason.
func parseSkill(folder string, data []byte) (Skill, string) {
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	fm, reason := frontMatter(data)
	if reason != "" {
		return Skill{}, reason
	}

	var doc yaml.Node
	if err := yaml.Unmarshal(fm, &doc); err != nil {
		return Skill{}, "invalid YAML in front matter: " + err.Error()
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return Skill{}, "front matter is empty: name and description are required"
	}
	m := resolve(doc.Content[0])
	if m.Kind != yaml.MappingNode {
		return Skill{}, fmt.Sprintf("front matter must be a YAML mapping, got %s (line %d)", kindName(m), m.Line)
	}

	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := resolve(m.Content[i])
		if k.Kind != yaml.ScalarNode {
			continue // not a key of ours
		}
		if _, dup := fields[k.Value]; dup {
			return Skill{}, fmt.Sprintf("duplicate key %q (line %d)", k.Value, k.Line)
		}
		fields[k.Value] = resolve(m.Content[i+1])
	}

	var sk Skill
	name, set, reason := stringField(fields, "name", false)
	switch {
	case reason != "":
		return Skill{}, reason
	case !set || name == "":
		return Skill{}, `missing required field "name"`
	case !skillNameRE.MatchString(name):
		return Skill{}, fmt.Sprintf("name %q is invalid: it must match %s", name, skillNameRE)
	case name != folder:
		return Skill{}, fmt.Sprintf("name %q does not match its folder name %q", name, folder)
	}
	sk.Name = name

	desc, _, reason := stringField(fields, "description", false)
	if reason != "" {
		return Skill{}, reason
	}
	if sk.Description = strings.TrimSpace(desc); sk.Description == "" {
		return Skill{}, `missing required field "description" (it must be a non-empty string)`
	}
	// What agents are given is held to the rules of what they send: a
	// description is prose, a version and each capability one line.
	if why := domain.Prose.Refuse(sk.Description); why != "" {
		return Skill{}, "description " + why
	}

	version, set, reason := stringField(fields, "version", true)
	switch version = strings.TrimSpace(version); {
	case reason != "":
		return Skill{}, reason
	case !set:
		version = DefaultVersion
	case version == "":
		return Skill{}, "version must not be empty (omit it for " + DefaultVersion + ")"
	}
	if why := domain.Line.Refuse(version); why != "" {
		return Skill{}, "version " + why
	}
	sk.Version = version

	caps, reason := capabilities(fields["capabilities"])
	if reason != "" {
		return Skill{}, reason
	}
	sk.Capabilities = caps
	return sk, ""
}

// stringField returns the string value of key and whether it is set (present
// and not null), or a reason when it has another type. numbers allows bare
// int, float and date scalars, kept as written (for "version: 1.0" or
// "version: 2024-01-01").
func stringField(fields map[string]*yaml.Node, key string, numbers bool) (v string, set bool, reason string) {
	n, ok := fields[key]
	if !ok || isNull(n) {
		return "", false, ""
	}
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!str":
			return n.Value, true, ""
		case "!!int", "!!float", "!!timestamp":
			if numbers {
				return n.Value, true, ""
			}
		}
	}
	return "", true, fmt.Sprintf("%s must be a string, got %s (line %d)", key, kindName(n), n.Line)
}

func capabilities(n *yaml.Node) ([]string, string) {
	caps := []string{}
	if n == nil || isNull(n) {
		return caps, ""
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Sprintf("capabilities must be a list of strings, got %s (line %d)", kindName(n), n.Line)
	}
	seen := make(map[string]bool, len(n.Content))
	for i, c := range n.Content {
		c = resolve(c)
		if c.Kind != yaml.ScalarNode || c.ShortTag() != "!!str" {
			return nil, fmt.Sprintf("capabilities must be a list of strings, but item %d is %s (line %d)", i, kindName(c), c.Line)
		}
		v := strings.TrimSpace(c.Value)
		if v == "" {
			return nil, fmt.Sprintf("capabilities must be a list of strings, but item %d is empty (line %d)", i, c.Line)
		}
		if why := domain.Line.Refuse(v); why != "" {
			return nil, fmt.Sprintf("capabilities: item %d %s (line %d)", i, why, c.Line)
		}
		if !seen[v] { // listed twice, kept once, as labels and tags are
			seen[v] = true
			caps = append(caps, v)
		}
	}
	return caps, ""
}

// resolve follows an alias to its anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// kindName describes a node's YAML type for a reason, e.g. "a list" or
// "a number (!!int)".
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch t := n.ShortTag(); t {
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number (" + t + ")"
		case "!!bool":
			return "a boolean (" + t + ")"
		case "!!null":
			return "null"
		default:
			return "a value tagged " + t
		}
	}
	return "an unsupported YAML node"
}

// NewSet is the set of the skills list (as All returned them, from a Set
// loaded elsewhere: another process's). The set keeps its own copy.
func NewSet(list []Skill) *Set {
	list = slices.Clone(list)
	for i := range list {
		list[i].Capabilities = slices.Clone(list[i].Capabilities)
	}
	slices.SortFunc(list, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return &Set{list: list}
}

// All returns every loaded skill, sorted by name. The caller owns the
// returned slice.
func (s *Set) All() []Skill {
	return s.List("", "")
}

// List returns the skills matching both filters, sorted by name. search
// matches a case-insensitive substring of the name or description;
// capability matches one of the skill's capabilities exactly. An empty
// filter matches every skill. The caller owns the returned slice; it is
// non-nil even when nothing matches.
func (s *Set) List(search, capability string) []Skill {
	out := []Skill{}
	if s == nil {
		return out
	}
	search = domain.FoldCase(search)
	for _, sk := range s.list {
		if search != "" &&
			!strings.Contains(domain.FoldCase(sk.Name), search) &&
			!strings.Contains(domain.FoldCase(sk.Description), search) {
			continue
		}
		if capability != "" && !slices.Contains(sk.Capabilities, capability) {
			continue
		}
		sk.Capabilities = slices.Clone(sk.Capabilities)
		out = append(out, sk)
	}
	return out
}

// Loaded is the record of s for a skills.loaded event.
func (s *Set) Loaded(skipped []events.SkippedSkill) events.SkillsLoaded {
	p := events.SkillsLoaded{Skills: []events.LoadedSkill{}, Skipped: skipped}
	for _, sk := range s.All() {
		p.Skills = append(p.Skills, events.LoadedSkill{Name: sk.Name, Path: sk.Path, SHA256: sk.SHA256})
	}
	return p
}

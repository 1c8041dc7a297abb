package domain

// MemoryScopes are the namespaces of a memory key: the calling agent's own,
// a project's, or the whole ledger's.
var MemoryScopes = []string{"project", "agent", "global"}

// MemoryKeyPattern is the form of a memory key.
const MemoryKeyPattern = `^[a-z0-9][a-z0-9._-]{0,127}$`

func memoryKey(doc string) Rule {
	return str(doc).matches(MemoryKeyPattern, "must be a lowercase slug: a letter or digit, then up to 127 letters, digits, dots, underscores or dashes")
}

func memoryScope(doc string) Rule { return enum(doc, MemoryScopes...) }

const scopeDoc = "project: the project's (the project field, else the server's --project); " +
	"agent: the calling agent's own; global: the ledger's."

// WriteMemory writes a new version of a memory key.
var WriteMemory = Command{
	Name: "memory_write",
	Fields: []Field{
		field("key", memoryKey("Key of the memory, e.g. \"build-commands\".")),
		field("scope", memoryScope("Namespace of the key. "+scopeDoc)),
		field("project", projectSlug("Project of a scope \"project\" key; default: the server's --project. Not allowed with other scopes.")),
		field("content", str("The new content; it replaces the previous version, which stays in the history.").length(1, 10000).text(Prose)),
	},
	Required: []string{"key", "scope", "content"},
	check:    checkMemoryProject,
}

// ReadMemory reads the latest version of a key, or the one current at a seq.
var ReadMemory = Command{
	Name: "memory_read",
	Fields: []Field{
		field("key", memoryKey("Key of the memory.")),
		field("scope", memoryScope("Namespace of the key. "+scopeDoc)),
		field("project", projectSlug("Project of a scope \"project\" key; default: the server's --project. Not allowed with other scopes.")),
		field("as_of_seq", integer("Return the version current right after this ledger sequence (time travel).").atLeast(0)),
	},
	Required: []string{"key", "scope"},
	check:    checkMemoryProject,
}

// MemoryHistory lists the versions of a key.
var MemoryHistory = Command{
	Name: "memory_history",
	Fields: []Field{
		field("key", memoryKey("Key of the memory.")),
		field("scope", memoryScope("Only this namespace (agent: the calling agent's own; project: the project argument's, else the server's --project's, "+
			"else invalid input, as memory_read and memory_write name it); default: every namespace the key is in, other agents' included.")),
		field("project", projectSlug("Only this project's key (scope \"project\"); the project must have a task.")),
		field("limit", integer("Maximum number of versions to return (the first ones in ledger order).").rng(1, 500).byDefault(100)),
	},
	Required: []string{"key"},
	check:    checkMemoryProject,
}

// checkMemoryProject: a project names a scope "project" key only.
func checkMemoryProject(args *Value, add func(path, msg string)) {
	if args.Get("project") == nil {
		return
	}
	if scope := args.Get("scope"); scope != nil && scope.kind == String && scope.text != "project" {
		add("project", `is only allowed with scope "project"`)
	}
}

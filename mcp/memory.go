package mcp

import "github.com/logbook-dev/logbook/commands"

// memoryVersion is the schema of one version of a memory key.
func memoryVersion(description string) *schema {
	return object(description,
		prop("memory_id", str("Id of this version, e.g. \"M-0001\".")),
		prop("key", str("Key of the memory.")),
		prop("scope", str("Namespace of the key: project, agent or global.")),
		prop("project", str("The project of a scope \"project\" key; absent for other scopes.").optional()),
		prop("agent", str("The agent of a scope \"agent\" key; absent for other scopes.").optional()),
		prop("version", integer("Version of the key in its namespace, from 1.")),
		prop("content", str("Content of this version.")),
		prop("hash", str("Hash of the ledger event that wrote this version.")),
		prop("written_at", str("RFC 3339 UTC.")),
		prop("written_by", str("Agent that wrote this version.")),
		prop("seq", integer("Ledger sequence of the event that wrote this version.")),
	)
}

func memoryTools() []*tool {
	return []*tool{
		{
			name:  "memory_write",
			title: "Write a memory",
			description: "Write a new version of a memory key in the project's, the calling agent's own or the global namespace; " +
				"earlier versions stay in the history.",
			cmd: commands.WriteMemory,
			out: memoryVersion("The version written."),
		},
		{
			name:        "memory_read",
			title:       "Read a memory",
			description: "Read the latest version of a memory key, or with as_of_seq the version current right after that ledger sequence.",
			cmd:         commands.ReadMemory,
			out: object("",
				prop("key", str("Key of the memory.")),
				prop("scope", str("Namespace of the key: project, agent or global.")),
				prop("owner", str("The project (scope \"project\") or agent (scope \"agent\") whose namespace was read; absent for scope \"global\".").optional()),
				prop("found", boolean("Whether the key had a version then.")),
				prop("memory", memoryVersion("The version read; null when found is false.").nullable()),
				prop("as_of_seq", integer("The ledger sequence the read is as of (the head when not given).")),
			),
		},
		{
			name:        "memory_history",
			title:       "List a memory's versions",
			description: "List the versions of a memory key in ledger order, each with who wrote it, its hash and its seq.",
			cmd:         commands.MemoryHistory,
			out: object("",
				prop("key", str("Key of the memory.")),
				prop("version_count", integer("Number of versions that match, before limit.")),
				prop("versions", array("The versions, in ledger order (the first limit).", memoryVersion("One version."))),
			),
		},
	}
}

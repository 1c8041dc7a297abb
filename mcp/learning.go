package mcp

import "github.com/logbook-dev/logbook/commands"

func learningTools() []*tool {
	return []*tool{
		{
			name:  "learning_record",
			title: "Record a learning",
			description: "Record a reusable lesson for a project, refused with ERR_DUPLICATE (naming the existing learning) when it " +
				"near-duplicates a live learning of the project: Jaccard similarity of their word pairs at least 0.6.",
			cmd: commands.RecordLearning,
			out: object("",
				prop("learning_id", str("Id of the learning, e.g. \"L-0001\".")),
				prop("project", str("Project of the learning.")),
				prop("tags", array("The tags, duplicates removed.", str("A tag."))),
				prop("supersedes", str("The learning this one replaced, when supersedes was given; absent otherwise.").optional()),
				prop("hash", str("Hash of the ledger event that recorded the learning.")),
				prop("recorded_at", str("RFC 3339 UTC.")),
				prop("recorded_by", str("Agent that recorded the learning.")),
				prop("seq", integer("Ledger sequence of the event that recorded the learning.")),
			),
		},
		{
			name:  "learning_supersede",
			title: "Supersede a learning",
			description: "Mark a live learning as replaced by another live learning of the same project; the old one stays in the " +
				"log as written, no longer counts as a near-duplicate and is no longer found by knowledge_search.",
			cmd: commands.SupersedeLearning,
			out: object("",
				prop("learning_id", str("The learning replaced.")),
				prop("superseded_by", str("The learning that replaces it.")),
				prop("project", str("Project of the learning.")),
				prop("hash", str("Hash of the learning.superseded event.")),
				prop("recorded_at", str("RFC 3339 UTC.")),
				prop("recorded_by", str("Agent that superseded it.")),
				prop("seq", integer("Ledger sequence of the learning.superseded event.")),
			),
		},
	}
}

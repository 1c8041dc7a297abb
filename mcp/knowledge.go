package mcp

import "github.com/logbook-dev/logbook/commands"

func knowledgeTools() []*tool {
	return []*tool{
		{
			name:  "knowledge_search",
			title: "Search knowledge",
			description: "Search thoughts, findings, live learnings and the latest version of each memory key by relevance " +
				"(BM25 over stemmed words), each hit with the seq and hash of the ledger event that recorded it.",
			cmd: commands.SearchKnowledge,
			out: object("",
				prop("query", str("The query as given.")),
				prop("project", str("The project searched; absent when every project was.").optional()),
				prop("count", integer("Number of hits returned.")),
				prop("hits", array("Best first.", object("One hit.",
					prop("id", str("Id of the thought, finding, learning or memory version (Θ-, F-, L-, M-).")),
					prop("kind", str("thought, finding, learning or memory.")),
					prop("project", str("Its project; absent for global and agent memory.").optional()),
					prop("field", str("The field the snippet comes from (content, blockers, summary, details, files, pattern, context, tags, key).")),
					prop("snippet", str("The best-matching window of that field.")),
					prop("matched", array("The words of the snippet that matched, as written.", str("A word."))),
					prop("author", str("Agent that recorded it.")),
					prop("seq", integer("Ledger sequence of the event that recorded it.")),
					prop("hash", str("Hash of that event (its RFC 9162 leaf), for an inclusion proof.")),
					prop("score", number("BM25 score.")),
				))),
				prop("as_of_seq", integer("The ledger sequence the search is as of (the head when not given).")),
			),
		},
	}
}

package domain

// KnowledgeKinds are what knowledge_search searches.
var KnowledgeKinds = []string{"thought", "finding", "learning", "memory"}

// SearchKnowledge is a ranked full-text search over the knowledge agents keep.
var SearchKnowledge = Command{
	Name: "knowledge_search",
	Fields: []Field{
		field("query", str("Words to search for; they are stemmed, so \"failing tests\" finds \"test failed\".").length(1, 1000).text(Line)),
		field("kinds", array("Only these kinds; default: all.", enum("A kind.", KnowledgeKinds...), 4)),
		field("project", projectSlug("Only knowledge of this project, which must have a task; default: the server's --project, else every project.")),
		field("cross_project", boolean("Search every project, the server's --project notwithstanding; not with project.").byDefault(false)),
		field("limit", integer("Maximum number of hits.").rng(1, 100).byDefault(10)),
		field("as_of_seq", integer("Search the knowledge recorded up to this ledger sequence (time travel): what was recorded after it is neither found nor counted in the scores; what was removed since (a superseded learning, a replaced memory version) is not brought back.").atLeast(0)),
	},
	Required: []string{"query"},
}

package domain

// ListSkills lists the loaded skills.
var ListSkills = Command{
	Name: "skill_list",
	Fields: []Field{
		field("search", str("Case-insensitive substring of the skill's name or description.").length(0, 1000).text(Notes)),
		field("capability", str("Exact capability the skill must declare.").length(0, 256).text(Notes)),
	},
}

// Ping and Health take no arguments.
var (
	Ping   = Command{Name: "server_ping"}
	Health = Command{Name: "server_health"}
)

// Commands are every command's rules, in the contract's order.
var Commands = []*Command{
	&CreateTask, &UpdateTask, &GetTask, &ListTasks, &NextActions,
	&RecordThought, &ListThoughts,
	&StartSession, &Finalize, &Root, &VerifyChain,
	&ListSkills,
	&Ping, &Health,
	&RecordFinding, &RecordLearning, &SupersedeLearning,
	&WriteMemory, &ReadMemory, &MemoryHistory,
	&SearchKnowledge,
}

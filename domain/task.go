package domain

import "slices"

// Statuses are a task's states (CONTRACT.md §3), in the order of its life.
var Statuses = []string{"backlog", "todo", "in_progress", "blocked", "review", "done", "cancelled"}

// Priorities, lowest first.
var Priorities = []string{"low", "normal", "high", "critical"}

// transitions is the task state machine: the only status changes allowed.
var transitions = map[string][]string{
	"backlog":     {"todo", "cancelled"},
	"todo":        {"in_progress", "blocked", "cancelled"},
	"in_progress": {"review", "blocked", "cancelled"},
	"blocked":     {"todo", "in_progress", "cancelled"},
	"review":      {"done", "backlog", "blocked", "cancelled"},
	"done":        {},
	"cancelled":   {},
}

// Transitions returns the statuses a task in status from may move to (none
// for a closed or unknown status). The slice is the caller's.
func Transitions(from string) []string { return slices.Clone(transitions[from]) }

// CanTransition reports whether the state machine allows from → to.
func CanTransition(from, to string) bool { return slices.Contains(transitions[from], to) }

// Closed reports whether a task in status takes no more updates.
func Closed(status string) bool { return status == "done" || status == "cancelled" }

// PriorityRank orders priorities, critical first (0); a priority outside
// the vocabulary ranks after low.
func PriorityRank(p string) int {
	i := slices.Index(Priorities, p)
	if i < 0 {
		return len(Priorities)
	}
	return len(Priorities) - 1 - i
}

// SlugPattern is the form of a project name.
const SlugPattern = `^[a-z0-9][a-z0-9-]{0,63}$`

func projectSlug(doc string) Rule {
	return str(doc).matches(SlugPattern, "must be a lowercase slug: a letter or digit, then up to 63 letters, digits or dashes")
}

func taskTitle() Rule {
	return str("Short title of the task, one line, e.g. \"Fix rounding in invoice totals\".").length(1, 256).text(Line)
}

func taskDescription() Rule {
	return str("What the task is for: goal, context, what done means.").length(0, 8000).text(Notes)
}

func labelList(doc string) Rule {
	return array(doc, str("A label.").length(1, 64).text(Line), 20)
}

func assigneeName(doc string) Rule { return str(doc).length(1, 128).text(Line) }

// CreateTask creates a task in backlog.
var CreateTask = Command{
	Name: "task_create",
	Fields: []Field{
		field("title", taskTitle()),
		field("project", projectSlug("Project slug, lowercase letters, digits and dashes, e.g. \"billing-api\".")),
		field("description", taskDescription()),
		field("parent_id", taskID("Make this a sub-task of that task, e.g. \"T-0001\", which must be in the same project; set only at creation.")),
		field("priority", enum("How urgent the task is; task_next_actions puts critical first.", Priorities...).byDefault("normal")),
		field("labels", labelList("Labels; duplicates are removed.")),
		field("assignee", assigneeName("Agent or person who works on the task.").byDefault("unassigned")),
		field("estimate_hours", number("Estimated effort in hours.").rng(0, 1000)),
	},
	Required: []string{"title", "project"},
}

// UpdateTask changes a task; at least one field besides task_id must be given.
var UpdateTask = Command{
	Name: "task_update",
	Fields: []Field{
		field("task_id", taskID("Id of the task to update, e.g. \"T-0001\".")),
		field("status", enum("New status. Allowed moves: backlog→todo|cancelled; todo→in_progress|blocked|cancelled; "+
			"in_progress→review|blocked|cancelled; blocked→todo|in_progress|cancelled; review→done|backlog|blocked|cancelled. "+
			"done needs at least one thought record on the task and sets progress to 100.", Statuses...)),
		field("progress", integer("Progress in percent; status done sets it to 100.").rng(0, 100)),
		field("title", taskTitle()),
		field("description", taskDescription()),
		field("priority", enum("How urgent the task is; task_next_actions puts critical first.", Priorities...)),
		field("assignee", assigneeName("Agent or person who works on the task.")),
		field("labels", labelList("Labels, replacing the current ones; duplicates are removed.")),
		field("blocked_reason", str("Why the task is blocked; required with status \"blocked\", cleared when the task leaves blocked.").length(0, 1000).text(Notes)),
	},
	Required: []string{"task_id"},
	AnyOf:    []string{"status", "progress", "title", "description", "priority", "assignee", "labels", "blocked_reason"},
	check:    checkUpdateTask,
}

// checkUpdateTask: moving to blocked needs a reason that shows something.
func checkUpdateTask(args *Value, add func(path, msg string)) {
	if st := args.Get("status"); st == nil || st.kind != String || st.text != "blocked" {
		return
	}
	switch r := args.Get("blocked_reason"); {
	case r == nil:
		add("blocked_reason", `is required when status is "blocked"`)
	case r.kind == String && IsBlank(r.text):
		add("blocked_reason", `must not be blank when status is "blocked"`)
	}
}

// GetTask reads one task.
var GetTask = Command{
	Name: "task_get",
	Fields: []Field{
		field("task_id", taskID("Id of the task, e.g. \"T-0001\".")),
		field("include_thought_trail", boolean("Also return the task's thought ids in chain order (read them with thought_record_list).").byDefault(false)),
		field("include_dependents", boolean("Also return the ids of the task's sub-tasks.").byDefault(false)),
		field("as_of_seq", integer("Return the task as it stood right after this ledger sequence (time travel); at most the ledger head.").atLeast(0)),
	},
	Required: []string{"task_id"},
}

// ListTasks filters, sorts and pages tasks.
var ListTasks = Command{
	Name: "task_list",
	Fields: []Field{
		field("project", projectSlug("Only tasks of this project.")),
		field("status", array("Only tasks in one of these statuses.", enum("A status.", Statuses...), 0)),
		field("priority", array("Only tasks with one of these priorities.", enum("A priority.", Priorities...), 0)),
		field("assignee", assigneeName("Only tasks assigned to this agent.")),
		field("label", str("Only tasks carrying this label.").length(1, 64).text(Line)),
		field("created_after", Rule{Kind: String, Doc: "Only tasks created after this RFC 3339 time.", DateTime: true}),
		field("created_before", Rule{Kind: String, Doc: "Only tasks created before this RFC 3339 time.", DateTime: true}),
		field("search", str("Words that must all occur in the title or description, whatever their case (Unicode full case folding, the Turkish İ and ı as i) or Arabic and Hebrew vowel points.").length(0, 1000).text(Notes)),
		field("limit", integer("Maximum number of tasks to return.").rng(1, 500).byDefault(50)),
		field("offset", integer("Number of matching tasks to skip.").atLeast(0).byDefault(0)),
		field("sort_by", enum("Sort key: created or updated (ledger order), priority, progress.", "created", "updated", "priority", "progress").byDefault("updated")),
		field("sort_order", enum("Sort direction.", "asc", "desc").byDefault("desc")),
	},
}

// NextActions suggests the todo tasks to work on next.
var NextActions = Command{
	Name: "task_next_actions",
	Fields: []Field{
		field("project", projectSlug("Project to look at; default: the server's --project, else all projects.")),
		field("limit", integer("Maximum number of suggestions.").rng(1, 100).byDefault(20)),
		field("include_blocked", boolean("Also list the blocked tasks with their reasons.").byDefault(false)),
	},
}

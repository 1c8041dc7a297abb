package mcp

import "strings"

// Vocabulary shared by the task tools (CONTRACT.md §3).
var (
	statuses   = []string{"backlog", "todo", "in_progress", "blocked", "review", "done", "cancelled"}
	priorities = []string{"low", "normal", "high", "critical"}
)

const slugPattern = `^[a-z0-9][a-z0-9-]{0,63}$`

// maxIDLength bounds an id argument: far above T-0001's form, far below
// anything that could weigh on the ledger. A well-formed id that names
// nothing is ERR_TASK_NOT_FOUND; an over-long one is invalid input.
const maxIDLength = 32

func taskID(description string) *schema { return str(description).maxLen(maxIDLength) }

func projectSlug(description string) *schema {
	return str(description).matches(slugPattern, "must be a lowercase slug: a letter or digit, then up to 63 letters, digits or dashes")
}

func taskTitle() *schema { return str("Short title of the task.").length(1, 256) }

func taskDescription() *schema {
	return str("Longer description of the task.").maxLen(8000)
}

func labelList(description string) *schema {
	return array(description, str("A label.").length(1, 64)).most(20)
}

func assigneeName(description string) *schema { return str(description).length(1, 128) }

// updateFields are task_update's fields besides task_id, of which at least one
// must be given.
var updateFields = []string{"status", "progress", "title", "description", "priority", "assignee", "labels", "blocked_reason"}

func taskTools() []*tool {
	return []*tool{
		{
			name:        "task_create",
			description: "Create a task in a project (the project exists from its first task on); it starts in backlog and gets the next id T-NNNN.",
			in: object("",
				prop("title", taskTitle()),
				prop("project", projectSlug("Project slug, lowercase letters, digits and dashes, e.g. \"billing-api\".")),
				prop("description", taskDescription()),
				prop("parent_id", taskID("Id of the parent task, which must be in the same project.")),
				prop("priority", enum("Priority of the task.", priorities...).byDefault("normal")),
				prop("labels", labelList("Labels; duplicates are removed.")),
				prop("assignee", assigneeName("Who works on the task.").byDefault("unassigned")),
				prop("estimate_hours", number("Estimated effort in hours.").rng(0, 1000)),
			).require("title", "project"),
			out: object("",
				prop("task_id", str("Id of the new task.")),
				prop("status", str("Always \"backlog\" for a new task.")),
				prop("created_at", str("RFC 3339 UTC time of creation.")),
				prop("created_by", str("Agent that created the task.")),
				prop("sequence", integer("Number of the task within its project, from 1.")),
				prop("seq", integer("Ledger sequence of the event that created the task.")),
			),
		},
		{
			name: "task_update",
			description: "Change a task's status (the state machine is enforced), progress, title, description, priority, assignee, " +
				"labels or blocked reason; done and cancelled tasks are closed to updates.",
			in: func() *schema {
				s := object("",
					prop("task_id", taskID("Id of the task to update, e.g. \"T-0001\".")),
					prop("status", enum("New status. Allowed moves: backlog→todo|cancelled; todo→in_progress|blocked|cancelled; "+
						"in_progress→review|blocked|cancelled; blocked→todo|in_progress|cancelled; review→done|backlog|blocked|cancelled. "+
						"done needs at least one thought record on the task and sets progress to 100.", statuses...)),
					prop("progress", integer("Progress in percent.").rng(0, 100)),
					prop("title", taskTitle()),
					prop("description", taskDescription()),
					prop("priority", enum("Priority of the task.", priorities...)),
					prop("assignee", assigneeName("Who works on the task.")),
					prop("labels", labelList("Labels, replacing the current ones; duplicates are removed.")),
					prop("blocked_reason", str("Why the task is blocked; required with status \"blocked\", cleared when the task leaves blocked.").maxLen(1000)),
				).require("task_id")
				s.minProperties = 2 // task_id and at least one field to change
				return s
			}(),
			check: checkTaskUpdate,
			out: object("",
				prop("task_id", str("Id of the task.")),
				prop("status", str("Status after the update.")),
				prop("progress", integer("Progress after the update.")),
				prop("updated_at", str("RFC 3339 UTC time of the update.")),
				prop("updated_by", str("Agent that made the update.")),
				prop("previous_status", str("Status before the update, present only when it changed.").orNull()),
				prop("warnings", array("Advice about the resulting state, e.g. \"progress is 100 but status is in_progress\".", str("")).orNull()),
				prop("seq", integer("Ledger sequence of the event that last changed the task.")),
			),
		},
		{
			name:        "task_get",
			readOnly:    true,
			description: "Fetch one task by id, optionally with its thought trail and sub-tasks, or as it stood right after an earlier ledger sequence.",
			in: object("",
				prop("task_id", taskID("Id of the task, e.g. \"T-0001\".")),
				prop("include_thought_trail", boolean("Also return the task's thought ids in chain order.").byDefault(false)),
				prop("include_dependents", boolean("Also return the ids of the task's sub-tasks.").byDefault(false)),
				prop("as_of_seq", integer("Return the task as it stood right after this ledger sequence (time travel).").min(0)),
			).require("task_id"),
			out: object("",
				prop("task_id", str("")),
				prop("title", str("")),
				prop("description", str("")),
				prop("project", str("")),
				prop("status", str("")),
				prop("priority", str("")),
				prop("progress", integer("")),
				prop("assignee", str("")),
				prop("labels", array("", str(""))),
				prop("estimate_hours", number("").orNull()),
				prop("created_at", str("RFC 3339 UTC.")),
				prop("updated_at", str("RFC 3339 UTC.")),
				prop("created_by", str("")),
				prop("updated_by", str("")),
				prop("parent_id", str("").orNull()),
				prop("blocked_reason", str("").orNull()),
				prop("sequence", integer("Number of the task within its project.")),
				prop("seq", integer("Ledger sequence of the event that last changed the task.")),
				prop("thought_trail", array("Thought ids in chain order, with include_thought_trail.", str("")).orNull()),
				prop("dependents", array("Ids of sub-tasks, with include_dependents.", str("")).orNull()),
			),
		},
		{
			name:        "task_list",
			readOnly:    true,
			description: "List tasks filtered by project, status, priority, assignee, label, creation time or words in the title or description, with paging and sorting.",
			in: object("",
				prop("project", projectSlug("Only tasks of this project.")),
				prop("status", array("Only tasks in one of these statuses.", enum("", statuses...))),
				prop("priority", array("Only tasks with one of these priorities.", enum("", priorities...))),
				prop("assignee", assigneeName("Only tasks assigned to this agent.")),
				prop("label", str("Only tasks carrying this label.").length(1, 64)),
				prop("created_after", str("Only tasks created after this RFC 3339 time.").dateTime()),
				prop("created_before", str("Only tasks created before this RFC 3339 time.").dateTime()),
				prop("search", str("Case-insensitive words that must all occur in the title or description.").maxLen(1000)),
				prop("limit", integer("Maximum number of tasks to return.").rng(1, 500).byDefault(50)),
				prop("offset", integer("Number of matching tasks to skip.").min(0).byDefault(0)),
				prop("sort_by", enum("Sort key.", "created", "updated", "priority", "progress").byDefault("updated")),
				prop("sort_order", enum("Sort direction.", "asc", "desc").byDefault("desc")),
			),
			out: object("",
				prop("tasks", array("", object("",
					prop("task_id", str("")),
					prop("title", str("")),
					prop("project", str("")),
					prop("status", str("")),
					prop("priority", str("")),
					prop("progress", integer("")),
					prop("assignee", str("")),
					prop("created_at", str("")),
					prop("updated_at", str("")),
				))),
				prop("total_count", integer("Number of tasks that match the filters.")),
				prop("returned_count", integer("Number of tasks in this page.")),
				prop("offset", integer("")),
				prop("limit", integer("")),
			),
		},
		{
			name:        "task_next_actions",
			readOnly:    true,
			description: "Suggest what to work on next: the todo tasks, fewest unfinished sub-tasks first, then by priority (critical first) and age (oldest first).",
			in: object("",
				prop("project", projectSlug("Project to look at; default: the server's --project, else all projects.")),
				prop("limit", integer("Maximum number of suggestions.").rng(1, 100).byDefault(20)),
				prop("include_blocked", boolean("Also list the blocked tasks with their reasons.").byDefault(false)),
			),
			out: object("",
				prop("next_actions", array("", object("",
					prop("task_id", str("")),
					prop("title", str("")),
					prop("priority", str("")),
					prop("assignee", str("")),
					prop("estimate_hours", number("").orNull()),
					prop("parent_id", str("").orNull()),
					prop("dependencies_unmet", integer("Sub-tasks that are neither done nor cancelled.")),
				))),
				prop("count", integer("")),
				prop("project", str("The project looked at; absent or null for all projects.").orNull()),
				prop("blocked", array("Blocked tasks, with include_blocked.", object("",
					prop("task_id", str("")),
					prop("title", str("")),
					prop("blocked_reason", str("").orNull()),
				)).orNull()),
			),
		},
	}
}

// checkTaskUpdate enforces task_update's rules that span fields.
func checkTaskUpdate(args *value, add func(path, msg string)) {
	n := 0
	for _, f := range updateFields {
		if args.get(f) != nil {
			n++
		}
	}
	if n == 0 {
		add("", "at least one of "+strings.Join(updateFields, ", ")+" is required")
	}
	if st := args.get("status"); st != nil && st.kind == kindString && st.str == "blocked" {
		r := args.get("blocked_reason")
		switch {
		case r == nil:
			add("blocked_reason", `is required when status is "blocked"`)
		case r.kind == kindString && strings.TrimSpace(r.str) == "":
			add("blocked_reason", `must not be blank when status is "blocked"`)
		}
	}
}

package mcp

import "github.com/logbook-dev/logbook/commands"

func skillTools() []*tool {
	return []*tool{
		{
			name:        "skill_list",
			description: "List the skills (SKILL.md files) loaded at start-up, filtered by a case-insensitive search of name and description or by an exact capability.",
			cmd:         commands.ListSkills,
			out: object("",
				prop("skills", array("", object("",
					prop("name", str("")),
					prop("version", str("")),
					prop("description", str("")),
					prop("capabilities", array("", str(""))),
					prop("path", str("")),
				))),
				prop("total_count", integer("")),
			),
		},
	}
}

package mcp

import "github.com/logbook-dev/logbook/commands"

func skillTools() []*tool {
	return []*tool{
		{
			name:        "skill_list",
			title:       "List skills",
			description: "List the skills (SKILL.md files) loaded at start-up, filtered by a case-insensitive search of name and description or by an exact capability.",
			cmd:         commands.ListSkills,
			out: object("",
				prop("skills", array("Matching skills, by name.", object("One skill.",
					prop("name", str("Skill name, a slug.")),
					prop("version", str("Version from the front matter; \"0.0.0\" if none.")),
					prop("description", str("What the skill is for.")),
					prop("capabilities", array("Capabilities the skill declares.", str("A capability."))),
					prop("path", str("SKILL.md path relative to the skills directory.")),
				))),
				prop("total_count", integer("Number of skills returned.")),
			),
		},
	}
}

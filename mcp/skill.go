package mcp

func skillTools() []*tool {
	return []*tool{
		{
			name:        "skill_list",
			readOnly:    true,
			description: "List the skills (SKILL.md files) loaded at start-up, filtered by a case-insensitive search of name and description or by an exact capability.",
			in: object("",
				prop("search", str("Case-insensitive substring of the skill's name or description.").maxLen(1000)),
				prop("capability", str("Exact capability the skill must declare.").maxLen(256)),
			),
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

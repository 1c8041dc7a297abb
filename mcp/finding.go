package mcp

import "github.com/logbook-dev/logbook/commands"

func findingTools() []*tool {
	return []*tool{
		{
			name:  "finding_record",
			title: "Record a finding",
			description: "Record a finding made on a task (a test result, code pattern, architecture note, bug, gap or risk) " +
				"as an append-only ledger event that is never edited: a correction is a new finding.",
			cmd: commands.RecordFinding,
			out: object("",
				prop("finding_id", str("Id of the finding, e.g. \"F-0001\".")),
				prop("task_id", str("The task the finding was made on.")),
				prop("project", str("The task's project.")),
				prop("category", str("Kind of finding.")),
				prop("files", array("The files, each in one spelling (segments joined by \"/\", no \".\" segment), duplicates removed.", str("A repository-relative path."))),
				prop("hash", str("Hash of the ledger event that recorded the finding.")),
				prop("recorded_at", str("RFC 3339 UTC.")),
				prop("recorded_by", str("Agent that recorded the finding.")),
				prop("seq", integer("Ledger sequence of the event that recorded the finding.")),
			),
		},
	}
}

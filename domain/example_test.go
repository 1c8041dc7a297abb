package domain_test

import (
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/domain"
)

// The rules refuse, whatever the transport, what the MCP schema refuses:
// here a project name that is not a slug, a priority outside the
// vocabulary and a title that shows nothing.
func ExampleCommand_ValidateJSON() {
	err := domain.CreateTask.ValidateJSON([]byte(`{"title":"\u200b","project":"../../Etc Passwd","priority":"urgent"}`))
	var ie *domain.InvalidInputError
	if errors.As(err, &ie) {
		for _, is := range ie.Issues {
			fmt.Printf("%s: %s\n", is.Path, is.Message)
		}
	}
	fmt.Println(domain.PriorityRank("urgent") > domain.PriorityRank("low"))
	// Output:
	// project: must be a lowercase slug: a letter or digit, then up to 63 letters, digits or dashes
	// priority: must be one of: low, normal, high, critical
	// title: must not be only whitespace or invisible characters
	// true
}

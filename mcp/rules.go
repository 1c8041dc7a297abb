package mcp

import (
	"github.com/logbook-dev/logbook/domain"
)

// input generates a tool's input schema from the domain's rules of command
// c, the one source of truth. The schema is published; the rules themselves
// validate every call (commands), including what the schema cannot say
// (blank or control-character text, rules spanning fields).
func input(c *domain.Command) *schema {
	s := object("")
	for i := range c.Fields {
		s.props = append(s.props, prop(c.Fields[i].Name, fromRule(&c.Fields[i].Rule)))
	}
	if len(c.Required) > 0 {
		s.require(c.Required...)
	}
	if len(c.AnyOf) > 0 {
		// The required fields and at least one more; the check gives the
		// better message.
		s.minProperties = len(c.Required) + 1
	}
	s.closedObject()
	return s
}

// fromRule is the JSON Schema of one domain rule.
func fromRule(r *domain.Rule) *schema {
	s := typed(string(r.Kind), r.Doc)
	s.enum = r.Enum
	s.def = r.Default
	if r.MinLen > 0 || r.MaxLen > 0 {
		s.length(r.MinLen, r.MaxLen)
	}
	s.pattern = r.Pattern
	if r.DateTime {
		s.dateTime()
	}
	s.minimum, s.maximum = r.Min, r.Max
	if r.MaxItems > 0 {
		s.most(r.MaxItems)
	}
	if r.Items != nil {
		s.items = fromRule(r.Items)
	}
	s.maxBytes = r.MaxBytes
	return s
}

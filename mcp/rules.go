package mcp

import (
	"encoding/json"

	"github.com/logbook-dev/logbook/domain"
)

// input generates a tool's input schema and its check from the domain's
// rules of command c, the one source of truth: what the schema cannot say
// (blank or control-character text, rules spanning fields) the check asks
// the domain itself.
func input(c *domain.Command) (*schema, func(args *value, add func(path, msg string))) {
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
	return s, func(args *value, add func(path, msg string)) {
		if m, ok := args.generic().(map[string]any); ok {
			c.Check(m, add)
		}
	}
}

// fromRule is the JSON Schema of one domain rule.
func fromRule(r *domain.Rule) *schema {
	s := typed(string(r.Kind), r.Doc)
	s.rule = r
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

// generic is v as encoding/json decodes it with UseNumber, the form the
// domain's rules read. A repeated key keeps its first value, as get does.
func (v *value) generic() any {
	switch v.kind {
	case kindBool:
		return v.str == "true"
	case kindNumber:
		return json.Number(v.str)
	case kindString:
		return v.str
	case kindArray:
		items := make([]any, len(v.items))
		for i, item := range v.items {
			items[i] = item.generic()
		}
		return items
	case kindObject:
		m := make(map[string]any, len(v.members))
		for _, mb := range v.members {
			if _, dup := m[mb.key]; !dup {
				m[mb.key] = mb.val.generic()
			}
		}
		return m
	}
	return nil
}

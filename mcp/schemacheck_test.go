package mcp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/domain"
)

// check validates v against s (an output schema), adding at most one issue
// for a scalar value: what a client's SDK checks of every structuredContent.
func check(v *domain.Value, s *schema, path string, is *domain.Issues) {
	if len(s.types) > 0 && !matchesType(v, s) {
		is.Add(path, typeMessage(v, s))
		return
	}
	switch v.Kind() {
	case domain.String:
		if s.enum != nil && !slices.Contains(s.enum, v.Text()) {
			is.Add(path, "must be one of: "+strings.Join(s.enum, ", "))
		}
	case domain.Array:
		if s.items != nil {
			for i := range v.Items() {
				check(&v.Items()[i], s.items, fmt.Sprintf("%s[%d]", path, i), is)
			}
		}
	case domain.Object:
		checkObject(v, s, path, is)
	}
}

func matchesType(v *domain.Value, s *schema) bool {
	for _, t := range s.types {
		switch k := v.Kind(); {
		case t == "integer" && k == domain.Number:
			return !strings.ContainsAny(v.Text(), ".eE")
		case t == string(k):
			return true
		}
	}
	return false
}

func typeMessage(v *domain.Value, s *schema) string {
	names := make([]string, 0, len(s.types))
	for _, t := range s.types {
		switch t {
		case "integer", "array", "object":
			names = append(names, "an "+t)
		case "null":
			names = append(names, "null")
		default:
			names = append(names, "a "+t)
		}
	}
	return "must be " + strings.Join(names, " or ")
}

func checkObject(v *domain.Value, s *schema, path string, is *domain.Issues) {
	for _, m := range v.Members() {
		ps := s.property(m.Key)
		if ps == nil {
			if s.closed {
				is.Add(join(path, m.Key), "is not a known field")
			}
			continue
		}
		check(&m.Value, ps, join(path, m.Key), is)
	}
	for _, r := range s.required {
		if v.Get(r) == nil {
			is.Add(join(path, r), "is required")
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// property is the schema of s's property name, or nil.
func (s *schema) property(name string) *schema {
	for _, p := range s.props {
		if p.name == name {
			return p.s
		}
	}
	return nil
}

package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// schema is the subset of JSON Schema (2020-12) that logbook's tools use,
// published in tools/list (MarshalJSON). Keywords outside this subset are
// deliberately not supported. Input schemas are generated from the
// domain's rules (rules.go), which validate every call themselves (in
// commands); tests check every reply against its output schema
// (schemacheck_test.go).
type schema struct {
	types       []string // "object", "string", "integer", "number", "boolean", "array", "null"
	description string
	enum        []string
	def         any // published as "default"; never applied by the edge
	minLength   *int
	maxLength   *int
	pattern     string
	format      string // only "date-time" is checked
	minimum     *float64
	maximum     *float64
	maxItems    *int
	items       *schema
	props       []property // in publication order
	required    []string
	closed      bool // additionalProperties: false
	// minProperties is published only; the rule it stands for is checked by
	// the tool's own check function, which gives a better message.
	minProperties int
	// maxBytes bounds the value's size as compact JSON. It is not a JSON
	// Schema keyword, so it is stated in the description instead.
	maxBytes int
	// absentOK marks an output field a result may leave out (optional,
	// orNull); every other output field is required (envelope.go).
	absentOK bool
}

type property struct {
	name string
	s    *schema
}

func typed(t, description string) *schema {
	return &schema{types: []string{t}, description: description}
}

func str(description string) *schema     { return typed("string", description) }
func integer(description string) *schema { return typed("integer", description) }
func number(description string) *schema  { return typed("number", description) }
func boolean(description string) *schema { return typed("boolean", description) }

func array(description string, items *schema) *schema {
	s := typed("array", description)
	s.items = items
	return s
}

func enum(description string, values ...string) *schema {
	s := str(description)
	s.enum = values
	return s
}

// object is an open object schema: use closed() for tool inputs.
func object(description string, props ...property) *schema {
	s := typed("object", description)
	s.props = props
	return s
}

func prop(name string, s *schema) property { return property{name, s} }

func (s *schema) length(min, max int) *schema {
	if min > 0 {
		s.minLength = &min
	}
	s.maxLength = &max
	return s
}

func (s *schema) most(n int) *schema { s.maxItems = &n; return s }

func (s *schema) dateTime() *schema { s.format = "date-time"; return s }

func (s *schema) require(names ...string) *schema { s.required = names; return s }

func (s *schema) closedObject() *schema { s.closed = true; return s }

// orNull lets an output field be null as well as absent: commands may emit
// either for a field the contract marks optional.
func (s *schema) orNull() *schema {
	s.types = append(s.types, "null")
	s.absentOK = true
	return s
}

// nullable lets an output field be null; unlike orNull it is still in
// every result.
func (s *schema) nullable() *schema {
	s.types = append(s.types, "null")
	return s
}

// optional lets an output field be absent (never null): a result leaves it
// out when it does not apply.
func (s *schema) optional() *schema { s.absentOK = true; return s }

// MarshalJSON writes the schema with its keywords in a fixed, readable order
// (JSON Schema itself does not care), properties in declaration order.
func (s *schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	field := func(key string, v any) error {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(strconv.Quote(key))
		b.WriteByte(':')
		raw, err := marshal(v)
		if err != nil {
			return fmt.Errorf("schema keyword %s: %w", key, err)
		}
		b.Write(raw)
		return nil
	}
	var err error
	set := func(key string, v any) {
		if err == nil {
			err = field(key, v)
		}
	}
	switch len(s.types) {
	case 0:
	case 1:
		set("type", s.types[0])
	default:
		set("type", s.types)
	}
	if s.description != "" {
		set("description", s.description)
	}
	if s.enum != nil {
		set("enum", s.enum)
	}
	if s.def != nil {
		set("default", s.def)
	}
	if s.minLength != nil {
		set("minLength", *s.minLength)
	}
	if s.maxLength != nil {
		set("maxLength", *s.maxLength)
	}
	if s.pattern != "" {
		set("pattern", s.pattern)
	}
	if s.format != "" {
		set("format", s.format)
	}
	if s.minimum != nil {
		set("minimum", *s.minimum)
	}
	if s.maximum != nil {
		set("maximum", *s.maximum)
	}
	if s.maxItems != nil {
		set("maxItems", *s.maxItems)
	}
	if s.items != nil {
		set("items", s.items)
	}
	if s.props != nil || s.closed {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(`"properties":{`)
		for i, p := range s.props {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(p.name))
			b.WriteByte(':')
			raw, perr := p.s.MarshalJSON()
			if perr != nil && err == nil {
				err = perr
			}
			b.Write(raw)
		}
		b.WriteByte('}')
	}
	if len(s.required) > 0 {
		set("required", s.required)
	}
	if s.minProperties > 0 {
		set("minProperties", s.minProperties)
	}
	if s.closed {
		set("additionalProperties", false)
	}
	b.WriteByte('}')
	return b.Bytes(), err
}

// marshal is json.Marshal without HTML escaping, so that "<" in a pattern or
// a message stays readable.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeJSON(&b, v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// encodeJSON appends v to b as marshal writes it, and a newline.
func encodeJSON(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

package mcp

// scanner is the edge's one string-aware JSON scanner: fed a text byte by
// byte, it says what each byte is — inside a string or not, a bracket, space
// — and keeps the nesting depth, so that the transport can bound nesting,
// find members and ends of values, and check compactness without decoding.
// It does not validate: on text that is not JSON it still classifies every
// byte, which is what a line too long or too deep to decode needs.
type scanner struct {
	depth    int // brackets open outside strings (negative after a stray close)
	inString bool
	escaped  bool
}

// class is what one byte is to the scanner.
type class uint8

const (
	inString   class = iota // inside a string (its quotes excluded)
	openQuote               // the '"' that starts a string
	closeQuote              // the '"' that ends a string
	openBrack               // '{' or '[' outside strings; depth is already increased
	closeBrack              // '}' or ']' outside strings; depth is already decreased
	space                   // JSON white space outside strings
	other                   // anything else outside strings: ':', ',', a literal's byte
)

func (s *scanner) step(c byte) class {
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
			return closeQuote
		}
		return inString
	}
	switch c {
	case '"':
		s.inString = true
		return openQuote
	case '{', '[':
		s.depth++
		return openBrack
	case '}', ']':
		s.depth--
		return closeBrack
	case ' ', '\t', '\r', '\n':
		return space
	}
	return other
}

// nestedDeeper reports whether data (JSON or not) opens more than limit
// arrays or objects at once.
func nestedDeeper(data []byte, limit int) bool {
	var s scanner
	for _, c := range data {
		if s.step(c) == openBrack && s.depth > limit {
			return true
		}
	}
	return false
}

// compact reports whether JSON data has no white space outside its strings.
func compact(data []byte) bool {
	var s scanner
	for _, c := range data {
		if s.step(c) == space {
			return false
		}
	}
	return true
}

// valueEnd returns the index just after the JSON value starting at data[i];
// data is known to be valid JSON.
func valueEnd(data []byte, i int) int {
	var s scanner
	for j := i; j < len(data); j++ {
		c := data[j]
		switch s.step(c) {
		case closeQuote:
			if s.depth == 0 {
				return j + 1
			}
		case closeBrack:
			if s.depth < 0 { // the end of a bare literal at the end of an object
				return j
			}
			if s.depth == 0 {
				return j + 1
			}
		case space:
			if s.depth == 0 {
				return j
			}
		case other:
			if s.depth == 0 && c == ',' {
				return j
			}
		}
	}
	return len(data)
}

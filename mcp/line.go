package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
)

// The framing of inbound messages: newline-delimited, each line bounded.

// line is one inbound line, or the end of input (err != nil).
type line struct {
	data    []byte
	tooLong bool
	id      json.RawMessage // for a tooLong line: its id, if found
	err     error
}

// readLine reads up to and including the next '\n'. A line's length is
// counted without its "\n" or "\r\n". It keeps at most maxBytes+2 bytes of a
// line; past that it only scans for the id.
func readLine(r *bufio.Reader, maxBytes int) line {
	var (
		buf  []byte
		scan *idScanner
	)
	for {
		chunk, err := r.ReadSlice('\n')
		if scan == nil && len(buf)+len(chunk) > maxBytes+2 {
			scan = &idScanner{}
			scan.feed(buf)
			buf = nil
		}
		if scan != nil {
			scan.feed(chunk)
		} else {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if scan == nil && len(bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte{'\n'}), []byte{'\r'})) > maxBytes {
			scan = &idScanner{}
			scan.feed(buf)
		}
		if scan != nil {
			return line{tooLong: true, id: scan.result(), err: err}
		}
		return line{data: buf, err: err}
	}
}

// idScanner finds the top-level "id" member of a JSON object streamed through
// it in pieces, keeping O(1) memory: it is how a line too long to keep still
// gets its answer. It is best effort (an id spelled with escapes, or after a
// syntax error, is not found).
type idScanner struct {
	sc scanner

	expectKey bool   // at depth 1, the next string is a key
	inKey     bool   // reading a key at depth 1
	key       []byte // the key so far, up to 3 bytes
	isID      bool   // the last key read was "id"
	wantValue bool   // after "id":, the value comes next
	inValue   bool   // reading the id's value
	value     []byte
	done      bool
}

func (s *idScanner) feed(b []byte) {
	for _, c := range b {
		if s.done {
			return
		}
		s.step(c)
	}
}

func (s *idScanner) step(c byte) {
	if s.inValue && !s.sc.inString { // a bare number
		switch c {
		case ',', '}', ' ', '\t', '\r', '\n':
			s.done = true
		default:
			s.keep(c)
		}
		return
	}
	depth := s.sc.depth
	switch s.sc.step(c) {
	case inString:
		if s.inKey && len(s.key) < 3 {
			s.key = append(s.key, c)
		}
		if s.inValue {
			s.keep(c)
		}
	case closeQuote:
		if s.inKey {
			s.inKey = false
			s.isID = string(s.key) == "id"
		}
		if s.inValue {
			s.keep(c)
			s.done = true
		}
	case openQuote:
		switch {
		case depth == 1 && s.wantValue:
			s.wantValue, s.inValue = false, true
			s.keep(c)
		case depth == 1 && s.expectKey:
			s.expectKey, s.inKey, s.key = false, true, s.key[:0]
		}
	case openBrack:
		if depth == 1 && s.wantValue { // an object or array is no id
			s.done = true
			return
		}
		if s.sc.depth == 1 {
			s.expectKey = c == '{'
		}
	case other:
		switch {
		case depth == 1 && c == ':':
			if s.isID {
				s.wantValue, s.isID = true, false
			}
		case depth == 1 && c == ',':
			s.expectKey, s.isID = true, false
		case depth == 1 && s.wantValue:
			s.wantValue, s.inValue = false, true
			s.keep(c)
		}
	}
}

func (s *idScanner) keep(c byte) {
	if len(s.value) <= maxIDBytes {
		s.value = append(s.value, c)
	}
}

func (s *idScanner) result() json.RawMessage {
	if !s.done && !s.inValue {
		return nil
	}
	return validID(s.value)
}

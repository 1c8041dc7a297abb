package commands

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger"
)

// ArgsSHA256 is the args_sha256 of a tool.called event of payload version
// version: the hex SHA-256 of the arguments' canonical form. Empty arguments
// are "{}". An auditor holding the arguments recomputes it with this
// function, or in any language from the rules below.
//
//   - Version 2 (written since RFC 8785 hashing): the RFC 8785 (JCS)
//     canonical form when the arguments are I-JSON as RFC 8785 requires —
//     valid UTF-8, no unpaired UTF-16 surrogate escape, no repeated member
//     name, every number a finite IEEE 754 double; otherwise (the call was
//     then refused as ERR_INVALID_INPUT) the bytes as received.
//   - Version 1: Go's encoding/json re-encoding of the decoded value (keys
//     sorted, numbers as written, <>& escaped as \u003c…, invalid UTF-8 as
//     U+FFFD, the last of repeated keys); bytes as received if not JSON.
func ArgsSHA256(version uint16, raw []byte) (string, error) {
	switch version {
	case 1:
		if len(raw) == 0 {
			raw = []byte("{}")
		}
		return hexSHA256(canonicalV1(raw)), nil
	case 2:
		return hexSHA256(canonicalJCS(domain.ParseArgs(raw))), nil
	}
	return "", fmt.Errorf("tool.called payload version %d has no arguments hash rule", version)
}

func hexSHA256(b []byte) string { return ledger.Hash(sha256.Sum256(b)).String() }

// canonicalJCS is the RFC 8785 form of parsed arguments, written from
// their tree; the bytes as received when they are not I-JSON; "{}" when
// empty.
func canonicalJCS(a *domain.Args) []byte {
	raw := a.Raw()
	switch {
	case len(raw) == 0:
		return []byte("{}")
	case a.OverLimit():
		// Deeper or larger than the tree is kept for (only refused calls
		// come here): read whole, to the transports' bounds. The library
		// (canonicalJCSText) sorts an object's members in quadratic time:
		// 300,000 of them took minutes of CPU (attack review).
		a = domain.ParseUnbounded(raw)
		if !a.Clean() {
			return raw
		}
	case !a.Clean():
		return raw
	}
	root := a.Root()
	if k := root.Kind(); (k == domain.Number || k == domain.Boolean || k == domain.Null) && len(root.Raw()) != len(raw) {
		// A bare literal with white space around it: the library, and so
		// version 2 since its first event, takes it as not I-JSON.
		return raw
	}
	c, ok := appendJCS(make([]byte, 0, len(raw)), root)
	if !ok {
		return raw // a number beyond IEEE 754 doubles
	}
	return c
}

// appendJCS appends v in RFC 8785 form; false if a number is not a finite
// double.
func appendJCS(b []byte, v *domain.Value) ([]byte, bool) {
	switch v.Kind() {
	case domain.String:
		return appendJCSString(b, v.Text()), true
	case domain.Number:
		f, err := strconv.ParseFloat(v.Text(), 64)
		if err != nil {
			return b, false
		}
		s, err := jcs.NumberToJSON(f)
		if err != nil {
			return b, false
		}
		return append(b, s...), true
	case domain.Array:
		b = append(b, '[')
		for i := range v.Items() {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJCS(b, &v.Items()[i]); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case domain.Object:
		members := v.Members()
		order := make([]int, len(members))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(i, j int) int { return compareUTF16(members[i].Key, members[j].Key) })
		b = append(b, '{')
		for n, i := range order {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJCSString(b, members[i].Key)
			b = append(b, ':')
			var ok bool
			if b, ok = appendJCS(b, &members[i].Value); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return append(b, v.Raw()...), true // true, false, null
}

// appendJCSString quotes s as RFC 8785 does: \b \f \n \r \t \" \\ as short
// escapes, other control characters as \u00xx, everything else as is.
func appendJCSString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// compareUTF16 orders valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts member names.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmp.Compare(utf16Key(ra), utf16Key(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// utf16Key orders runes as their UTF-16 code units do: a rune beyond the
// BMP sorts by its surrogates, so before U+E000–U+FFFF.
func utf16Key(r rune) rune {
	if hi, lo := utf16.EncodeRune(r); hi != utf8.RuneError {
		return hi<<10 | (lo - 0xDC00)
	}
	return r << 10
}

// canonicalJCSText is the RFC 8785 form of raw read by the library, or raw
// itself when raw is not I-JSON. The library passes invalid UTF-8
// through, turns a broken surrogate pair into U+FFFD and reads some
// invalid JSON (`{"` becomes {}, found by FuzzCanonicalJCS); all three are
// refused here first, so that two different argument texts never share a
// canonical form.
func canonicalJCSText(raw []byte) []byte {
	if !json.Valid(raw) || !utf8.Valid(raw) || domain.LoneSurrogate(raw) {
		return raw
	}
	c, err := jcs.Transform(raw)
	if err != nil {
		return raw
	}
	return c
}

func canonicalV1(raw []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return raw
	}
	c, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return c
}

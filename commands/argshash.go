package commands

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
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
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	var canon []byte
	switch version {
	case 1:
		canon = canonicalV1(raw)
	case 2:
		canon = canonicalJCS(raw)
	default:
		return "", fmt.Errorf("tool.called payload version %d has no arguments hash rule", version)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// canonicalJCS is raw's RFC 8785 form, or raw itself when raw is not I-JSON.
// The library passes invalid UTF-8 through, turns a broken surrogate pair
// into U+FFFD and reads some invalid JSON (`{"` becomes {}, found by
// FuzzCanonicalJCS); all three are refused here first, so that two different
// argument texts never share a canonical form.
func canonicalJCS(raw []byte) []byte {
	if !json.Valid(raw) || !utf8.Valid(raw) || LoneSurrogate(raw) {
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

// LoneSurrogate reports whether JSON text holds a \uD800–\uDFFF escape that
// is not a high surrogate immediately followed by an escaped low one: text
// that decoders silently turn into U+FFFD.
func LoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			continue
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := rune(0), false
			if i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				lo, ok = hex4(b, i+8)
			}
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 16)
	return rune(n), err == nil
}

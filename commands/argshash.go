package commands

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

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
		return hexSHA256(canonicalJCS(raw)), nil
	}
	return "", fmt.Errorf("tool.called payload version %d has no arguments hash rule", version)
}

func hexSHA256(b []byte) string { return ledger.Hash(sha256.Sum256(b)).String() }

// canonicalJCS is the RFC 8785 form of arguments (domain.Canonical); the
// bytes as received when they are not I-JSON; "{}" when empty.
func canonicalJCS(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte("{}")
	}
	if t := bytes.Trim(raw, " \t\r\n"); len(t) != len(raw) && len(t) > 0 && t[0] != '{' && t[0] != '[' && t[0] != '"' {
		// A bare literal with white space around it: the library, and so
		// version 2 since its first event, takes it as not I-JSON.
		return raw
	}
	if c, ok := domain.Canonical(raw); ok {
		return c
	}
	return raw
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

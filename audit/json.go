package audit

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// SafeJSON returns JSON b (encoding/json's output, valid UTF-8) with each
// C1 control character (U+0080–U+009F) and each bidirectional control
// written as a \u escape: the same JSON value, but one a terminal shows as
// it is. encoding/json escapes the C0 controls only, so a ledger's text
// (thought metadata is free-form; an old or forged ledger holds anything)
// could otherwise reach the auditor's terminal as a C1 CSI sequence, or
// as an override that shows "on" as "no". Outside strings JSON is ASCII,
// so only strings change.
func SafeJSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] < utf8.RuneSelf {
		i++
	}
	if i == len(b) {
		return b
	}
	var out []byte
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r) {
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	if out == nil {
		return b
	}
	return out
}

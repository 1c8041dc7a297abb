package audit

import (
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
// so only strings change. It is on replay's path for every event: it
// looks only at the bytes that may begin such a character (unsafeLead),
// and copies b only when it holds one.
func SafeJSON(b []byte) []byte {
	var out []byte
	done := 0 // b[:done] is in out
	for i := 0; i < len(b); i++ {
		if !unsafeLead[b[i]] {
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if !unsafeRune(r) {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+16)
		}
		const hex = "0123456789abcdef"
		out = append(append(out, b[done:i]...), '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		done = i + n
		i += n - 1
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// unsafeRune reports whether SafeJSON escapes r: a C1 control or a
// bidirectional control (all of them in the Basic Multilingual Plane, so
// one \u escape each).
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r)
}

// unsafeLead marks the first byte of the UTF-8 encoding of every rune
// unsafeRune reports: no other byte can begin one.
var unsafeLead = func() (lead [256]bool) {
	var buf [utf8.UTFMax]byte
	mark := func(lo, hi, stride uint32) {
		for r := lo; r <= hi; r += stride {
			utf8.EncodeRune(buf[:], rune(r))
			lead[buf[0]] = true
		}
	}
	mark(0x80, 0x9f, 1)
	for _, rg := range unicode.Bidi_Control.R16 {
		mark(uint32(rg.Lo), uint32(rg.Hi), uint32(rg.Stride))
	}
	for _, rg := range unicode.Bidi_Control.R32 {
		mark(rg.Lo, rg.Hi, rg.Stride)
	}
	return lead
}()

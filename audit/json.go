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
// so only strings change. It is on replay's path for every event (see
// rewrite).
func SafeJSON(b []byte) []byte {
	return rewrite(b, &c1OrBidi, isC1OrBidi,
		func(out []byte, r rune) []byte {
			const hex = "0123456789abcdef" // every such r is in the BMP: one \u escape
			return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		})
}

// isC1OrBidi: a C1 control or a bidirectional control, what a terminal
// acts on or shows reordered though encoding/json leaves it as it is.
func isC1OrBidi(r rune) bool { return (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r) }

// NoBidi returns text b (a page, an event of the console) with each
// bidirectional control character replaced by a space: an override that
// came from a ledger's text shows "on" as "no", and one left open reorders
// the text after it. It is on every page the console renders (see
// rewrite).
func NoBidi(b []byte) []byte {
	return rewrite(b, &bidi, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) },
		func(out []byte, _ rune) []byte { return append(out, ' ') })
}

// rewrite returns b with each character for which is is true (each of
// them beginning with a byte marked in lead) replaced by what repl
// appends for it. It decodes only at the bytes lead marks, and copies b
// only when it holds such a character: decoding every character and
// asking unicode.Is of each ran at 50 MB/s, when most text holds some
// non-ASCII (a thought's id, a dash) and none of these.
func rewrite(b []byte, lead *[256]bool, is func(rune) bool, repl func([]byte, rune) []byte) []byte {
	var out []byte
	done := 0 // b[:done] is in out
	for i := 0; i < len(b); i++ {
		if !lead[b[i]] {
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if !is(r) {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+16)
		}
		out = repl(append(out, b[done:i]...), r)
		done = i + n
		i += n - 1
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// The first bytes of the UTF-8 encodings of the characters SafeJSON
// (C1 and bidirectional controls) and NoBidi (bidirectional controls)
// replace: no other byte begins one.
var c1OrBidi, bidi = leads(&unicode.RangeTable{R16: []unicode.Range16{{Lo: 0x80, Hi: 0x9f, Stride: 1}}}, unicode.Bidi_Control), leads(unicode.Bidi_Control)

func leads(tables ...*unicode.RangeTable) (lead [256]bool) {
	var buf [utf8.UTFMax]byte
	mark := func(lo, hi, stride uint32) {
		for r := lo; r <= hi; r += stride {
			utf8.EncodeRune(buf[:], rune(r))
			lead[buf[0]] = true
		}
	}
	for _, t := range tables {
		for _, rg := range t.R16 {
			mark(uint32(rg.Lo), uint32(rg.Hi), uint32(rg.Stride))
		}
		for _, rg := range t.R32 {
			mark(rg.Lo, rg.Hi, rg.Stride)
		}
	}
	return lead
}

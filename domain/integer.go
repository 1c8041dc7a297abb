package domain

import "strings"

// Integer is the decimal integer a number's literal denotes when its value
// is a whole number, as JSON Schema's "integer" counts it: "10", "10.0",
// "1e1", "1.0E+1" and "100e-1" all denote "10", "-0.0" denotes "0"; ok is
// false for a value with a fractional part ("1.5", "1e-1") or a value that
// is not a number. A whole number of more than 19 digits is given as 20
// nines with its sign, beyond any 64-bit integer, so that strconv.ParseInt
// reports it out of range without its digits being written out.
func (v *Value) Integer() (text string, ok bool) {
	if v.kind != Number {
		return "", false
	}
	return integerText(v.text)
}

// integerText is Value.Integer of a JSON number literal.
func integerText(lit string) (string, bool) {
	neg := strings.HasPrefix(lit, "-")
	if neg {
		lit = lit[1:]
	}
	mant, exp := lit, ""
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant, exp = lit[:i], lit[i+1:]
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	// shift: the power of ten digits are multiplied by.
	shift := exponent(exp) - len(frac)
	if digits == "" {
		return "0", true
	}
	if shift < 0 {
		zeros := len(digits) - len(strings.TrimRight(digits, "0"))
		if -shift > zeros {
			return "", false
		}
		digits = digits[:len(digits)+shift]
	} else if len(digits)+shift > 19 {
		digits = strings.Repeat("9", 20)
	} else {
		digits += strings.Repeat("0", shift)
	}
	if neg {
		return "-" + digits, true
	}
	return digits, true
}

// exponent reads a JSON number's exponent (after the "e"), clamped to
// ±10,000,000: far enough that any literal of a message (at most a few
// MiB) is decided alike, small enough to compute with.
func exponent(s string) int {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(strings.TrimLeft(s, "+-"), "0")
	const limit = 10_000_000
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
		if n > limit {
			n = limit
			break
		}
	}
	if neg {
		return -n
	}
	return n
}

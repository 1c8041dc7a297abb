package mcp

import "testing"

// BenchmarkFastpathAB runs BenchmarkServerCall with the fast path (decodeRequest,
// encodeResult) on and off, twice each, in one run:
//
//	go test -run '^$' -bench FastpathAB -benchtime 2000x ./mcp
func BenchmarkFastpathAB(b *testing.B) {
	for _, on := range []bool{true, false, true, false} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			useFastpath = on
			defer func() { useFastpath = true }()
			BenchmarkServerCall(b)
		})
	}
}

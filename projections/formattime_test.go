package projections

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestFormatTimeIsFormat: FormatTime writes what time.Format writes with
// the layout, for times across the years it writes itself, its edges and
// the years Format is left to.
func TestFormatTimeIsFormat(t *testing.T) {
	times := []time.Time{
		{},
		time.Unix(0, 0),
		time.UnixMilli(1_700_000_000_123),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 5_000_000, time.FixedZone("x", 5*3600+1800)),
		time.Date(2026, 11, 23, 0, 0, 0, 999_000, time.FixedZone("y", -11*3600)),
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		times = append(times, time.UnixMilli(rng.Int64N(400_000_000_000_000)-100_000_000_000_000).Add(time.Duration(rng.IntN(1e6))))
	}
	for _, tm := range times {
		if got, want := FormatTime(tm), tm.UTC().Format(timeLayout); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", tm, got, want)
		}
	}
}

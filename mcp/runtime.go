package mcp

import "runtime/debug"

// GCPercent is the collector's target of the processes that serve the
// tools, logbook serve and logbook server (unless GOGC is set): their live
// heap is tiny and every call allocates a little, so the default target
// (100%) collects many times a second; 400% keeps the heap near 20 MB and
// cuts CPU per call by about a fifth.
const GCPercent = 400

// MemoryLimit is logbook serve's soft heap limit (unless GOMEMLIMIT is
// set): with large requests in flight GCPercent lets the heap reach five
// times their size; past this limit the collector works harder instead (the
// transport bounds what is in flight, maxHeldBytes, and the commands layer
// the argument trees).
const MemoryLimit = 256 << 20

// ServerMemoryLimit is logbook server's: MemoryLimit's reasons, for a
// process that holds more at once — 16 request bodies of MaxBodyBytes and
// the SDK's copies of them beside the argument trees. Without one, large
// calls over HTTP took the heap to many GB of garbage (attack review).
const ServerMemoryLimit = 512 << 20

// TuneCollector sets the collector as the tools are served: GCPercent
// unless getenv("GOGC") is set, and the soft heap limit limit (MemoryLimit,
// ServerMemoryLimit) unless getenv("GOMEMLIMIT") is set. It returns what
// puts back the settings it changed. logbook serve and server call it, and
// the benchmarks here as serve does, so that they measure what it ships.
func TuneCollector(getenv func(string) string, limit int64) (restore func()) {
	gc, mem := -1, int64(-1)
	if getenv("GOGC") == "" {
		gc = debug.SetGCPercent(GCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		mem = debug.SetMemoryLimit(limit)
	}
	return func() {
		if gc != -1 {
			debug.SetGCPercent(gc)
		}
		if mem != -1 {
			debug.SetMemoryLimit(mem)
		}
	}
}

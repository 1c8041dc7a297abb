// Command logbook is a tamper-evident audit ledger for AI coding agents: an
// MCP stdio server (logbook serve) and the auditor's offline tools.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/ledger/jetstream"
)

func main() {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		// The session gone ends logbook as SIGTERM does, unless it was
		// started to outlive it (nohup): Notify would undo the ignoring.
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	stdin, done := pollable(os.Stdin)
	err := Run(ctx, os.Args[1:], stdin, os.Stdout, os.Stderr)
	done()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "logbook:", oneLine(err.Error()))
	}
	os.Exit(exitCode(err))
}

// oneLine is msg with its control characters written as Go escapes (\n,
// \t, \x01): an error is one line of stderr, whatever the paths and values
// it quotes hold (a --db path with a newline in it, say).
func oneLine(msg string) string {
	if !strings.ContainsFunc(msg, unicode.IsControl) {
		return msg
	}
	var b strings.Builder
	for _, r := range msg {
		if !unicode.IsControl(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// Exit codes are stable: scripts depend on them.
const (
	exitOK        = 0
	exitIntegrity = 1 // the ledger or a proof failed verification
	exitUsage     = 2 // bad flags, or an I/O error (missing or locked file)
)

// exitCode is err's exit code, decided here and nowhere else from the
// typed errors of the packages that check: exitIntegrity when a ledger, a
// proof, a checkpoint or a copy of a ledger failed a check, exitUsage for
// everything else (bad flags, an *audit.OptionError, I/O). A command that
// must not report a ledger's integrity (serve and server serve, they do
// not audit) formats its errors with %v.
func exitCode(err error) int {
	var ie *ledger.IntegrityError
	var p *audit.Problem
	var mismatch *jetstream.MismatchError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ie), errors.As(err, &p), errors.As(err, &mismatch),
		errors.Is(err, ledger.ErrMalformed), errors.Is(err, boltstore.ErrDamaged):
		return exitIntegrity
	}
	return exitUsage
}

// writeJSON writes v as one line of JSON, safe for a terminal
// (audit.SafeJSON).
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(audit.SafeJSON(b), '\n'))
	return err
}

// boundMemory sets a soft limit on the Go heap for the commands that walk a
// whole ledger (verify, rebuild, snapshot), whose memory must not grow with
// it: past the limit the collector runs more often rather than let garbage
// pile up between collections. Below it, the collector waits for the heap
// to grow 4 times over its live part rather than twice: these commands
// allocate fast and keep little (a chunk's records), so collecting at
// twice the live heap spent a tenth of a rebuild's CPU in the collector
// (13.9 s instead of 15.5 s of user CPU for 1M events), for a peak heap
// that stays under the limit (limit: heapLimit, or refoldHeapLimit).
func boundMemory(limit int64) {
	debug.SetMemoryLimit(limit)
	debug.SetGCPercent(400)
}

// The heap limits of boundMemory. A rebuild holds the events it has
// decoded and prepared ahead of its fold (projections.Prepare) beside the
// fold's own: at 48 MiB the collector ran often enough to eat what
// preparing on the other core gained (223k events/s at 1M events, as
// without it), at 64 MiB 272k, for a peak RSS of 76 MB instead of 71 MB
// (a rebuild's swap, which maps the old projections' pages to free them,
// took 100-105 MB at 1M events on top of the refold's heap; with that heap
// given back first and the copy's transactions bounded per key, 77-89 MB).
// verify maps the ledger and its scratch file besides: 79 MB at 48 MiB,
// 94 MB at 64 MiB for the same CPU, too near the 100 MB it must stay under
// — until the scratch file's pages grew to 16 KiB and events were decoded
// into blocks: at 1M events verify now peaks at 74-78 MB at 64 MiB, for 8%
// less CPU than at 48 MiB (1.96 s against 2.13 s; wall 1.06 s against
// 1.17 s; 5 alternated pairs), so it shares the rebuild's limit.
const (
	heapLimit       = 48 << 20 // snapshot
	refoldHeapLimit = 64 << 20 // rebuild and verify
)

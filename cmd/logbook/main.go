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
	"syscall"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// Exit codes are stable: scripts depend on them.
const (
	exitOK        = 0
	exitIntegrity = 1 // the ledger or a proof failed verification
	exitUsage     = 2 // bad flags, or an I/O error (missing or locked file)
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

func integrityErr(err error) error { return &exitError{exitIntegrity, err} }

func exitCode(err error, stderr *os.File) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "logbook:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}

// ioErr is an I/O failure (exit 2), or an integrity failure (exit 1) when
// err is one or the file is damaged.
func ioErr(cmd string, err error) error {
	var ie *ledger.IntegrityError
	if errors.As(err, &ie) || errors.Is(err, boltstore.ErrDamaged) {
		return integrityErr(fmt.Errorf("%s: %w", cmd, err))
	}
	return &exitError{exitUsage, fmt.Errorf("%s: %w", cmd, err)}
}

// passExit keeps an exit error raised inside a transaction, and makes any
// other error an I/O error.
func passExit(cmd string, err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return ioErr(cmd, err)
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// boundMemory sets a soft limit on the Go heap for the commands that walk a
// whole ledger (verify, rebuild, snapshot), whose memory must not grow with
// it: past the limit the collector runs more often rather than let garbage
// pile up between collections.
func boundMemory() { debug.SetMemoryLimit(48 << 20) }

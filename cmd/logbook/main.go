// Command logbook is a tamper-evident audit ledger for AI coding agents: an
// MCP stdio server (logbook serve) and the auditor's offline tools.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
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

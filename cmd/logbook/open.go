package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// ledgerFlags are the flags of every command that opens an existing ledger.
type ledgerFlags struct {
	name        string
	db          *string
	lockTimeout *time.Duration
}

func addLedgerFlags(e *env, fs *flag.FlagSet) *ledgerFlags {
	return &ledgerFlags{
		name:        fs.Name(),
		db:          dbFlag(e, fs),
		lockTimeout: fs.Duration("lock-timeout", 5*time.Second, "give up (exit 2) when another process holds the ledger file longer than this"),
	}
}

// open opens the existing ledger. Every failure is an exit-2 error: the file
// is missing, locked, or not a ledger this binary reads.
func (f *ledgerFlags) open(readOnly bool) (*boltstore.Store, error) {
	if err := checkPath("--db", *f.db, true); err != nil {
		return nil, err
	}
	if *f.lockTimeout <= 0 {
		return nil, usageErr("%s: --lock-timeout must be positive", f.name)
	}
	l, err := boltstore.Open(*f.db, boltstore.Options{ReadOnly: readOnly, LockTimeout: *f.lockTimeout})
	if err != nil {
		return nil, ioErr(f.name, err)
	}
	return l, nil
}

// boundMemory sets a soft limit on the Go heap for the commands that walk a
// whole ledger (verify, rebuild, snapshot), whose memory must not grow with
// it: past the limit the collector runs more often rather than let garbage
// pile up between collections. Below it, the collector waits for the heap
// to grow 4 times over its live part rather than twice: these commands
// allocate fast and keep little (a chunk's records), so collecting at
// twice the live heap spent a tenth of a rebuild's CPU in the collector
// (13.9 s instead of 15.5 s of user CPU for 1M events), for a peak heap
// that stays under the limit.
func boundMemory() {
	debug.SetMemoryLimit(48 << 20)
	debug.SetGCPercent(400)
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
	if errors.As(err, &ee) {
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

// rate is events per second, 0 when nothing was timed.
func rate(events uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(events) / d.Seconds()
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

func init() {
	register("replay", "print the events as JSON lines, filtered; --follow for new ones", replay)
}

// replayLine is one event as replay prints it: the envelope, the event's
// hash, and the payload decoded as stored (its own schema version).
type replayLine struct {
	Seq            uint64      `json:"seq"`
	Time           string      `json:"time"`
	Type           string      `json:"type"`
	PayloadVersion uint16      `json:"payload_version"`
	Actor          string      `json:"actor"`
	Subjects       []string    `json:"subjects"`
	Prev           ledger.Hash `json:"prev"`
	Hash           ledger.Hash `json:"hash"`
	Payload        any         `json:"payload"`
	PayloadError   string      `json:"payload_error,omitempty"`
}

// replayFilter selects events; empty fields select everything.
type replayFilter struct {
	types   []string
	task    string
	session string
	actor   string
}

func (f *replayFilter) match(r ledger.Record) bool {
	return (len(f.types) == 0 || slices.Contains(f.types, r.Type)) &&
		(f.task == "" || slices.Contains(r.Subjects, f.task)) &&
		(f.session == "" || slices.Contains(r.Subjects, f.session)) &&
		(f.actor == "" || r.Actor == f.actor)
}

func replay(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "replay", `Print the ledger's events as JSON lines, in order: the envelope (seq, time, type,
payload_version, actor, subjects, prev), the event's hash, and the payload decoded as stored.
Filters combine (all must match). Links are checked as events are read: a broken chain
stops the replay with exit 1 (run logbook verify for the full check).
With --follow, keeps printing events as agents append them, until interrupted (exit 0).`)
	lf := addLedgerFlags(e, fs)
	from := fs.Uint64("from", 1, "first seq")
	to := fs.Uint64("to", 0, "last seq, inclusive (default: the head; with --follow, no end)")
	types := fs.String("type", "", "only these event types, comma-separated (e.g. task.created,thought.recorded)")
	task := fs.String("task", "", "only events concerning this task id (e.g. T-0001)")
	session := fs.String("session", "", "only events concerning this audit session id (e.g. A-0001)")
	actor := fs.String("actor", "", "only events of this actor")
	follow := fs.Bool("follow", false, "keep printing new events as they are appended")
	interval := fs.Duration("interval", 200*time.Millisecond, "with --follow, how often to look for new events")
	chunk := fs.Uint64("chunk", 4096, "events per read transaction")
	if done, err := parse(e, fs, args); done {
		return err
	}
	switch {
	case *from == 0:
		return usageErr("replay: --from must be at least 1 (seqs start at 1)")
	case *to != 0 && *to < *from:
		return usageErr("replay: --to %d is before --from %d", *to, *from)
	case *interval <= 0:
		return usageErr("replay: --interval must be positive")
	case *chunk == 0:
		return usageErr("replay: --chunk must be positive")
	}
	f := &replayFilter{task: *task, session: *session, actor: *actor}
	if *types != "" {
		f.types = strings.Split(*types, ",")
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()

	w := bufio.NewWriterSize(e.stdout, 64<<10)
	defer w.Flush()
	rp := boltaudit.NewReplayer(l, *from, *chunk)
	for {
		var head uint64
		if err := l.View(func(tx *boltstore.Tx) error { head = tx.Head().Seq; return nil }); err != nil {
			return ioErr("replay", err)
		}
		end := head
		if *to != 0 {
			end = min(end, *to)
		}
		if !*follow && *to != 0 && *to > head {
			return usageErr("replay: --to %d is beyond the head %d", *to, head)
		}
		for rp.Next() <= end {
			if err := rp.ReadChunk(end, func(r ledger.Record) error {
				if !f.match(r) {
					return nil
				}
				return writeJSON(w, lineOf(r))
			}); err != nil {
				w.Flush()
				return replayErr(rp, err)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		if !*follow || (*to != 0 && rp.Next() > *to) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: the normal end of --follow
		case <-time.After(*interval):
		}
	}
}

// replayErr is the exit error of a replay stopped by err.
func replayErr(rp *boltaudit.Replayer, err error) error {
	if errors.Is(err, ledger.ErrMalformed) {
		return integrityErr(fmt.Errorf("replay: seq %d: %w (run logbook verify)", rp.Next(), err))
	}
	var ie *ledger.IntegrityError
	if errors.As(err, &ie) {
		return integrityErr(fmt.Errorf("replay: %w (run logbook verify)", err))
	}
	return ioErr("replay", err)
}

func lineOf(r ledger.Record) replayLine {
	line := replayLine{Seq: r.Seq, Time: r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), Type: r.Type,
		PayloadVersion: r.Version, Actor: r.Actor, Subjects: r.Subjects, Prev: r.Prev, Hash: r.Hash}
	if line.Subjects == nil {
		line.Subjects = []string{}
	}
	if err := ledger.DecodePayload(r.Payload, &line.Payload); err != nil {
		line.Payload, line.PayloadError = r.Payload, err.Error()
	}
	return line
}

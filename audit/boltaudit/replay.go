package boltaudit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// Replayer reads a ledger's events in seq order, in chunks of one short
// read transaction each, and checks every link as it reads, including the
// link into the first event read: what it hands on is a chain, or it stops.
// It can be called again as the log grows (replay --follow).
type Replayer struct {
	l     *boltstore.Store
	chunk uint64
	next  uint64      // the next seq to read
	prev  ledger.Hash // hash of event next-1, once known
	known bool        // prev is known
}

// NewReplayer reads l from seq from (>= 1), chunk (> 0) events per read
// transaction.
func NewReplayer(l *boltstore.Store, from, chunk uint64) *Replayer {
	return &Replayer{l: l, chunk: chunk, next: from}
}

// Next is the next seq to read.
func (rp *Replayer) Next() uint64 { return rp.next }

// ReadChunk reads events Next()..min(Next()+chunk-1, end) in one read
// transaction and calls fn for each, in order; fn's error stops it and is
// returned. A missing event or a broken link is a *ledger.IntegrityError
// at the first bad seq, and an event that does not decode an error wrapping
// ledger.ErrMalformed (Next() is then its seq).
func (rp *Replayer) ReadChunk(end uint64, fn func(ledger.Record) error) error {
	// min(next+chunk-1, end), computed so that it cannot wrap around
	// (replay --chunk 18446744073709551615 --from 3 spun for ever on an
	// empty chunk).
	last := end
	if rp.next <= end && end-rp.next > rp.chunk-1 {
		last = rp.next + rp.chunk - 1
	}
	err := rp.l.View(func(tx *boltstore.Tx) error {
		if err := rp.Still(tx); err != nil {
			return err
		}
		if !rp.known && rp.next > 1 {
			r, err := tx.Event(rp.next - 1)
			if err != nil {
				return err
			}
			rp.prev, rp.known = r.Hash, true
		}
		return tx.Scan(rp.next, last+1, func(r ledger.Record) error {
			if r.Seq != rp.next {
				return &ledger.IntegrityError{Seq: rp.next, Problem: ledger.ProblemGap}
			}
			if rp.next > 1 && r.Prev != rp.prev {
				return &ledger.IntegrityError{Seq: r.Seq, Problem: ledger.ProblemLink, Want: rp.prev, Got: r.Prev}
			}
			rp.prev, rp.known, rp.next = r.Hash, true, r.Seq+1
			return fn(r)
		})
	})
	if err == nil && rp.next <= last {
		err = &ledger.IntegrityError{Seq: rp.next, Problem: ledger.ProblemGap}
	}
	return err
}

// Still checks that tx still holds the last event read, as read: a read
// transaction opens the file at the Store's path anew, so a file replaced
// there by an older copy of the ledger, or by another ledger (a restore, a
// rebuild from elsewhere), would otherwise be read on from where the
// reading stopped: silently waiting for a seq the shorter log never
// reaches, or handing on another log's events as the continuation. A log
// that no longer reaches the last event read is a *ledger.IntegrityError
// of ProblemGap at the first such event; one whose event there has another
// hash, of ProblemContent at it.
func (rp *Replayer) Still(tx *boltstore.Tx) error {
	if !rp.known || rp.next <= 1 {
		return nil
	}
	last := rp.next - 1
	if head := tx.Head().Seq; head < last {
		return &ledger.IntegrityError{Seq: head + 1, Problem: ledger.ProblemGap,
			Detail: fmt.Sprintf("the ledger file now ends at seq %d, before events already read up to seq %d (replaced by an older copy, or truncated)", head, last)}
	}
	r, err := tx.Event(last)
	if err != nil {
		return err
	}
	if r.Hash != rp.prev {
		return &ledger.IntegrityError{Seq: last, Problem: ledger.ProblemContent, Want: rp.prev, Got: r.Hash,
			Detail: "the ledger file no longer holds the event already read (replaced by another ledger?)"}
	}
	return nil
}

// Line is one event as Replay writes it: the envelope, the event's hash,
// and the payload decoded as stored (its own schema version), a msgpack bin
// in it (the 32-byte digests of ledger.Digest) written as lowercase hex, as
// the hex strings of older payload versions were, and a payload stored as
// the array of its fields (ledger.Positional) as the object of their
// names, as the maps of older versions were — with the fields its version
// leaves to the event's subjects (events.SubjectFieldNames) taken from them.
type Line struct {
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

// LineOf is r as Replay writes it; a payload that does not decode is
// written as its bytes, with the error.
func LineOf(r ledger.Record) Line {
	line := Line{Seq: r.Seq, Time: r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), Type: r.Type,
		PayloadVersion: r.Version, Actor: r.Actor, Subjects: r.Subjects, Prev: r.Prev, Hash: r.Hash}
	if line.Subjects == nil {
		line.Subjects = []string{}
	}
	if err := ledger.DecodePayload(r.Payload, &line.Payload); err != nil {
		line.Payload, line.PayloadError = r.Payload, err.Error()
	} else {
		if m, ok := ledger.NamedFields(line.Payload, events.PositionalFields(r.Type, r.Version)); ok {
			for i, name := range events.SubjectFieldNames(r.Type, r.Version) {
				if i < len(r.Subjects) {
					m[name] = r.Subjects[i]
				} else {
					delete(m, name)
				}
			}
			line.Payload = m
		}
		line.Payload = hexBins(line.Payload)
	}
	return line
}

// hexBins returns v, a payload decoded without its type, with every bin
// in it as lowercase hex.
func hexBins(v any) any {
	switch v := v.(type) {
	case []byte:
		return hex.EncodeToString(v)
	case map[string]any:
		for k, e := range v {
			v[k] = hexBins(e)
		}
	case []any:
		for i, e := range v {
			v[i] = hexBins(e)
		}
	}
	return v
}

// Filter selects events; empty fields select everything.
type Filter struct {
	Types                []string
	Task, Session, Actor string
}

// check refuses an id of the other kind or of no kind at all (a
// session's as the task, T-1): it selects nothing by mistake rather than
// because the ledger holds nothing of it. A well-formed id the ledger does
// not hold selects nothing, as it should. Types are not checked: a newer
// binary's are to be found too.
func (f Filter) check() error {
	for _, id := range []struct{ option, id, prefix, kind string }{
		{"task", f.Task, domain.TaskPrefix, "a task id (T-0001)"},
		{"session", f.Session, domain.SessionPrefix, "an audit session id (A-0001)"},
	} {
		if _, ok := domain.ParseID(id.prefix, id.id); id.id != "" && !ok {
			return audit.BadOption(id.option, "%q is not %s", id.id, id.kind)
		}
	}
	return nil
}

// Match reports whether r passes every field of f.
func (f Filter) Match(r ledger.Record) bool {
	return (len(f.Types) == 0 || slices.Contains(f.Types, r.Type)) &&
		(f.Task == "" || slices.Contains(r.Subjects, f.Task)) &&
		(f.Session == "" || slices.Contains(r.Subjects, f.Session)) &&
		(f.Actor == "" || r.Actor == f.Actor)
}

// ReplayOptions tune Replay.
type ReplayOptions struct {
	From     uint64        // first seq (>= 1)
	To       uint64        // last seq, inclusive; 0: the head (with Follow, no end)
	Chunk    uint64        // events per read transaction (> 0)
	Follow   bool          // keep writing events as they are appended, until ctx ends
	Interval time.Duration // with Follow, how often to look for new events (> 0)
	Filter   Filter
}

// Validate checks o on its own (Replay also checks To against the head):
// an option out of its range is an *audit.OptionError.
func (o ReplayOptions) Validate() error {
	switch {
	case o.From == 0:
		return audit.BadOption("from", "must be at least 1 (seqs start at 1)")
	case o.To != 0 && o.To < o.From:
		return audit.BadOption("to", "%d is before from %d", o.To, o.From)
	case o.Interval <= 0:
		return audit.BadOption("interval", "must be positive")
	case o.Chunk == 0:
		return audit.BadOption("chunk", "must be positive")
	}
	return o.Filter.check()
}

// Replay writes the events of l that opts.Filter selects to w as JSON
// lines (Line), in seq order, checking every link as it reads (Replayer),
// flushed after each chunk. It ends at opts.To or the head, or with
// Follow when ctx ends (a nil error). Invalid options, or a To beyond the
// head (a From past the seq after it) without Follow, are an
// *audit.OptionError, before anything is written. A broken chain stops it
// with a *ledger.IntegrityError, an event that does not decode with an
// error wrapping ledger.ErrMalformed that names its seq.
func Replay(ctx context.Context, l *boltstore.Store, w io.Writer, opts ReplayOptions) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	rp := NewReplayer(l, opts.From, opts.Chunk)
	for {
		var end uint64
		// Each look for new events also checks that the file still holds
		// what was written (Still): with Follow, it may be replaced.
		if err := l.View(func(tx *boltstore.Tx) error { end = tx.Head().Seq; return rp.Still(tx) }); err != nil {
			return err
		}
		if !opts.Follow && opts.To > end {
			return beyondHead("to", opts.To, end)
		}
		if !opts.Follow && opts.From > end+1 {
			// end+1, the next seq, is where an incremental reader
			// starts: nothing yet, not a mistake.
			return beyondHead("from", opts.From, end)
		}
		if opts.To != 0 {
			end = min(end, opts.To)
		}
		for rp.Next() <= end {
			err := rp.ReadChunk(end, func(r ledger.Record) error {
				if !opts.Filter.Match(r) {
					return nil
				}
				line.Reset()
				if err := enc.Encode(LineOf(r)); err != nil {
					return err
				}
				_, err := bw.Write(audit.SafeJSON(line.Bytes()))
				return err
			})
			if errors.Is(err, ledger.ErrMalformed) {
				err = fmt.Errorf("seq %d: %w", rp.Next(), err)
			}
			if ferr := bw.Flush(); err == nil {
				err = ferr
			}
			if err != nil || ctx.Err() != nil {
				return err
			}
		}
		if !opts.Follow || (opts.To != 0 && rp.Next() > opts.To) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: the normal end of Follow
		case <-time.After(opts.Interval):
		}
	}
}

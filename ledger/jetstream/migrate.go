package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// ErrNotEmpty: the stream holds events that are not a prefix of the file
// Migrate copies (another ledger's, or more than the file holds).
var ErrNotEmpty = errors.New("migrate copies into a new, empty stream, or one holding a prefix of the file (an interrupted migrate)")

// ErrFileWritten: the file Migrate copied was written while it copied.
var ErrFileWritten = errors.New("the file was written during the migration")

// A MismatchError says how the stream Migrate wrote differs from the file.
type MismatchError struct{ Detail string }

func (e *MismatchError) Error() string { return e.Detail }

func mismatch(format string, args ...any) error { return &MismatchError{fmt.Sprintf(format, args...)} }

// Migrated is what Migrate copied: the stream's size, head and root, read
// back from the stream, and how many events it held before (a migrate
// interrupted and run again).
type Migrated struct {
	Stream string      `json:"stream"`
	Size   uint64      `json:"size"`
	Head   ledger.Hash `json:"head"`
	Root   ledger.Hash `json:"root"`
	Held   uint64      `json:"held"`
}

// migrateBatch is how many events one append to the stream carries.
const migrateBatch = 256

// Migrate verifies src as Store.Verify does (every event, link and Merkle
// node), copies every event of it, byte for byte, into the stream of r,
// then reads the whole stream back and checks it is one unbroken chain
// whose head and root equal src's. A stream that already holds the file's
// first events (a migrate interrupted, or told the file was written
// meanwhile) gets the rest: its last event must be the file's, byte for
// byte, and the read back checks the whole. progress, if set, is called as
// events are copied.
//
// A stream holding anything else is ErrNotEmpty (wrapped); a damaged src
// is refused before anything is copied, with Verify's error (a
// *ledger.IntegrityError, or boltstore.ErrDamaged); a stream that does not
// read back as src is a *ledger.IntegrityError or a *MismatchError; a file
// whose head moved while it was copied is ErrFileWritten (wrapped: the
// stream holds what the file held when the copy began, and Migrate run
// again once its writers are stopped copies the rest); anything else is
// I/O.
func Migrate(ctx context.Context, src *boltstore.Store, r *Replica, progress func(done, total uint64)) (Migrated, error) {
	res := Migrated{Stream: r.opts.Stream}
	info, err := r.Info(ctx)
	if err != nil {
		return res, err
	}
	// The file is verified whole before anything is copied: a stream
	// denies deletes, so a damaged event copied into it could never be
	// taken out again.
	rep, err := src.Verify(ctx, boltstore.VerifyOptions{})
	if err != nil {
		return res, fmt.Errorf("the file to migrate: %w", err)
	}
	head, root := ledger.Head{Seq: rep.Size, Hash: rep.Head}, rep.Root
	res.Held = info.State.LastSeq
	if err := r.heldPrefix(src, res.Held, head.Seq); err != nil {
		return res, err
	}
	for seq := res.Held + 1; seq <= head.Seq; {
		end := min(seq+migrateBatch, head.Seq+1)
		var batch [][]byte
		if err := src.View(func(tx *boltstore.Tx) error {
			return tx.ScanRaw(seq, end, func(_ uint64, raw []byte) error {
				batch = append(batch, bytes.Clone(raw))
				return nil
			})
		}); err != nil {
			return res, err
		}
		if uint64(len(batch)) != end-seq {
			return res, mismatch("the file holds %d of events %d..%d", len(batch), seq, end-1)
		}
		// Appending at seq-1 only: nothing else may have written the stream.
		if err := r.Append(ledger.Head{Seq: seq - 1}, batch); err != nil {
			return res, fmt.Errorf("append events %d..%d: %w", seq, end-1, err)
		}
		if progress != nil {
			progress(end-1, head.Seq)
		}
		seq = end
	}
	if err := r.checkCopy(&res, head.Seq); err != nil {
		return res, err
	}
	if res.Head != head.Hash || res.Root != root {
		return res, mismatch("stream %s's head %v and root %v differ from the file's %v and %v", res.Stream, res.Head, res.Root, head.Hash, root)
	}
	var now ledger.Head
	if err := src.View(func(tx *boltstore.Tx) error { now = tx.Head(); return nil }); err != nil {
		return res, err
	}
	if now.Seq != head.Seq {
		return res, fmt.Errorf("%w: stream %s holds its %d events as they were when the copy began, the file now %d: stop its writers and migrate again to copy the rest",
			ErrFileWritten, res.Stream, head.Seq, now.Seq)
	}
	return res, nil
}

// heldPrefix checks that the held events the stream holds are the first
// of the file's size: none, or an unbroken chain whose last event is the
// file's event held, byte for byte.
func (r *Replica) heldPrefix(src *boltstore.Store, held, size uint64) error {
	if held == 0 {
		return nil
	}
	if held > size {
		return fmt.Errorf("stream %s already holds %d events, the file %d; %w", r.opts.Stream, held, size, ErrNotEmpty)
	}
	var in Migrated
	if err := r.checkCopy(&in, held); err != nil {
		var ie *ledger.IntegrityError
		var me *MismatchError
		if errors.As(err, &ie) || errors.As(err, &me) {
			// Not one chain from event 1: something else (a message
			// anyone published to the subject), not damage to a copy.
			return fmt.Errorf("stream %s already holds %d messages that are no ledger's first events (%v); %w", r.opts.Stream, held, err, ErrNotEmpty)
		}
		return err
	}
	var want ledger.Hash
	if err := src.View(func(tx *boltstore.Tx) error {
		return tx.ScanRaw(held, held+1, func(_ uint64, raw []byte) error { want = ledger.LeafHash(raw); return nil })
	}); err != nil {
		return err
	}
	if in.Head != want {
		return fmt.Errorf("stream %s already holds %d events, and its event %d is not the file's; %w", r.opts.Stream, held, held, ErrNotEmpty)
	}
	return nil
}

// checkCopy reads the whole stream back, independently of the copy: events
// 1..size in order, each linking to the one before, and computes the head
// and the RFC 9162 root of the log it holds.
func (r *Replica) checkCopy(res *Migrated, size uint64) error {
	var tree ledger.Frontier
	err := r.Scan(1, func(seq uint64, raw []byte) error {
		rec, err := ledger.DecodeRecord(raw)
		switch {
		case err != nil:
			return &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemMalformed, Detail: err.Error()}
		case rec.Seq != seq:
			return &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemSeq, Detail: fmt.Sprintf("the event claims seq %d", rec.Seq)}
		case rec.Prev != res.Head:
			return &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemLink, Want: res.Head, Got: rec.Prev}
		}
		res.Head = ledger.LeafHash(raw)
		res.Size = seq
		tree.Append(res.Head)
		return nil
	})
	if err != nil {
		return fmt.Errorf("check the stream: %w", err)
	}
	if res.Size != size {
		return mismatch("the stream holds %d events, the file %d", res.Size, size)
	}
	res.Root = tree.Root()
	return nil
}

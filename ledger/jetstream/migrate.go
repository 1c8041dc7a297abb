package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// ErrNotEmpty: Migrate copies only into a new, empty stream.
var ErrNotEmpty = errors.New("migrate copies into a new, empty stream")

// A MismatchError says how the stream Migrate wrote differs from the file.
type MismatchError struct{ Detail string }

func (e *MismatchError) Error() string { return e.Detail }

func mismatch(format string, args ...any) error { return &MismatchError{fmt.Sprintf(format, args...)} }

// Migrated is what Migrate copied: the stream's size, head and root, read
// back from the stream.
type Migrated struct {
	Stream string      `json:"stream"`
	Size   uint64      `json:"size"`
	Head   ledger.Hash `json:"head"`
	Root   ledger.Hash `json:"root"`
}

// migrateBatch is how many events one append to the stream carries.
const migrateBatch = 256

// Migrate verifies src as Store.Verify does (every event, link and Merkle
// node), copies every event of it, byte for byte, into the empty stream
// of r, then reads the whole stream back and checks it is one unbroken
// chain whose head and root equal src's. progress, if set, is called as
// events are copied. A stream that is not empty is ErrNotEmpty (wrapped);
// a damaged src is refused before anything is copied, with Verify's
// error (a *ledger.IntegrityError, or boltstore.ErrDamaged); a stream
// that does not read back as src is a *ledger.IntegrityError or a
// *MismatchError; anything else is I/O.
func Migrate(ctx context.Context, src *boltstore.Store, r *Replica, progress func(done, total uint64)) (Migrated, error) {
	res := Migrated{Stream: r.opts.Stream}
	info, err := r.Info(ctx)
	if err != nil {
		return res, err
	}
	if info.State.LastSeq != 0 {
		return res, fmt.Errorf("stream %s already holds %d events; %w", res.Stream, info.State.LastSeq, ErrNotEmpty)
	}
	// The file is verified whole before anything is copied: a stream
	// denies deletes, so a damaged event copied into it could never be
	// taken out again.
	rep, err := src.Verify(ctx, boltstore.VerifyOptions{})
	if err != nil {
		return res, fmt.Errorf("the file to migrate: %w", err)
	}
	head, root := ledger.Head{Seq: rep.Size, Hash: rep.Head}, rep.Root
	if head.Seq == 0 {
		root = ledger.Hash{}
	}
	for seq := uint64(1); seq <= head.Seq; {
		end := min(seq+migrateBatch, head.Seq+1)
		var batch [][]byte
		if err := src.View(func(tx *boltstore.Tx) error {
			return tx.Scan(seq, end, func(r ledger.Record) error {
				batch = append(batch, append([]byte(nil), r.Raw...))
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
	return res, nil
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
	if size > 0 {
		res.Root = tree.Root()
	}
	return nil
}

package projections

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// A rebuild refolds the whole log into a scratch file of its own, reading
// the ledger in chunks (a short read transaction each, on the file kept
// open from one to the next while no other process waits for it) while
// agents keep committing, and folding each chunk while the next is read
// and prepared.
// Then, in one hold of the ledger file (boltstore.Store.UpdateSeries), one
// transaction drops the live projections and the next copies the scratch
// file's in and folds the events appended since it caught up: bbolt reuses
// the pages the first freed for the second, so the file does not grow by
// a second set of projections, and nobody sees the file between the two.
// A process that dies between them leaves no projections (no version),
// which a running process's next call (ErrNoProjections) or the next start
// rebuilds (NeedsRebuild); the log is never written.

// rebuildChunk bounds what one read transaction of a rebuild reads: this
// many events, or rebuildChunkBytes of them, whichever comes first.
const (
	rebuildChunk      = 4096
	rebuildChunkBytes = 2 << 20
)

// txChunks is how many chunks the refold folds in one transaction of the
// scratch file (the last one fewer, if the log ends first): a commit
// writes every page its chunks dirtied, and consecutive chunks dirty
// mostly the same leaves and branches (a chunk per commit wrote ~42,000
// pages at 1M events). The transaction waits for the reading goroutine's
// next chunk rather than commit with the chunks read so far: where reading
// is the slower half, that committed one chunk in two transactions out of
// five (109 commits at 1M events instead of 62), each writing its pages
// and decoding its nodes again. The pages they map are released after
// each.
const txChunks = 4

// afterRefoldTx, when set (tests), is told how many chunks each
// transaction of a rebuild's refold folded, once it committed.
var afterRefoldTx func(chunks int)

// RebuildOptions tune Rebuild.
type RebuildOptions struct {
	// Force rebuilds projections of this binary's version too; otherwise
	// Rebuild leaves them as they are if another process rebuilt them
	// while it refolded.
	Force bool
	// PastHead refolds even projections folded past the log's head (the
	// log cut short, or their counter damaged), which is otherwise
	// ErrDamaged: the operator's choice, which wipes the one trace of a
	// cut (logbook rebuild --past-head).
	PastHead bool
	// Progress, if set, is told after each chunk how far the refold is.
	Progress func(done, total uint64)
	// Chunk is how many events one read transaction reads at most (0:
	// 4,096; fewer if they take more than 2 MiB).
	Chunk uint64
}

// Rebuilt is what Rebuild did.
type Rebuilt struct {
	Swapped bool          // the projections were replaced (not: another process rebuilt them first)
	Applied uint64        // the seq the projections hold after it
	Held    time.Duration // how long the ledger file was held to put them in place
}

// copyBudget is about how many bytes of keys and values (and of bbolt's
// entry per key) one transaction of the swap copies: the transaction keeps what it writes in memory until it
// commits, so the copy's memory does not grow with the projections.
var copyBudget = 4 << 20

// betweenSwapTxs, when set (tests), runs at the start of each transaction
// that copies the rebuilt projections in, once the one that dropped the
// old ones and n copying ones have committed: an error rolls it back, as a
// process dying there would.
var betweenSwapTxs func(n int) error

// Rebuild refolds l's whole log, at this binary's version, and puts the
// result in place of l's projections without growing the file. Other
// processes keep working meanwhile, except while the file is held for the
// swap (Rebuilt.Held: a copy of the projections and the events since).
func Rebuild(l *boltstore.Store, opts RebuildOptions) (Rebuilt, error) {
	var res Rebuilt
	// Beside the ledger, on the file system that holds it (the old
	// projections' pages take the new ones), else in the temp dir. The
	// name is short whatever the ledger's (a long one left no room for a
	// suffix) and says what wrote it.
	// A log cut short is refused before the refold, and again under the
	// hold that swaps.
	if !opts.PastHead {
		if err := l.View(CheckFolded); err != nil {
			return res, err
		}
	}
	const prefix = ".logbook-rebuild-"
	scratch, err := boltstore.OpenScratch(filepath.Dir(l.Path()), prefix, "")
	if err != nil {
		var err2 error
		if scratch, err2 = boltstore.OpenScratch("", prefix, ""); err2 != nil {
			return res, fmt.Errorf("rebuild: no room for the scratch file beside the ledger (%w) nor in the temp dir (%w)", err, err2)
		}
	}
	defer scratch.Close()
	if err := scratch.Update(Reset); err != nil {
		return res, err
	}
	chunk := opts.Chunk
	if chunk == 0 {
		chunk = rebuildChunk
	}
	// A head names a seq of at most 2^62 (boltstore): a larger chunk reads
	// the same, and next+chunk must not wrap around.
	chunk = min(chunk, 1<<62)
	if err := refoldInto(scratch, l, chunk, opts.Progress); err != nil {
		return res, err
	}
	// What the refold left on the heap is garbage now: give it back to
	// the system before the swap, whose copy transactions would otherwise
	// come on top of it (peak RSS at 1M events 98-105 MB -> 79-92 MB with
	// the copy's budget counting keys: one collection, outside the hold).
	debug.FreeOSMemory()
	errCurrent := errors.New("rebuilt by another process")
	// dropping: the first transaction ran; dropped: it committed (the
	// series goes on only then); copies: copying ones that committed.
	dropping, dropped, copies := false, false, 0
	err = scratch.View(func(stx *boltstore.Tx) error {
		var err error
		res.Held, err = l.UpdateSeries(func(tx *boltstore.Tx) (done bool, err error) {
			if !dropping {
				if err := CheckFolded(tx); err != nil && !opts.PastHead {
					return false, err
				}
				if !opts.Force {
					if need, err := NeedsRebuild(tx); err != nil {
						return false, err
					} else if !need {
						return false, errCurrent
					}
				}
				dropping = true
				return false, tx.DropSpaces()
			}
			dropped = true
			if betweenSwapTxs != nil {
				if err := betweenSwapTxs(copies); err != nil {
					return false, err
				}
			}
			// The meta space (version, applied seq) last: until it is
			// there, the projections are missing, not half-built.
			if done, err = tx.CopySpaces(stx, spMeta, copyBudget); err != nil || !done {
				copies++
				return false, err
			}
			if _, err := CatchUp(tx, 0); err != nil {
				return false, err
			}
			_, res.Applied, err = State(tx)
			return true, err
		})
		return err
	})
	switch {
	case errors.Is(err, errCurrent):
		return res, nil
	case err != nil && dropped:
		return res, fmt.Errorf("%w (the old projections were dropped: the next call of a running server, rebuild, or start of a server folds them again)", err)
	case err != nil:
		return res, err
	}
	res.Swapped = true
	return res, nil
}

// checkLink is nil if r, about to be folded, links to link (the hash of
// the event before it; zero before event 1) and, if it is head's event,
// hashes to head's hash; else the damage (boltstore.ErrDamaged) a fold
// must stop at: verify says where and how.
func checkLink(r ledger.Record, link ledger.Hash, head ledger.Head) error {
	var e *ledger.IntegrityError
	switch {
	case r.Prev != link:
		e = &ledger.IntegrityError{Seq: r.Seq, Problem: ledger.ProblemLink, Want: link, Got: r.Prev,
			Detail: fmt.Sprintf("it does not link to event %d's hash: one of the two was changed", r.Seq-1)}
	case r.Seq == head.Seq && r.Hash != head.Hash:
		e = &ledger.IntegrityError{Seq: r.Seq, Problem: ledger.ProblemHead, Want: head.Hash, Got: r.Hash,
			Detail: "the last event's bytes do not hash to the recorded head"}
	default:
		return nil
	}
	return fmt.Errorf("%w: the log's hash chain is broken at %w (run logbook verify on a copy); nothing was folded past it", boltstore.ErrDamaged, e)
}

// foldChunk is consecutive events of the log to fold, with the roots their
// session.finalized events record and what Prepare worked out of them.
type foldChunk struct {
	pre   *Prepared
	mem   chunkMem // what pre.Recs are decoded into
	roots map[uint64]ledger.Hash
	head  uint64 // the log's head when the chunk was read
	err   error  // reading or decoding failed after pre.Recs (nil: none)
}

// refoldInto folds l's whole log, up to l's head, into scratch, which
// Rebuild has just reset: a reading goroutine reads a chunk in a short
// read transaction of l, decodes and prepares it, while this one folds the
// chunk before. It returns once a chunk reached the head. Every event
// folded is checked to link to the one before it (the first to none, the
// last to the head: readChunk), so a log whose bytes were changed is
// refused, never folded.
func refoldInto(scratch, l *boltstore.Store, chunk uint64, progress func(done, total uint64)) error {
	// The reading goroutine keeps the ledger file open from chunk to
	// chunk while no other process waits for it (boltstore.Reading), and
	// lets it go before refoldInto returns.
	read := l.Reading()
	readDone := make(chan struct{})
	defer func() { <-readDone }()
	chunks := make(chan foldChunk, 1)
	// The memory chunks are decoded into goes round, from the reading
	// goroutine to the fold and back once folded, rather than allocated
	// for each chunk: one being read, one waiting, those one transaction
	// folds and the one folded before them (prev). Fewer bytes allocated,
	// fewer collections.
	free := make(chan chunkMem, txChunks+3)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(readDone)
		defer read.Close()
		defer close(chunks)
		var link ledger.Hash // the hash of event next-1: none before event 1
		var buf eventBytes   // the chunk's stored bytes: this goroutine's only
		for next := uint64(1); ; {
			var mem chunkMem
			select {
			case mem = <-free:
			default:
			}
			c, more := readChunk(read, next, chunk, link, &buf, mem)
			if n := len(c.pre.Recs); n > 0 {
				next, link = c.pre.Recs[n-1].Seq+1, c.pre.Recs[n-1].Hash
			}
			// Waiting for the fold, let the file go once another process
			// waits for it.
			for sent := false; !sent; {
				select {
				case chunks <- c:
					sent = true
				case <-stop:
					return
				case <-read.Wait():
					read.Poll()
				}
			}
			if !more || c.err != nil {
				return
			}
		}
	}()
	var refold Refold
	// near is the records of the chunks the transaction under way folded,
	// after those of the chunk folded just before it (a lump of the index
	// begun there).
	var near [][]ledger.Record
	// prevMem is the memory of the chunk folded last; folded, that of the
	// chunks folded before it in the transaction under way: given back to
	// the reading goroutine once it commits.
	var prevMem chunkMem
	var folded []chunkMem
	// An earlier event (the index reads a lump's events, and the one that
	// recorded what it takes out): from near, else from the ledger.
	event := func(seq uint64) (r ledger.Record, err error) {
		for _, in := range slices.Backward(near) {
			if n := len(in); n > 0 && seq >= in[0].Seq && seq <= in[n-1].Seq {
				return in[seq-in[0].Seq], nil
			}
		}
		err = l.View(func(tx *boltstore.Tx) error {
			r, err = tx.Event(seq)
			r.Raw = nil // valid only in this transaction
			return err
		})
		return r, err
	}
	// fold folds c in tx, after the chunks folded in tx before it, and
	// reports its progress.
	fold := func(tx *boltstore.Tx, c foldChunk) error {
		recs := c.pre.Recs
		if len(recs) == 0 {
			return nil
		}
		root := func(size uint64) (ledger.Hash, error) {
			h, ok := c.roots[size]
			if !ok {
				return h, fmt.Errorf("no root read at size %d", size)
			}
			return h, nil
		}
		near = append(near, recs)
		if err := refold.Add(tx, c.pre, root, event); err != nil {
			return err
		}
		if progress != nil {
			progress(recs[len(recs)-1].Seq, c.head)
		}
		return nil
	}
	for c := range chunks {
		// One transaction of the scratch file folds this chunk and the
		// next ones, txChunks in all, waiting for them to be read, and
		// writes what they changed once (Refold.Flush): each commit writes
		// the pages its chunks dirtied, and consecutive chunks dirty
		// mostly the same.
		var cerr error
		inTx := 0 // chunks with records this transaction folded
		if n := len(near); n > 0 {
			near = append(near[:0], near[n-1])
		}
		if err := scratch.Update(func(tx *boltstore.Tx) error {
			for n := 1; ; n++ {
				if err := fold(tx, c); err != nil {
					return err
				}
				if len(c.pre.Recs) > 0 { // (else not near's last)
					folded = append(folded, prevMem)
					prevMem = c.mem
					inTx++
				}
				if cerr = c.err; cerr != nil || n == txChunks {
					break
				}
				next, ok := <-chunks
				if !ok {
					break
				}
				c = next
			}
			return refold.Flush()
		}); err != nil {
			return fmt.Errorf("refold: %w", err)
		}
		if afterRefoldTx != nil {
			afterRefoldTx(inTx)
		}
		if err := scratch.ReleaseMapped(); err != nil {
			return err
		}
		for _, mem := range folded {
			if cap(mem.recs) > 0 {
				clear(mem.recs[:cap(mem.recs)]) // what they refer to is garbage now
				mem.pre.Release()
				select {
				case free <- mem:
				default:
				}
			}
		}
		folded = folded[:0]
		if cerr != nil {
			return cerr
		}
	}
	return nil
}

// chunkMem is the memory a chunk's events are decoded into: the records,
// the payloads they hold, and what was prepared of them.
type chunkMem struct {
	recs     []ledger.Record
	payloads []byte
	pre      *Prepared
}

// eventBytes is the stored bytes of a chunk's events, one after the
// other: event i ends at ends[i].
type eventBytes struct {
	raw  []byte
	ends []int
}

// readChunk reads the events of l from seq next on, chunk of them at most, in a
// short read transaction (its bytes copied out), then decodes and prepares
// them and reads the roots their session.finalized events record. more
// says whether the log went on past the chunk when it was read. link is
// the hash of event next-1 (zero for event 1): each event must link to the
// one before it, and the head's to the head's hash, else the chunk ends
// before it with an IntegrityError.
func readChunk(l *boltstore.Reading, next, chunk uint64, link ledger.Hash, buf *eventBytes, mem chunkMem) (c foldChunk, more bool) {
	var head ledger.Head
	buf.raw, buf.ends = buf.raw[:0], buf.ends[:0]
	err := l.View(func(tx *boltstore.Tx) error {
		head = tx.Head()
		c.head = head.Seq
		end := min(c.head+1, next+chunk)
		errFull := errors.New("chunk full")
		err := tx.ScanRaw(next, end, func(_ uint64, raw []byte) error {
			if len(buf.raw)+len(raw) > rebuildChunkBytes && len(buf.ends) > 0 {
				return errFull
			}
			buf.raw = append(buf.raw, raw...)
			buf.ends = append(buf.ends, len(buf.raw))
			return nil
		})
		if errors.Is(err, errFull) {
			err = nil
		}
		return err
	})
	// The events' payloads, copied out of buf, fit in as many bytes.
	if cap(mem.payloads) < len(buf.raw) {
		mem.payloads = make([]byte, 0, len(buf.raw))
	}
	recs := slices.Grow(mem.recs[:0], len(buf.ends))
	var finalized []uint64
	var dec ledger.EventDecoder
	dec.Into(mem.payloads)
	for i, start := 0, 0; i < len(buf.ends); start, i = buf.ends[i], i+1 {
		if err != nil {
			break
		}
		var r ledger.Record
		// The bytes are copied out of buf, which the next chunk reuses
		// (the fold does not read them: Raw is nil).
		r, err = dec.DecodeRecord(buf.raw[start:buf.ends[i]])
		r.Raw = nil
		if err != nil {
			err = fmt.Errorf("event %d: %w", next+uint64(len(recs)), err)
		} else if r.Seq != next+uint64(len(recs)) {
			err = fmt.Errorf("event %d: stored at %d: %w", r.Seq, next+uint64(len(recs)), ledger.ErrMalformed)
		} else if err = checkLink(r, link, head); err == nil {
			link = r.Hash
			recs = append(recs, r)
			if r.Type == events.TypeSessionFinalized {
				finalized = append(finalized, r.Seq)
			}
		}
	}
	if len(finalized) > 0 {
		c.roots = make(map[uint64]ledger.Hash, len(finalized))
		rerr := l.View(func(tx *boltstore.Tx) error {
			for _, seq := range finalized {
				h, err := tx.Root(seq)
				if err != nil {
					return err
				}
				c.roots[seq] = h
			}
			return nil
		})
		if rerr != nil {
			recs, err = recs[:0], rerr
		}
	}
	if err == nil && len(buf.ends) == 0 && next <= c.head {
		err = fmt.Errorf("event %d: %w", next, boltstore.ErrNotFound)
	}
	c.pre, c.err = PrepareInto(mem.pre, recs), err
	c.mem = chunkMem{recs, mem.payloads, c.pre}
	return c, err == nil && len(recs) > 0 && recs[len(recs)-1].Seq < c.head
}

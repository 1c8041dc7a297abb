package boltstore

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/cespare/xxhash/v2"
	bolt "go.etcd.io/bbolt"
)

// The journal: one flush per commit instead of bbolt's two.
//
// bbolt makes a commit durable with two flushes: its pages, then its meta
// page. On a disk whose every fdatasync is a whole cache flush, that second
// flush and the scattered pages were most of a call's time
// (BenchmarkCommitFloor). So while a process holds the file, its commits go
// to bbolt unsynced — the kernel's page cache has them, whole, for every
// process and after any process dies — and each is made durable by one
// record in a journal beside the file (<file>.journal): the events the
// commit appended, written with one fdatasync into blocks written before
// (written before bbolt writes the commit's pages and flushed after them:
// writeRecord, syncRecord).
// The events are the ledger; everything else in a commit (Merkle nodes,
// projections) is folded from them again.
//
// What a stopped machine (power loss, kernel panic) leaves must still be
// recoverable, and bbolt's unsynced pages may then be torn. So a generation
// of the journal starts from a state of the file that is on disk (a
// checkpoint, T): its header, durable before the first unsynced write,
// holds T's meta page and names the boot. For the generation's lifetime the
// Store keeps a read transaction open on T (the pin), so bbolt reuses none
// of the pages T's tree is made of: whatever the unsynced commits wrote,
// T's tree is intact on disk. A generation ends with an fdatasync of the
// file (every commit since T on disk, in order with nothing else after)
// and, durably, a header that no longer holds (the next generation's, or
// none) — only then is the pin released.
//
// Open, in a boot other than the header's, writes T's meta page back into
// both of bbolt's meta slots (the file is then T, as it was on disk) and
// ingests the journal's events past T's head, each checked against the one
// before (Tx.Ingest), in one synced commit; the projections fold them as
// they fold any process's events (Refold, in a commit of its own). In the
// header's own boot the page cache holds every commit bbolt made, whole,
// but the records may hold commits answered that it had not made yet
// (pending.go): with no records Open syncs the file and retires the
// header; with some, a writer recovers as in another boot. A reader
// (Options.ReadOnly) cannot write the file back: it is refused with
// ErrUnrecovered until a writer opens the ledger — in the header's own
// boot only if the records hold events past the file's head, and the
// Store's open then recovers them as a writer if it may write the file.
//
// A generation lasts at most genCommits commits, and ends with the hold:
// no other process commits while a header holds (every writer's open
// retires or recovers it first). bbolt remaps its file, which waits for
// every read transaction to end, when the file outgrows the mapping: a
// journaling Store maps journalMap bytes so that the pin never meets a
// remap (a generation ends before the file comes near it).

// ErrUnrecovered: a read-only Open found the ledger's journal holding
// commits that only a writer can bring back (the machine stopped while a
// process was committing).
var ErrUnrecovered = errors.New("the ledger's journal holds commits to recover")

// ErrSyncFailed is returned (wrapped) by every commit of a Store after an
// fdatasync of its file failed while a journal header held
// (fileSyncFailed): the process must be restarted, and the open recovers.
var ErrSyncFailed = errors.New("the ledger file's sync failed")

// ErrOutcomeUnknown is returned (wrapped) for a commit whose making durable
// failed part way (a write or a flush of the journal, then of the file):
// it may or may not be in the ledger once the file is next opened.
var ErrOutcomeUnknown = errors.New("the commit's outcome is unknown: the disk failed while it was made durable")

const (
	journalSuffix = ".journal"
	// journalSize is the journal file's size, written once with zeros so
	// that records overwrite blocks the file system has already
	// allocated (an fdatasync then commits data alone).
	journalSize = 1 << 20
	// journalRecords is where records start: the header's block is never
	// rewritten by a record.
	journalRecords = 4096
	// genCommits bounds a generation. The pin keeps every page freed since T
	// from reuse, so the file grows by a generation's pages once: about 5
	// per commit of one call.
	genCommits = 64
	// metaLen is what of a meta page the header keeps: the page header and
	// bbolt's meta (magic, version, page size, flags, root, freelist,
	// high-water mark, txid, checksum): 80 bytes.
	metaLen = 80
)

// journalMap is the mapping a journaling Store asks bbolt for (address
// space, not memory). Where the process may not map that much (a limit on
// its address space), the Store maps as bbolt would and commits synced.
// (A 32-bit int cannot hold it, nor runs a journal: journalOS.)
var journalMap = int(min(64<<30, math.MaxInt))

// journalLimit is the file size past which no generation runs (half the
// mapping): no commit then grows the file past journalMap.
func journalLimit() int64 { return int64(journalMap / 2) }

// journalMagic begins every header this logbook writes. Its records may
// hold commits the file lacks (pending.go); a header of journalMagic1,
// which an older logbook writes, held records of commits in the file
// whole in its own boot. An older logbook takes a header of this magic
// for no header, so for a damaged one if records follow that the file
// lacks (headerless): it refuses the ledger rather than drop commits
// answered.
var journalMagic = [8]byte{'l', 'b', 'j', 'o', 'u', 'r', 'n', '2'}

var journalMagic1 = [8]byte{'l', 'b', 'j', 'o', 'u', 'r', 'n', '1'}

// journalSentinel is the one event of every generation's first record
// under a header of journalMagic: not an event (0xc1 is a byte msgpack
// never uses), skipped by readRecords. An older logbook that opens the
// journal in the header's boot reads the header as none, and the file
// must hold the events of the records that follow (headerless, check):
// this one it cannot decode, so it refuses the ledger — rather than
// retire the header of commits in the page cache without syncing the
// file first, as it would were every record's events found there.
var journalSentinel = []byte("\xc1logbook pending commits")

// isMagic tells whether b begins as a header of either magic.
func isMagic(b []byte) bool {
	return bytes.HasPrefix(b, journalMagic[:]) || bytes.HasPrefix(b, journalMagic1[:])
}

// header is a generation's first block.
type header struct {
	salt     uint64 // random, in every record of the generation
	boot     []byte // the kernel's boot id when it began
	pageSize uint32
	meta     [metaLen]byte // T's meta page
	// rootSum and freeSum are the xxhash of T's root page and freelist
	// page: recovery writes T back only onto the file T is from.
	rootSum, freeSum uint64
}

const headerLen = 8 + 8 + 1 + 64 + 4 + metaLen + 8 + 8 + 8

func (h *header) encode() []byte {
	b := make([]byte, 0, headerLen)
	b = append(b, journalMagic[:]...)
	b = binary.LittleEndian.AppendUint64(b, h.salt)
	var boot [64]byte
	n := copy(boot[:], h.boot)
	b = append(b, byte(n))
	b = append(b, boot[:]...)
	b = binary.LittleEndian.AppendUint32(b, h.pageSize)
	b = append(b, h.meta[:]...)
	b = binary.LittleEndian.AppendUint64(b, h.rootSum)
	b = binary.LittleEndian.AppendUint64(b, h.freeSum)
	return binary.LittleEndian.AppendUint64(b, xxhash.Sum64(b))
}

// decodeHeader reads a header; ok is false for none (zeros, a retired or
// torn header).
func decodeHeader(b []byte) (h header, ok bool) {
	if len(b) < headerLen || !isMagic(b) {
		return h, false
	}
	b = b[:headerLen]
	if xxhash.Sum64(b[:headerLen-8]) != binary.LittleEndian.Uint64(b[headerLen-8:]) {
		return h, false
	}
	h.salt = binary.LittleEndian.Uint64(b[8:])
	n := int(b[16])
	if n > 64 {
		return h, false
	}
	h.boot = append([]byte(nil), b[17:17+n]...)
	b = b[17+64:]
	h.pageSize = binary.LittleEndian.Uint32(b)
	copy(h.meta[:], b[4:])
	b = b[4+metaLen:]
	h.rootSum = binary.LittleEndian.Uint64(b)
	h.freeSum = binary.LittleEndian.Uint64(b[8:])
	return h, h.salt != 0
}

// The fields of bbolt's meta page that recovery reads (bbolt's layout:
// a 16-byte page header, then magic, version, page size, flags, the root
// bucket (root page, sequence), the freelist page, the high-water mark,
// txid and checksum).
func metaRoot(m []byte) uint64     { return binary.LittleEndian.Uint64(m[32:]) }
func metaFreelist(m []byte) uint64 { return binary.LittleEndian.Uint64(m[48:]) }
func metaTxid(m []byte) uint64     { return binary.LittleEndian.Uint64(m[64:]) }

// A record: salt, body length, the body (event count, then each event's
// length and stored bytes), and the xxhash of all that.
func encodeRecord(dst []byte, salt uint64, events [][]byte) []byte {
	n := 4
	for _, e := range events {
		n += 4 + len(e)
	}
	dst = binary.LittleEndian.AppendUint64(dst, salt)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(events)))
	for _, e := range events {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(e)))
		dst = append(dst, e...)
	}
	return binary.LittleEndian.AppendUint64(dst, xxhash.Sum64(dst))
}

// readRecords returns the events of the generation salt's records in the
// journal body b (the file from journalRecords), in order, up to the first
// that is not whole: a record cut short was never acknowledged. One that is
// not whole with a whole record of the generation after it was not cut
// short by a stop (a record is written only once the one before it is on
// disk): the journal was damaged since, and recovering without it would
// drop acknowledged commits in silence — that is ErrDamaged. (A damaged
// last record cannot be told from one cut short.)
func readRecords(b []byte, salt uint64) ([][]byte, error) {
	var out [][]byte
	at, records := 0, 0
	for {
		n, ok := recordAt(b[at:], salt)
		if !ok {
			break
		}
		body := b[at+12 : at+12+n]
		count := binary.LittleEndian.Uint32(body)
		body = body[4:]
		var evs [][]byte
		for range count {
			if len(body) < 4 {
				return nil, fmt.Errorf("%w: journal record %d (at byte %d) holds fewer events than it counts", ErrDamaged, records+1, journalRecords+at)
			}
			m := int(binary.LittleEndian.Uint32(body))
			if m > len(body)-4 {
				return nil, fmt.Errorf("%w: journal record %d (at byte %d) holds an event longer than itself", ErrDamaged, records+1, journalRecords+at)
			}
			if ev := body[4 : 4+m]; !bytes.Equal(ev, journalSentinel) {
				evs = append(evs, ev)
			}
			body = body[4+m:]
		}
		out = append(out, evs...)
		at += 12 + n + 8
		records++
	}
	if later := laterRecord(b, at+1, salt); later >= 0 {
		return nil, fmt.Errorf("%w: journal record %d (at byte %d) is damaged, yet a whole record of its generation follows it (at byte %d): "+
			"recovering would drop commits that were acknowledged; nothing was written", ErrDamaged, records+1, journalRecords+at, journalRecords+later)
	}
	return out, nil
}

// recordAt reports whether b starts with a whole record of the generation
// salt, and its body's length.
func recordAt(b []byte, salt uint64) (n int, ok bool) {
	if len(b) < 16 || binary.LittleEndian.Uint64(b) != salt {
		return 0, false
	}
	n = int(binary.LittleEndian.Uint32(b[8:]))
	if n < 4 || n > len(b)-20 {
		return 0, false
	}
	return n, xxhash.Sum64(b[:12+n]) == binary.LittleEndian.Uint64(b[12+n:])
}

// laterRecord is where the first whole record of the generation salt at or
// after from begins in b, or -1.
func laterRecord(b []byte, from int, salt uint64) int {
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], salt)
	for from < len(b) {
		i := bytes.Index(b[from:], s[:])
		if i < 0 {
			return -1
		}
		if _, ok := recordAt(b[from+i:], salt); ok {
			return from + i
		}
		from += i + 1
	}
	return -1
}

// generation is the journal of the hold that writes it.
type generation struct {
	f       *os.File
	pin     *bolt.Tx
	salt    uint64
	off     int64 // where the next record goes
	commits int
	buf     []byte
}

// journalPath is the journal of the ledger file at path (Beside: every
// name of the file shares it).
func journalPath(path string) string { return Beside(path, journalSuffix) }

// journaling tells whether this Store's commits go through a journal:
// a writer of the shared or held file (not a scratch file, nor a copy of a
// replicated log, which has its own durability) where the boot can be told.
func (l *Store) journaling() bool {
	return journalOS && !l.nomap.Load() && !l.opts.ReadOnly && !l.opts.Scratch && !l.opts.NoSync && l.opts.Replica == nil && NoSyncSupported()
}

// openJournal opens (creating it, full size, the first time) the journal.
func (l *Store) openJournal() (*os.File, error) {
	path := journalPath(l.path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err == nil {
		var ok bool
		if ok, err = isJournal(f); err == nil && !ok {
			err = fmt.Errorf("%s is not a journal (another ledger's file?): left as it is", path)
		}
	}
	if err == nil && fi.Size() < journalSize {
		// Zeros, written: records then overwrite allocated blocks.
		if _, err = f.WriteAt(make([]byte, journalSize-fi.Size()), fi.Size()); err == nil {
			if err = f.Sync(); err == nil {
				err = syncDir(filepath.Dir(path))
			}
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	return f, nil
}

// beginGeneration starts a generation on o from the file's current state,
// which is on disk: the previous generation ended with a sync, the hold
// began on a file every writer leaves synced. Until it returns nil the file
// is committed to as before.
func (l *Store) beginGeneration(o *openFile) error {
	if o.size > journalLimit() {
		return errors.New("journal: the file is too large for the mapping")
	}
	if st, err := statFile(o.file); err != nil || st.links > 1 {
		// Another name of the file would have its own journal beside it,
		// which an open through this name would not see (Beside resolves
		// symbolic links only): its commits are synced.
		return errors.New("journal: the file has more than one name (hard links)")
	}
	if l.jfile != nil && !sameFile(l.jfile, journalPath(l.path)) {
		// The journal was removed or replaced behind this Store's back:
		// records written to the file it has open would be found by no
		// open after a power loss. The one at the path is used (or made).
		l.jfile.Close()
		l.jfile = nil
	}
	if l.jfile == nil {
		f, err := l.openJournal()
		if err != nil {
			return err
		}
		l.jfile = f
	}
	pin, err := o.db.Begin(false)
	if err != nil {
		return err
	}
	g := &generation{f: l.jfile, pin: pin, off: journalRecords}
	if err := l.writeHeader(o, g); err != nil {
		pin.Rollback()
		return err
	}
	o.gen = g
	o.db.NoSync = true
	// A commit that would grow the file past the mapping fails instead
	// (bbolt's ErrMaxSizeReached, before it remaps): commit then ends the
	// generation and commits it synced, without the pin.
	o.db.MaxSize = journalMap
	return nil
}

// writeHeader makes g's header, for the state g.pin sees, durable.
func (l *Store) writeHeader(o *openFile, g *generation) error {
	boot, err := bootID()
	if err != nil {
		return err
	}
	h := header{boot: boot, pageSize: uint32(o.db.Info().PageSize)}
	for h.salt == 0 {
		var b [8]byte
		rand.Read(b[:])
		h.salt = binary.LittleEndian.Uint64(b[:])
	}
	ps := int64(h.pageSize)
	if _, err := o.file.ReadAt(h.meta[:], int64(g.pin.ID()%2)*ps); err != nil {
		return fmt.Errorf("journal: read the meta page: %w", err)
	}
	if metaTxid(h.meta[:]) != uint64(g.pin.ID()) {
		return fmt.Errorf("journal: the meta page of txid %d holds txid %d", g.pin.ID(), metaTxid(h.meta[:]))
	}
	if h.rootSum, h.freeSum, err = pageSums(o.file, h.meta[:], ps); err != nil {
		return err
	}
	// From here on the header may be on disk whatever this returns (a
	// write or a flush that fails may have been carried out): unless it
	// holds, as a generation, it must be retired before the file is
	// committed to again without the pin (retireStale).
	l.heldHeader = &h
	if _, err := g.f.WriteAt(h.encode(), 0); err != nil {
		l.stale = true
		return fmt.Errorf("journal: %w", err)
	}
	// Then the sentinel, flushed with it (written first, it would take the
	// place of the first record of a generation whose header still held).
	sentinel := encodeRecord(nil, h.salt, [][]byte{journalSentinel})
	if _, err := g.f.WriteAt(sentinel, journalRecords); err != nil {
		l.stale = true
		return fmt.Errorf("journal: %w", err)
	}
	g.off = journalRecords + int64(len(sentinel))
	if err := fdatasync(g.f); err != nil {
		l.stale = true
		return fmt.Errorf("journal: %w", err)
	}
	g.salt = h.salt
	if l.generationBegun != nil {
		l.generationBegun()
	}
	return nil
}

// pageSums is the xxhash of the root and freelist pages the meta m names.
func pageSums(f *os.File, m []byte, pageSize int64) (root, free uint64, err error) {
	page := make([]byte, pageSize)
	sum := func(id uint64) (uint64, error) {
		if _, err := f.ReadAt(page, int64(id)*pageSize); err != nil {
			return 0, fmt.Errorf("journal: read page %d: %w", id, err)
		}
		return xxhash.Sum64(page), nil
	}
	if root, err = sum(metaRoot(m)); err == nil {
		free, err = sum(metaFreelist(m))
	}
	return root, free, err
}

// errNoRecord: the commit's record was not written (journalRecord).
var errNoRecord = errors.New("no journal record")

// journalRecord encodes the record of a commit that appended events into
// o's generation's buffer, and tells whether it is to be written: it fits
// in the journal, and the file has one name. A file given another name
// ends the generation now rather than at its 64th commit: an open through
// that name cannot see this journal (Beside resolves symbolic links only),
// and after a restart would write on over the checkpoint this header
// holds.
func (l *Store) journalRecord(o *openFile, events [][]byte) bool {
	g := o.gen
	g.buf = encodeRecord(g.buf[:0], g.salt, events)
	return !o.linked && g.off+int64(len(g.buf)) <= journalSize
}

// writeRecord writes g's encoded record at its place, unflushed: before
// bbolt writes the commit's pages, so that one flush after them
// (syncRecord) makes the commit durable, whatever became of the file's
// unsynced pages. A record written for a commit that then fails is taken
// back (retractRecord). (Written and flushed on a goroutine of its own
// while bbolt wrote the pages, a call cost 30 µs more CPU — the goroutine
// made, two wake-ups of an idle thread — and was answered no sooner:
// BenchmarkServerCall, 243 against 276 cpu-µs, 350 against 380 µs a call.)
func writeRecord(g *generation) error {
	n, err := g.f.WriteAt(g.buf, g.off)
	if err != nil && n == 0 {
		return fmt.Errorf("%w: %w", errRecordUnwritten, err)
	}
	return err
}

// syncRecord flushes the record writeRecord wrote, once the commit's pages
// are written: the commit is then durable.
func syncRecord(g *generation) error { return fdatasync(g.f) }

// errRecordUnwritten: writeRecord's write wrote no byte of the record (a
// full copy-on-write file system refuses even an overwrite), so there is
// nothing to take back if its commit fails.
var errRecordUnwritten = errors.New("the journal record was not written")

// journalEnd follows a commit whose record was written with the outcome
// err (errNoRecord: not written): the record is the commit's durability;
// or, where it failed, the generation's end (the file synced). Only an
// error means the commit is not durable.
func (l *Store) journalEnd(o *openFile, err error) error {
	g := o.gen
	g.commits++
	if err == nil {
		g.off += int64(len(g.buf))
		if g.commits >= genCommits {
			// The commit is durable; a failed ending only lets the file
			// go (the next open retires the header).
			if err := l.nextGeneration(o); err != nil {
				o.broken = true
			}
		}
		return nil
	}
	if err := l.endGeneration(o); err != nil {
		// Its pages are in the file, unsynced, and its record may be in
		// the journal: which the next open keeps depends on what reached
		// the disk.
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return nil
}

// retractRecord takes back the record written (or begun) for a commit
// that then failed with the error failed: its salt zeroed and flushed, so that no
// recovery ingests events no call was answered for. Where that fails the
// record may stand, and the calls' outcome is unknown.
func retractRecord(g *generation, failed error) error {
	var zero [8]byte
	_, err := g.f.WriteAt(zero[:], g.off)
	if err == nil {
		err = fdatasync(g.f)
	}
	if err != nil {
		return fmt.Errorf("%w: %w (and its journal record could not be taken back: %w)", ErrOutcomeUnknown, failed, err)
	}
	return failed
}

// nextGeneration ends o's generation and begins the next at the state now
// on disk: one sync of the file, one header.
func (l *Store) nextGeneration(o *openFile) error {
	g := o.gen
	if st, err := statFile(o.file); err != nil || st.size > journalLimit() || !sameFile(g.f, journalPath(l.path)) || st.links > 1 {
		// Past the limit (or not known to be below it), or linked under
		// another name since: no generation. Or the journal is no longer
		// at its path: the next begins with the one there.
		return l.endGeneration(o)
	}
	if err := l.settle(o); err != nil {
		return l.endGeneration(o)
	}
	if err := fdatasync(o.file); err != nil {
		return l.fileSyncFailed(err) // the old generation holds, pinned
	}
	pin, err := o.db.Begin(false)
	if err != nil {
		return err
	}
	next := &generation{f: g.f, pin: pin, off: journalRecords, buf: g.buf}
	if err := l.writeHeader(o, next); err != nil {
		pin.Rollback()
		// The old header may be torn or whole: whole, it still holds (T
		// is pinned), and the file is on disk; end it as a generation.
		return l.endGeneration(o)
	}
	g.pin.Rollback()
	o.gen = next
	return nil
}

// endGeneration syncs o's file, retires the header and releases the pin;
// o then commits synced again. The pin is released however it ends (bbolt
// cannot close a file while a read transaction is open); on error the
// header may still hold, so the Store retires it before its next commit
// (retireStale), and the next open of any writer does too.
func (l *Store) endGeneration(o *openFile) error {
	g := o.gen
	if g == nil {
		return nil
	}
	if l.syncFailed != nil {
		// The header holds, for the next open, pending commits and all.
		l.dropGeneration(o)
		o.broken = true
		return l.syncFailedErr()
	}
	if err := l.settle(o); err != nil {
		// The file lacks commits answered, which the header's records
		// hold: the generation goes on, pinned, until they settle, or
		// the file is let go (dropGeneration).
		if o.pend != nil {
			o.pend.Rollback()
			o.pend = nil
		}
		o.broken = true
		return err
	}
	g.pin.Rollback()
	o.gen = nil
	o.db.NoSync, o.db.MaxSize = false, 0
	if err := fdatasync(o.file); err != nil {
		o.broken = true
		return l.fileSyncFailed(err)
	}
	if err := retireHeader(g.f); err != nil {
		o.broken, l.stale = true, true
		return fmt.Errorf("end the journal's generation: %w", err)
	}
	l.stale, l.heldHeader = false, nil // no header holds
	return nil
}

// fileSyncFailed is called when an fdatasync of the ledger file fails
// while a journal header may hold. Linux may have marked the pages that
// did not reach the disk clean, and the next fdatasync would then succeed
// without them: nothing after may trust the file to be on disk. So the
// header is made another boot's (its boot id emptied), and every later
// open, in this boot too, recovers from its checkpoint and records as
// after a power loss (the checkpoint's pages are intact: no commit freed
// them since), instead of syncing the file and retiring the header; and
// this Store commits no more.
func (l *Store) fileSyncFailed(err error) error {
	if l.syncFailed == nil {
		l.syncFailed = err
		if l.heldHeader != nil && l.jfile != nil {
			poisonHeader(l.jfile, *l.heldHeader)
		}
	}
	return l.syncFailedErr()
}

func (l *Store) syncFailedErr() error {
	return fmt.Errorf("%w (%v): this process commits no more; restart it, and opening the ledger recovers what the journal holds", ErrSyncFailed, l.syncFailed)
}

// poisonHeader rewrites header h in journal f with no boot id, so that no
// open takes the file as synced and whole: best effort (if it fails, the
// header holds as it was).
func poisonHeader(f *os.File, h header) {
	h.boot = nil
	if _, err := f.WriteAt(h.encode(), 0); err == nil {
		fdatasync(f)
	}
}

// retireStale retires a header that a failed endGeneration may have left
// holding, before o's next commit: the pages of its checkpoint are no
// longer kept from reuse.
func (l *Store) retireStale(o *openFile) error {
	if l.syncFailed != nil {
		return l.syncFailedErr()
	}
	if !l.stale {
		return nil
	}
	if err := fdatasync(o.file); err != nil {
		return l.fileSyncFailed(err)
	}
	if err := retireHeader(l.jfile); err != nil {
		return err
	}
	l.stale, l.heldHeader = false, nil
	return nil
}

// retireHeader durably makes f's header hold no longer.
func retireHeader(f *os.File) error {
	if _, err := f.WriteAt(make([]byte, headerLen), 0); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// isJournal tells whether f is a journal (or empty): its first block
// holds a header, or a retired one (zeros). A file with anything else
// there is not one — another ledger whose name ends as a journal's (x and
// x.journal): it is never written nor removed as one.
func isJournal(f *os.File) (bool, error) {
	b := make([]byte, journalRecords)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	b = b[:n]
	return isMagic(b) || !slices.ContainsFunc(b, func(c byte) bool { return c != 0 }), nil
}

// removeJournal removes the journal of a ledger file that is gone: what
// it holds was another file's. A file there that is no journal (another
// ledger's) is left; a symbolic link there is removed, not followed.
func removeJournal(path string) error {
	jpath := journalPath(path)
	f, err := os.OpenFile(jpath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENAMETOOLONG):
		return nil // none (a name too long for one: commits there are synced)
	case errors.Is(err, syscall.ELOOP):
	case err != nil:
		return fmt.Errorf("journal of a deleted ledger: %w", err)
	default:
		fi, err := f.Stat()
		ok := err == nil && fi.Mode().IsRegular()
		if ok {
			ok, err = isJournal(f)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("journal of a deleted ledger: %w", err)
		}
		if !ok {
			return nil // not a journal: not this ledger's to remove
		}
	}
	if err := os.Remove(jpath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal of a deleted ledger: %w", err)
	}
	return syncDir(filepath.Dir(jpath))
}

// recovery is what openDB's file hook found in the journal: events to
// ingest once bbolt has the file (T written back), or nothing.
type recovery struct {
	f      *os.File
	events [][]byte
	// present: the events are a generation's whose header no longer
	// decodes (headerless), which the file must already hold: checked,
	// not ingested, and the header retired (by a writer) if it does.
	// moved: a writer found a header of this boot whose checkpoint's
	// pages the file no longer has (it moved on past it), its events
	// checked the same way.
	present, moved, readOnly bool
	// sameBoot: a reader found a header of this boot: the file holds
	// every commit bbolt made, and those of the events past its head, if
	// any, were answered before bbolt made them (pending.go).
	sameBoot bool
}

// errPending: a reader found, in this boot, commits answered that the
// file lacks (a process stopped with commits pending).
var errPending = errors.New("commits pending")

// settleJournal runs in openDB's file hook, with the lock taken and
// before bbolt reads the file: a header that holds is retired (this
// boot's, with no records: the file is whole in the page cache; synced
// first) or recovered from (another boot's, or this boot's with records:
// T written back, the events returned to ingest). A reader is refused a
// journal from another boot; one of this boot with records is returned,
// for replay to tell whether the file lacks any of their events.
func settleJournal(path string, f *os.File, readOnly bool) (*recovery, error) {
	jpath := journalPath(path)
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	jf, err := openBeside(jpath, flag)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if jf == nil {
		return nil, nil // none (a name too long for one: commits there are synced)
	}
	keep := false
	defer func() {
		if !keep {
			jf.Close()
		}
	}()
	first := make([]byte, headerLen)
	if _, err := jf.ReadAt(first, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("journal: %w", err)
	}
	h, ok := decodeHeader(first)
	if !ok {
		events, err := headerless(jf, jpath, first)
		if err != nil || len(events) == 0 {
			return nil, err
		}
		keep = true
		return &recovery{f: jf, events: events, present: true, readOnly: readOnly}, nil
	}
	boot, err := bootID()
	if err != nil {
		return nil, err
	}
	// events: the records' events, once read.
	var events [][]byte
	if bytes.Equal(h.boot, boot) {
		// The page cache holds every commit bbolt made, whole; the
		// records may hold commits answered that bbolt had not made
		// (pending.go). A writer syncs the file first either way: a
		// sync that fails makes the header another boot's, so that no
		// later open trusts a sync after it (fileSyncFailed).
		if !readOnly {
			if err := fdatasync(f); err != nil {
				poisonHeader(jf, h)
				return nil, fmt.Errorf("%w: %v", ErrSyncFailed, err)
			}
		}
		body, err := journalBody(jf)
		if err != nil {
			return nil, err
		}
		if events, err = readRecords(body, h.salt); err != nil {
			return nil, fmt.Errorf("%s: %w", jpath, err)
		}
		switch {
		case len(events) == 0 && readOnly:
			return nil, nil // a writer retires it
		case len(events) == 0:
			return nil, retireHeader(jf)
		case readOnly:
			// Whether the file lacks any is known once bbolt has it
			// (recovery.replay).
			keep = true
			return &recovery{f: jf, events: events, sameBoot: true, readOnly: true}, nil
		}
		// A writer recovers as after a stop of the machine: the file
		// written back to the checkpoint, whose pages the generation's
		// pin kept, and the records' events ingested. (Ingesting only
		// those past the file's head, in a commit free to reuse the
		// checkpoint's pages, would leave a stop of the machine before
		// the header's retirement nothing to recover from.)
	}
	if readOnly {
		why := "made before the machine restarted"
		if len(h.boot) == 0 {
			why = "whose sync to the ledger file failed"
		}
		return nil, fmt.Errorf("%w: %s holds commits %s; open the ledger once with a writer (logbook serve, rebuild) to recover them", ErrUnrecovered, jpath, why)
	}
	ps := int64(h.pageSize)
	if ps < 1024 || ps > 1<<16 {
		return nil, fmt.Errorf("%w: %s names a page size of %d", ErrDamaged, jpath, ps)
	}
	root, free, err := pageSums(f, h.meta[:], ps)
	if err == nil && (root != h.rootSum || free != h.freeSum) && events != nil {
		// This boot's, the file synced above: it moved on past the
		// checkpoint, which only a recovery does that an older logbook
		// stopped before retiring the header (it folded in a commit of
		// its own). Nothing is left to recover if the file holds every
		// record's event; the header is then retired (recovery.check).
		keep = true
		return &recovery{f: jf, events: events, moved: true}, nil
	}
	if err != nil || root != h.rootSum || free != h.freeSum {
		return nil, fmt.Errorf("%w: %s does not match %s (its checkpoint's pages differ): nothing was written", ErrDamaged, jpath, path)
	}
	if events == nil {
		body, err := journalBody(jf)
		if err != nil {
			return nil, err
		}
		if events, err = readRecords(body, h.salt); err != nil {
			return nil, fmt.Errorf("%s: %w", jpath, err)
		}
	}
	// T, written back into both meta slots: bbolt opens the file as it
	// was on disk at the checkpoint.
	for slot := int64(0); slot < 2; slot++ {
		m := h.meta
		binary.LittleEndian.PutUint64(m[0:], uint64(slot)) // the page's id
		if _, err := f.WriteAt(m[:], slot*ps); err != nil {
			return nil, fmt.Errorf("recover from %s: %w", jpath, err)
		}
	}
	if err := fdatasync(f); err != nil {
		return nil, fmt.Errorf("recover from %s: %w", jpath, err)
	}
	keep = true
	return &recovery{f: jf, events: events}, nil
}

// headerless reads a journal whose first bytes, first, hold no header
// (decodeHeader): a retired header is zeros, and nothing follows a header
// cut short as it was first written but an earlier generation's records
// (on disk in the file: each generation ends with a sync). A header cut
// short as it was retired or replaced — after the file was synced —
// leaves bytes there with its generation's records after it. Either way
// the records there are returned, for replay to check that the file holds
// every event of them (present): those of the salt the bytes name, and
// those of the record where every generation's first goes (the salt
// itself may be what was damaged). Events the file lacks mean a header
// that held, damaged since: they cannot be recovered without it, nor
// dropped in silence (ErrDamaged). Records damaged are ErrDamaged too
// (readRecords). (A header zeroed whole looks retired, as a journal
// deleted looks like none.)
func headerless(jf *os.File, jpath string, first []byte) ([][]byte, error) {
	if !slices.ContainsFunc(first, func(c byte) bool { return c != 0 }) || len(first) < 16 {
		return nil, nil
	}
	body, err := journalBody(jf)
	if err != nil {
		return nil, err
	}
	salts := []uint64{binary.LittleEndian.Uint64(first[8:])}
	if len(body) >= 8 {
		if s := binary.LittleEndian.Uint64(body); s != salts[0] {
			if _, whole := recordAt(body, s); whole {
				salts = append(salts, s)
			}
		}
	}
	var events [][]byte
	for _, salt := range salts {
		if salt == 0 {
			continue
		}
		evs, err := readRecords(body, salt)
		if err != nil {
			return nil, fmt.Errorf("%s (its header no longer reads): %w", jpath, err)
		}
		events = append(events, evs...)
	}
	return events, nil
}

// journalBody reads the journal's records' part (from journalRecords).
func journalBody(jf *os.File) ([]byte, error) {
	body, err := io.ReadAll(io.NewSectionReader(jf, journalRecords, journalSize-journalRecords))
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return body, nil
}

// replay ingests r's events past db's head in one synced commit, and
// retires the journal's header. Those at or below the head must be the
// file's, byte for byte. A reader cannot ingest: events past the head
// are ErrUnrecovered (errPending: the Store's open then recovers them
// as a writer, if it may write the file).
func (r *recovery) replay(db *bolt.DB) error {
	defer r.f.Close()
	if r.present || r.moved {
		return r.check(db)
	}
	past, err := r.past(db)
	if err != nil {
		return fmt.Errorf("%w: %s: its records: %v; nothing was written", ErrDamaged, r.f.Name(), err)
	}
	if len(past) > 0 && r.readOnly {
		return fmt.Errorf("%w: %w: %s holds commits answered that the ledger file lacks (the process that made them stopped); open the ledger once with a writer (logbook serve, rebuild) to recover them", ErrUnrecovered, errPending, r.f.Name())
	}
	if len(past) > 0 {
		// The events ingested and folded in one commit, synced before
		// the header is retired. The checkpoint's pages, which the file
		// was written back to (settleJournal), are freed by that commit
		// but reused only by a later one: a process stopped before the
		// retirement leaves them for the next open to write the
		// checkpoint back again. (A second commit, the fold's, reused
		// them: a stop between it and the retirement left a file that
		// every writer refused, its checkpoint's pages changed. Attack
		// review.) A reader that recovers them (openDB) reads the
		// projections next, which no call has caught up; a fold that
		// fails is left to the next call's catch-up, which reports it:
		// the events are ingested without it.
		err := r.ingest(db, past, Refold != nil)
		if err != nil && Refold != nil {
			if err2 := r.ingest(db, past, false); err2 != nil {
				err = errors.Join(err, err2)
			} else {
				err = nil
			}
		}
		if err == nil && db.NoSync {
			err = db.Sync()
		}
		if err != nil {
			return fmt.Errorf("recover from %s: %w", r.f.Name(), err)
		}
	}
	if r.readOnly {
		return nil
	}
	if stopBeforeRetire != nil {
		if err := stopBeforeRetire(); err != nil {
			return err
		}
	}
	return retireHeader(r.f)
}

// stopBeforeRetire, when set (tests), runs before recovery retires the
// header; an error stops recovery there, as a process killed then.
var stopBeforeRetire func() error

// ingest commits past, events past db's head, folded with fold (Refold).
func (r *recovery) ingest(db *bolt.DB, past [][]byte, fold bool) error {
	return update(db, func(btx *bolt.Tx) error {
		tx := newTx(btx)
		from := tx.head.Seq
		for _, raw := range past {
			if _, err := tx.Ingest(raw); err != nil {
				return err
			}
		}
		if err := tx.flush(); err != nil || !fold {
			return err
		}
		return Refold(newTx(btx), from)
	})
}

// past returns r's events past db's head, once those at or below it are
// found to be the file's, byte for byte (Tx.holds).
func (r *recovery) past(db *bolt.DB) (past [][]byte, err error) {
	err = db.View(func(btx *bolt.Tx) error {
		tx := newTx(btx)
		for i, raw := range r.events {
			if _, in, err := tx.holds(raw); err != nil {
				return err
			} else if !in {
				past = r.events[i:]
				return nil
			}
		}
		return nil
	})
	return past, err
}

// check makes sure the file holds every event of r (a headerless journal's
// records, at their seqs, byte for byte), then retires the header (a
// writer). The events of a header cut short as it was retired are all
// there; some missing means the header held and was damaged since.
func (r *recovery) check(db *bolt.DB) error {
	past, err := r.past(db)
	if err == nil && len(past) > 0 {
		err = errors.New("they hold events past the file's head")
	}
	switch {
	case err != nil && r.moved:
		return fmt.Errorf("%w: %s does not match %s (its checkpoint's pages differ, and its records: %v): nothing was written", ErrDamaged, r.f.Name(), db.Path(), err)
	case err != nil:
		return fmt.Errorf("%w: %s: its header no longer reads, and records of its generation follow it: %v; "+
			"the commits they hold cannot be recovered without it, nor dropped; nothing was written", ErrDamaged, r.f.Name(), err)
	}
	if r.readOnly {
		return nil
	}
	return retireHeader(r.f)
}

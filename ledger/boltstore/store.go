package boltstore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FormatVersion is the on-disk layout version written in the file's meta
// bucket of a new ledger. A file with a larger number is refused, never
// rewritten; an older one is read and appended to in its own format (nothing
// is migrated in place).
//
//	1: the merkle bucket stores every level of the tree, 0 (the leaves,
//	   the events' hashes) and up.
//	2: it stores the levels from baseLevel up; a node below is hashed from
//	   the events it covers when read.
//	3: the levels of format 2, all in the merkle bucket itself (no
//	   sub-bucket per level), keyed by the seq of the event that completes
//	   the node and its level (nodeKey): keys sort in the order nodes are
//	   completed, so an append writes at the end of one key space, not at
//	   the end of each level it completes (a commit of 64 events dirtied
//	   about 10 pages for the levels, against 1–3 now).
const FormatVersion = 3

// baseLevel is the lowest Merkle level a format-2 or 3 file stores. The levels
// below were nearly all of the tree's bytes (level L holds 1/2^L of the
// leaves' nodes) and of the pages a commit dirtied; with 4, a missing node
// is hashed from at most 8 events (level 3), and a proof or a root hashes at
// most 15 events besides its stored nodes.
const baseLevel = 4

var (
	bucketMeta   = []byte("meta")
	bucketEvents = []byte("events")
	bucketMerkle = []byte("merkle")
	bucketSpaces = []byte("spaces")
	keyFormat    = []byte("format")
	keyHead      = []byte("head")
	keyID        = []byte("id")
)

var (
	// ErrNotFound: no event (or node) at that position.
	ErrNotFound = errors.New("not found")
	// ErrFormat: the file's format version is newer than this binary knows.
	ErrFormat = errors.New("unsupported ledger format")
	// ErrNotLedger: the file is a bbolt file but not a logbook ledger.
	ErrNotLedger = errors.New("not a logbook ledger")
	// ErrReadOnly: Update on a ledger opened with Options.ReadOnly.
	ErrReadOnly = errors.New("ledger opened read-only")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("ledger closed")
	// ErrReplaced: the file at the path is no longer the ledger this Store
	// has been using: deleted, replaced by another ledger or by an older
	// copy of this one. Nothing is written to it; the error says why.
	ErrReplaced = errors.New("ledger file deleted or replaced")
	// ErrDamaged: reading the file failed in a way only a damaged file can
	// cause (a bbolt page that is not what it claims, a read past the end of
	// a truncated file).
	ErrDamaged = errors.New("ledger file is damaged")
	// ErrDiskFull: a commit found no room — for its pages, or for its
	// journal record or header (on a copy-on-write file system an
	// overwrite needs room too) — the file system being full, or the
	// file may grow no more (a quota, a file size limit): it left nothing
	// (unless the error is ErrOutcomeUnknown too); commits succeed again
	// once there is room (noRoom).
	ErrDiskFull = errors.New("the disk is full")
)

// Options tune Open. The zero value opens an existing ledger for writing.
type Options struct {
	Create   bool // create the file if it does not exist
	ReadOnly bool // never write; transactions take a shared lock
	// Hold keeps the file open and exclusively locked for the Store's
	// lifetime, as a server that owns the ledger does: reads run
	// concurrently with commits (bbolt's MVCC) and no file is reopened per
	// commit, but no other process can open the file meanwhile.
	Hold        bool
	LockTimeout time.Duration    // bounded wait for the file lock; default 5s
	Now         func() time.Time // clock for event times; default time.Now
	// Replica, if set, is a replicated log this file is a local copy of
	// (another storage engine, shared by many nodes): every write
	// transaction first ingests what it holds past the local head, and
	// commits only once the events it appended are in it. Open marks the
	// file as its copy (<file>.stream, nodecopy.go) before its first
	// commit, and refuses one marked as another log's copy.
	Replica Replica
	// NoAppend opens the file to write anything but events (Tx.Append and
	// Tx.Ingest fail with ErrNoAppend), as a rebuild of the projections
	// does: it may open a replicated log's local copy without a Replica
	// (nothing it writes can fork it), which a writer may not (ErrNodeCopy).
	NoAppend bool
	// NoSync skips the fsync of each commit, only for a Store with a
	// Replica and Hold: the replicated log keeps every acknowledged event
	// durably and this file is a copy of it. A process that dies leaves
	// its commits whole (the kernel still holds them). A machine that
	// stops may leave the file torn: the Store marks it
	// (<file>.unsynced, naming the boot) before its first unsynced commit
	// and clears the mark at Close, and Open refuses a file marked in
	// another boot with ErrDamaged (delete it; the node ingests the log
	// anew). Linux only (NoSyncSupported): it needs the kernel's boot id.
	NoSync bool
	// Scratch marks a throwaway file that one process creates, holds and
	// deletes (a verifier's refold of the projections): its commits are
	// not synced, since nothing in it outlives the process. It needs Hold.
	Scratch  bool
	MaxBatch int // most calls grouped in one commit; default 256
	// Format is the format version of the file Create makes: 0 for
	// FormatVersion, or an older one that binaries knowing only it read (1:
	// every Merkle level stored; 2: levels from baseLevel, one sub-bucket
	// each). It is ignored for an existing file.
	Format uint64
}

// Store is an append-only event log in one bbolt file that several
// processes share. It keeps the file (and its flock) open between commits
// only while no other process waits for it (commit.go); between its holds
// other processes append. (With Options.Hold it keeps the file instead.) Update calls from many
// goroutines are grouped into shared commits.
type Store struct {
	path     string
	opts     Options
	queue    chan *request
	quit     chan struct{}
	done     chan struct{}
	once     sync.Once
	held     *bolt.DB // with Options.Hold: the file, open for the Store's lifetime
	heldFile *os.File
	shared   sharedDB // otherwise: the file while the committer has it open
	// commitMu is held by whoever commits: the committer, or a call
	// committing on its own goroutine (direct) while the committer idles.
	commitMu sync.Mutex
	open     *openFile     // under commitMu: the file open for commits, if any
	quiet    time.Duration // quietHold; tests set it
	opens    atomic.Int64  // files opened, for tests and benchmarks
	written  atomic.Int64  // pages written by the write handles closed so far (pagesWritten)
	seen     seen          // what this Store last saw of the file, to notice a swap
	// tail is the committer's leaf hashes since the last stored node
	// (formats 2 and 3), kept across its commits so an append reads no events.
	tail leafTail
	// create is set while Open creates the file: the only time a missing
	// file may be created.
	create bool
	// jfile is the journal, once a generation has opened it (journal.go);
	// endErr, how the held file's last generation ended.
	jfile  *os.File
	endErr error
	// stale: a generation's end failed and its header may still hold.
	stale bool
	// heldHeader is the header last written, until it is retired: the
	// one a failed sync of the file makes another boot's (fileSyncFailed).
	heldHeader *header
	// syncFailed, once set, is why this Store commits no more: an
	// fdatasync of the file failed while a header held (journal.go).
	syncFailed error
	// nomap: the journal's mapping was refused (ENOMEM): no journal.
	nomap atomic.Bool
	// unsettled: commits were answered that bbolt has not committed yet
	// (pending.go); a read transaction settles them first. noPending (for
	// tests of the order of a commit's writes) leaves none pending.
	unsettled atomic.Bool
	noPending bool
	// dropped: commits answered were left to the journal as the file was
	// let go (dropGeneration); the next open of the file recovers them.
	dropped atomic.Bool
	// readsWaiting counts the reads waiting for pending commits to be
	// settled; settledSig is closed (and replaced) when they are.
	readsWaiting atomic.Int32
	settledSig   atomic.Pointer[chan struct{}]
	// pended wakes an idle committer of the held file to settle, later,
	// what a call committed directly left pending.
	pended chan struct{}
	// markMade: this Store made its file's node-copy marker (nodecopy.go).
	markMade atomic.Bool
	// generationBegun, if set, is called once a generation's header is
	// durable, before its first unsynced commit: tests copy the file
	// there, as a stopped machine's disk would have it.
	generationBegun func()
}

// openFoundNoFile, if set, is called when Open finds no ledger file at
// its path: tests let another process create it then.
var openFoundNoFile func()

// Replica is a replicated log that a Store keeps a local copy of. It keeps
// the storage contract: Append succeeds only if the log's head is still
// the one given (compare-and-append), and is durable when it returns.
type Replica interface {
	// CatchUp ingests into tx (Tx.Ingest), in order, every event the log
	// holds past tx.Head().
	CatchUp(tx *Tx) error
	// Append appends events (stored bytes, seq head.Seq+1 onwards) to the
	// log if its head is still head; ErrHeadMoved if another node
	// appended first. An outcome it cannot tell is resolved by reading the
	// log back, never by appending again blindly; one it cannot resolve is
	// ErrAppendUnknown (wrapped).
	Append(head ledger.Head, events [][]byte) error
	// Name names the log (a stream's name: no address, no secret); the
	// copy's marker keeps it (nodecopy.go).
	Name() string
}

// ErrLogGone: the replicated log itself no longer exists (deleted while
// this node ran). A Replica never makes it again: nothing more is appended
// or caught up until an operator restores it (returned wrapped, by CatchUp
// and Append).
var ErrLogGone = errors.New("the replicated log no longer exists")

// ErrLogUnsafe: the replicated log's settings were changed, while this node
// ran, to ones that can lose or rewrite events. A Replica appends and
// catches up nothing (returned wrapped) until they are restored.
var ErrLogUnsafe = errors.New("the replicated log's settings can lose or rewrite events")

// ErrLogDenied: the replicated log's servers deny this node's user
// something the log needs (appending to it, reading it, the answers): at
// open, or taken away while the node ran. The servers dropped what was
// denied: nothing of the call was appended (returned wrapped, naming what
// was denied).
var ErrLogDenied = errors.New("the replicated log's servers deny this node's user a subject it needs")

// ErrLogUnreachable: the replicated log's servers did not serve a
// catch-up in time (down, unreachable, electing a leader) and gave no
// verdict: nothing was appended; the next call may succeed (returned
// wrapped, by CatchUp).
var ErrLogUnreachable = errors.New("the replicated log's servers did not serve it in time")

// ErrAppendUnknown: a Replica could not tell whether an append reached the
// replicated log. Its events may appear there later (the next catch-up
// ingests them): the commit's calls may or may not be in the ledger.
var ErrAppendUnknown = errors.New("whether the replicated log took the append is unknown")

// ErrHeadMoved: the replicated log's head moved since the transaction read
// it (another node appended first). The transaction is rolled back, caught
// up and run again.
var ErrHeadMoved = errors.New("the log's head moved")

// maxReplicaRetries bounds how often one commit is run again because other
// nodes kept appending first (with the pauses between, about a second in
// all at worst).
const maxReplicaRetries = 64

type request struct {
	fn       func(*Tx) error
	done     chan error
	deadline time.Time // when waiting for the file lock must give up
	// series, instead of fn: transactions committed one after another in
	// one hold of the file (UpdateSeries), and held, how long that took.
	series func(*Tx) (done bool, err error)
	held   time.Duration
}

// PanicError is returned by Update when fn panicked. The commit it was part
// of is rolled back; the other calls of the batch are retried without it.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Open checks (or, with Create, initialises) the ledger file at path and
// returns a handle. It does not keep the file open.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.Format == 0 {
		opts.Format = FormatVersion
	}
	if opts.Format > FormatVersion {
		return nil, fmt.Errorf("open ledger: %w: format %d asked for, this binary writes formats 1 to %d", ErrFormat, opts.Format, FormatVersion)
	}
	if opts.NoSync && opts.Replica == nil {
		return nil, errors.New("open ledger: NoSync is only for a copy of a replicated log (Options.Replica)")
	}
	if opts.NoSync && (!opts.Hold || opts.ReadOnly) {
		return nil, errors.New("open ledger: NoSync needs Hold: one process writes the file unsynced for the Store's lifetime, and syncs it at Close")
	}
	if opts.Scratch && (!opts.Hold || opts.ReadOnly) {
		return nil, errors.New("open ledger: a scratch file needs Hold: one process writes it for the Store's lifetime")
	}
	if opts.NoAppend && opts.Replica != nil {
		return nil, errors.New("open ledger: NoAppend is for a Store without a Replica (a node's copy appends what its log holds)")
	}
	if err := danglingLink(path); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if err := leftBesideLink(path); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if err := checkNodeCopy(path, opts); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	l := &Store{path: path, opts: opts, quiet: quietHold}
	// A file written without fsync is refused if the machine restarted
	// since, and marked before it is so written (unsynced.go).
	var marked bool
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		if openFoundNoFile != nil {
			openFoundNoFile()
		}
		// No file yet (or one whose creation was cut short): the marker
		// of one deleted before is void. (Its journal is too: openDB
		// removes it, under the lock, if it creates the file — another
		// process may create it first and commit through a journal.)
		if _, err := os.Stat(unsyncedMarker(path)); err == nil && opts.Create && !opts.ReadOnly {
			if err := clearUnsynced(path); err != nil {
				return nil, fmt.Errorf("open ledger: %w", err)
			}
		}
	} else if marked, err = checkUnsynced(path); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if opts.NoSync && !marked {
		if err := markUnsynced(path); err != nil {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
	}
	// A file that exists but is empty is one whose creation was cut short
	// (bbolt writes its first pages right after creating it): create it.
	fi, err := os.Stat(path)
	missing := err != nil || fi.Size() == 0
	if missing && ((err != nil && !errors.Is(err, os.ErrNotExist)) || !opts.Create || opts.ReadOnly) {
		if err == nil {
			err = fmt.Errorf("%w: %s is empty", ErrNotLedger, path)
		}
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if missing {
		// A missing folder is not made: say so, rather than (openDB) that
		// the file was deleted or replaced.
		if _, err := os.Stat(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("create ledger: %w", err)
		}
		// A node's copy is marked before the file is made (and again
		// checked under the lock: lockedNodeCopy).
		if opts.Replica != nil {
			if err := l.markNodeCopy(opts.Replica.Name()); err != nil {
				return nil, fmt.Errorf("open ledger: %w", err)
			}
		}
		l.create = true
		err := l.withDB(false, func(db *bolt.DB, _ *os.File) error { return db.Update(initFile(opts.Format)) })
		l.create = false
		if err != nil {
			return nil, fmt.Errorf("create ledger: %w", err)
		}
		// Make the new file's directory entry durable too.
		if dir, err := os.Open(filepath.Dir(path)); err == nil {
			dir.Sync()
			dir.Close()
		}
	}
	if _, err := os.Lstat(journalPath(path)); err == nil && !opts.ReadOnly && !opts.Scratch {
		// A writer first settles what the journal holds (journal.go),
		// which the read below would be refused.
		if err := l.withDB(false, func(*bolt.DB, *os.File) error { return nil }); err != nil {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
	}
	check := checkFormat
	if !opts.ReadOnly {
		check = l.checkFile // and remember what it is
	}
	err = l.withDB(true, func(db *bolt.DB, file *os.File) error {
		return db.View(func(btx *bolt.Tx) error {
			if err := checkSize(btx, file); err != nil {
				return err
			}
			if err := checkTrees(btx, file, db.Info().PageSize, !opts.ReadOnly); err != nil {
				return err
			}
			return check(btx)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if marked && !opts.NoSync && !opts.ReadOnly {
		// Unsynced commits of a process gone during this boot, whole in
		// the page cache: put them on disk, and the marker is void.
		err := l.withDB(true, func(_ *bolt.DB, file *os.File) error {
			if err := file.Sync(); err != nil {
				return err
			}
			return clearUnsynced(path)
		})
		if err != nil {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
	}
	if opts.Hold && !opts.ReadOnly {
		db, file, err := l.openDB(false, opts.LockTimeout)
		if err != nil {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
		l.held, l.heldFile = db, file
		l.open = &openFile{db: db, file: file}
	}
	if !opts.ReadOnly {
		l.queue = make(chan *request, opts.MaxBatch)
		l.quit = make(chan struct{})
		l.pended = make(chan struct{}, 1)
		l.wakeReads()
		l.done = make(chan struct{})
		go l.run()
	}
	return l, nil
}

// initFile makes btx's empty file a ledger of the given format.
func initFile(format uint64) func(*bolt.Tx) error {
	return func(btx *bolt.Tx) error { return initFormat(btx, format) }
}

func initFormat(btx *bolt.Tx, format uint64) error {
	if btx.Bucket(bucketMeta) != nil {
		return nil // another process created it first
	}
	empty := true
	btx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
	if !empty {
		return ErrNotLedger
	}
	meta, err := btx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	for _, name := range [][]byte{bucketEvents, bucketMerkle, bucketSpaces} {
		if _, err := btx.CreateBucket(name); err != nil {
			return err
		}
	}
	id, err := newID()
	if err != nil {
		return err
	}
	return errors.Join(meta.Put(keyFormat, u64(format)), meta.Put(keyID, id))
}

// checkFormat checks that the file is a logbook ledger of a format this
// binary reads. A bbolt file with at most one of a ledger's four marks (the
// meta, events and merkle buckets, the format key) is another program's:
// ErrNotLedger. One with some of them but not all is a ledger whose
// structure is damaged (a byte of a bucket's name or of the format key
// changed, a page lost): ErrDamaged, as verify and serve must say.
func checkFormat(btx *bolt.Tx) error {
	meta, events, merkle := btx.Bucket(bucketMeta), btx.Bucket(bucketEvents), btx.Bucket(bucketMerkle)
	var v []byte
	if meta != nil {
		v = meta.Get(keyFormat)
	}
	marks := 0
	for _, ok := range []bool{meta != nil, events != nil, merkle != nil, len(v) == 8} {
		if ok {
			marks++
		}
	}
	switch {
	case marks <= 1:
		return ErrNotLedger
	case marks < 4:
		return fmt.Errorf("%w: a ledger's structure is broken (meta bucket %s, events bucket %s, merkle bucket %s, format key of %d bytes)",
			ErrDamaged, found(meta != nil), found(events != nil), found(merkle != nil), len(v))
	}
	got := binary.BigEndian.Uint64(v)
	laid, known := layoutOf(merkle)
	switch {
	case got == 0 || got > maxFormat:
		// No logbook writes these: formats are numbered one by one.
		return fmt.Errorf("%w: its format number (meta/format) reads %d, which no logbook writes%s", ErrDamaged, got, laidOut(laid, known))
	case got <= FormatVersion && known && laid != got:
		return fmt.Errorf("%w: its format number (meta/format) reads %d%s", ErrDamaged, got, laidOut(laid, known))
	case got > FormatVersion:
		hint := "a newer logbook wrote it?"
		if known {
			hint = "a newer logbook wrote it, or the number is damaged: its merkle bucket is laid out as format " + strconv.FormatUint(laid, 10)
		}
		return fmt.Errorf("%w: file is format %d, this binary reads formats 1 to %d (%s)", ErrFormat, got, FormatVersion, hint)
	}
	return checkHead(meta.Get(keyHead), events)
}

// maxFormat bounds the format numbers a logbook may write: they are
// numbered one by one from 1, so a larger one (a byte of meta/format
// changed above its lowest) is damage, not a newer logbook's file.
const maxFormat = 0xff

// layoutOf tells the format the merkle bucket is laid out as, from its
// first entry: format 3 keeps the nodes as the bucket's own keys, formats
// 1 and 2 a sub-bucket per level, level 0 in format 1 only. known is false
// while it holds no node (under 16 events in formats 2 and 3).
func layoutOf(merkle *bolt.Bucket) (format uint64, known bool) {
	k, v := merkle.Cursor().First()
	switch {
	case k == nil:
		return 0, false
	case v != nil:
		return 3, true
	case merkle.Bucket([]byte{0}) != nil:
		return 1, true
	}
	return 2, true
}

// laidOut says, after a format number, what the merkle bucket's layout
// says the format is.
func laidOut(format uint64, known bool) string {
	if !known {
		return ""
	}
	return fmt.Sprintf(", while its merkle bucket is laid out as format %d: the number is damaged", format)
}

// maxSeq bounds the seq a head may name: no log gets near it (a million
// events a second for 146,000 years), and seqs, sizes and chunk ends
// computed from the head stay far from wrapping around.
const maxSeq = 1 << 62

// checkHead checks the stored head's form: absent only while the log is
// empty, else a seq (at most maxSeq) and a hash. Whether it names the
// last event and its hash is verify's to check, seq by seq.
func checkHead(v []byte, events *bolt.Bucket) error {
	switch {
	case v == nil:
		if k, _ := events.Cursor().First(); k != nil {
			return fmt.Errorf("%w: the head (meta/head) is missing while the log holds events", ErrDamaged)
		}
	case len(v) != 8+len(ledger.Hash{}):
		return fmt.Errorf("%w: the head (meta/head) is %d bytes, not %d", ErrDamaged, len(v), 8+len(ledger.Hash{}))
	case binary.BigEndian.Uint64(v) > maxSeq:
		return fmt.Errorf("%w: the head names seq %d, past any log a file can hold", ErrDamaged, binary.BigEndian.Uint64(v))
	}
	return nil
}

func found(ok bool) string {
	if ok {
		return "found"
	}
	return "missing"
}

// Path is the ledger file's path.
func (l *Store) Path() string { return l.path }

// ReadOnly reports whether the ledger was opened read-only.
func (l *Store) ReadOnly() bool { return l.opts.ReadOnly }

// allocSize is how far past its last used page the file grows at a time.
const allocSize = 1 << 20

// scratchPageSize is the page size of a scratch file (a refold's: verify,
// rebuild). Nothing but its own process reads it, key by key, so its pages
// need not be the ledger's: a refold puts a million events' records into
// it, and with 16 KiB pages each put searches fewer levels and each commit
// writes a quarter as many pages. At 1M events: verify's CPU 6% less and
// its peak RSS 10 MB less, a rebuild 10% faster with a shorter hold (4
// alternated runs each; 32 KiB gained no more, 64 KiB less).
const scratchPageSize = 16 << 10

// pageSize is the page size of a file this Store creates: bbolt's default
// (the OS page size) but for a scratch file.
func (l *Store) pageSize() int {
	if l.opts.Scratch {
		return scratchPageSize
	}
	return 0
}

// openDB opens the bbolt file, taking its lock. Only the creation of a new
// ledger (Open with Create) may create the file: a file gone from under a
// running Store is an error, never recreated.
func (l *Store) openDB(readOnly bool, lockWait time.Duration) (*bolt.DB, *os.File, error) {
	var file *os.File
	var rec *recovery
	l.opens.Add(1)
	open := lockedOpener(lockWait, l.create)
	mapSize := 0
	if !readOnly && l.journaling() {
		mapSize = journalMap // a generation's pin never meets a remap (journal.go)
	}
	db, err := bolt.Open(l.path, 0o600, &bolt.Options{
		ReadOnly: readOnly,
		OpenFile: func(path string, flag int, mode os.FileMode) (f *os.File, err error) {
			if f, err = open(path, flag, mode); err != nil {
				return nil, err
			}
			// A writer checks, or makes, a node copy's marker under the
			// lock: a marker made since the Store was opened is seen
			// before anything more is written (nodecopy.go).
			if !readOnly {
				if err = l.lockedNodeCopy(); err != nil {
					f.Close()
					return nil, err
				}
			}
			// Locked, not yet read: a journal that holds is settled
			// first (journal.go) — or, beside a file this open creates
			// (still empty under the lock), a deleted ledger's journal is
			// removed.
			if !l.opts.Scratch {
				var fi os.FileInfo
				fi, err = f.Stat()
				switch {
				case err != nil:
				case l.create && fi.Size() == 0:
					err = removeJournal(path)
				case fi.Size() == 0:
					// Emptied, or another file put in its place, since
					// Open: bbolt would try to make a ledger of it (a
					// reader's "write: bad file descriptor").
					err = fmt.Errorf("%w: %s is empty", ErrNotLedger, path)
				default:
					rec, err = settleJournal(path, f, readOnly)
					if err == nil && readOnly {
						// A reader must not read an older
						// commit unawares (freecheck.go).
						err = checkMetaPages(f)
					}
					if err == nil && !readOnly {
						// bbolt's writer reads the freelist now
						// (freecheck.go).
						if err = checkFreelistPage(f); err != nil && rec != nil {
							rec.f.Close()
							rec = nil
						}
					}
				}
				if err != nil {
					f.Close()
					return nil, err
				}
			}
			file = f
			return f, nil
		},
		FreelistType:    bolt.FreelistMapType,
		PageSize:        l.pageSize(),
		NoSync:          l.opts.NoSync || l.opts.Scratch,
		InitialMmapSize: mapSize,
		// A scratch file's growth is not synced either (bbolt fsyncs
		// each time it grows the file by AllocSize).
		NoGrowSync: l.opts.Scratch,
	})
	if err != nil && mapSize > 0 && errors.Is(err, syscall.ENOMEM) {
		// No room for the journal's mapping: commit synced (journal.go).
		if rec != nil {
			rec.f.Close()
		}
		l.nomap.Store(true)
		return l.openDB(readOnly, lockWait)
	}
	if rec != nil {
		if err != nil {
			rec.f.Close()
		} else if err = rec.replay(db); err != nil {
			db.Close()
			if readOnly && errors.Is(err, errPending) {
				// A process stopped with commits answered that the file
				// lacks (pending.go): recovered as any writer's open
				// recovers them, if this process may write the file.
				wdb, _, werr := l.openDB(false, lockWait)
				if werr == nil {
					wdb.Close()
					return l.openDB(readOnly, lockWait)
				}
				err = fmt.Errorf("%w (recovering them here: %v)", err, werr)
			}
			return nil, nil, err
		}
	}
	switch {
	case err == nil:
		// Opened, the file holds every commit answered (recovered).
		if l.dropped.Swap(false) {
			l.unsettled.Store(false)
		}
		// bbolt grows a file to its whole mapping (which doubles) or by
		// 16 MiB steps, and never gives the space back: a 10k-event ledger
		// took twice the bytes it used. Grow by 1 MiB past what is used.
		db.AllocSize = allocSize
		return db, file, nil
	case errors.Is(err, ErrLocked):
		return nil, nil, err
	case errors.Is(err, os.ErrNotExist):
		return nil, nil, fmt.Errorf("%w: %s no longer exists", ErrReplaced, l.path)
	case errors.Is(err, berrors.ErrInvalid):
		// No bbolt magic at all: some other file, unless a ledger's
		// structure is behind it (its magic damaged).
		if why := l.behindBadMagic(); why != "" {
			return nil, nil, fmt.Errorf("%w: %s: %s", ErrDamaged, l.path, why)
		}
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrNotLedger, l.path, err)
	case errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrDamaged, l.path, err)
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Path == l.path {
		return nil, nil, err // (it names the file: "open x.db: permission denied")
	}
	return nil, nil, fmt.Errorf("open %s: %w", l.path, err)
}

// behindBadMagic is ledgerBehindBadMagic of the file, read once bbolt's
// open has let it go: a diagnosis of a file no writer can open, which
// reads two meta pages and a root page and writes nothing.
func (l *Store) behindBadMagic() string {
	f, err := os.Open(l.path)
	if err != nil {
		return ""
	}
	defer f.Close()
	return ledgerBehindBadMagic(f)
}

// withDB runs fn on the bbolt file — the held one, or the file opened (and
// locked) for fn and closed after it — and the file it was opened from.
func (l *Store) withDB(readOnly bool, fn func(*bolt.DB, *os.File) error) error {
	return l.withDBWait(readOnly, l.opts.LockTimeout, fn)
}

// withDBWait is withDB waiting at most lockWait for the file lock.
func (l *Store) withDBWait(readOnly bool, lockWait time.Duration, fn func(*bolt.DB, *os.File) error) (err error) {
	own := false
	if readOnly {
		var err error
		if own, err = l.settleForRead(lockWait); err != nil {
			return err
		}
	}
	if l.held != nil {
		return located(l.held, l.heldFile, guard(func() error { return fn(l.held, l.heldFile) }))
	}
	if readOnly && !own {
		if db, file, done := l.shared.borrow(); db != nil {
			defer done()
			return located(db, file, guard(func() error { return fn(db, file) }))
		}
	}
	db, file, err := l.openDB(readOnly, lockWait)
	if err != nil {
		return err
	}
	// Closed however fn ends, a panic of the caller's passing through
	// included: a file left open keeps its lock, and every writer of
	// every process out, for as long as this process lives.
	defer func() {
		if !readOnly {
			st := db.Stats()
			l.written.Add(st.TxStats.GetWrite())
		}
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	return located(db, file, guard(func() error { return fn(db, file) }))
}

// Close waits for queued commits to finish and stops the committer.
func (l *Store) Close() error {
	var err error
	l.once.Do(func() {
		if l.quit != nil {
			close(l.quit)
			<-l.done
		}
		err = l.endErr
		if l.jfile != nil {
			err = errors.Join(err, l.jfile.Close())
		}
		if l.held != nil {
			if l.opts.NoSync {
				// On disk, the file no longer needs its marker.
				err = errors.Join(err, l.held.Sync())
			}
			err = errors.Join(err, l.held.Close())
			if l.opts.NoSync && err == nil {
				err = clearUnsynced(l.path)
			}
		}
	})
	return err
}

// Update runs fn in a write transaction that is durable (fsync'd) when
// Update returns nil. Calls from concurrent goroutines share one commit; if
// fn fails or panics, that commit is rolled back, fn's error (or a
// *PanicError) is returned, and the other calls are committed without it, so
// fn may run more than once and must depend only on the transaction.
// Any other error means the commit failed and nothing of fn was written.
// With Options.Replica, durable means in the replicated log: a call whose
// events the log took is answered nil even if the file's own commit then
// failed (its next commit ingests them from the log).
func (l *Store) Update(fn func(*Tx) error) error { return l.UpdateWithin(0, fn) }

// UpdateWithin is Update waiting at most wait for the file lock (the
// Store's LockTimeout if wait is 0): a relay hub commits each follower's
// calls with that follower's lock timeout.
func (l *Store) UpdateWithin(wait time.Duration, fn func(*Tx) error) error {
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	r := &request{fn: fn, done: make(chan error, 1), deadline: time.Now().Add(cmp.Or(wait, l.opts.LockTimeout))}
	if l.direct(r) {
		return diskFull(<-r.done)
	}
	return l.send(r)
}

// send hands r to the committer and waits for its answer.
func (l *Store) send(r *request) error {
	select {
	case l.queue <- r:
	case <-l.quit:
		return ErrClosed
	}
	// With quit closed the send above may still win the select; once the
	// committer has stopped, nothing will answer a request it did not take.
	select {
	case err := <-r.done:
		return diskFull(err)
	case <-l.done:
		select {
		case err := <-r.done: // answered before it stopped
			return diskFull(err)
		default:
			return ErrClosed
		}
	}
}

// View runs fn in a read transaction under a shared lock. Keep it short:
// writers in every process wait while it runs; long readers use Scan.
// fn must not call Update or View on the same Store, nor wait for a
// goroutine that does: while the committer has the file open, reads use
// its open file (shared.go), and a commit that must remap the file, or a
// committer letting it go, waits for every such read to end — for a read
// waiting on an Update, forever (with Options.Hold too); a View nested in
// one that began before the committer let go waits for the lock, then
// fails with ErrLocked.
func (l *Store) View(fn func(*Tx) error) error { return l.ViewWithin(0, fn) }

// ViewWithin is View waiting at most wait for the file lock (the Store's
// LockTimeout if wait is 0).
func (l *Store) ViewWithin(wait time.Duration, fn func(*Tx) error) error {
	return l.withDBWait(true, cmp.Or(wait, l.opts.LockTimeout), func(db *bolt.DB, _ *os.File) error {
		return db.View(func(btx *bolt.Tx) error {
			if err := checkFormat(btx); err != nil {
				return err
			}
			return fn(newTx(btx))
		})
	})
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// LockTimeout is how long the Store's calls wait for the file lock
// (Options.LockTimeout).
func (l *Store) LockTimeout() time.Duration { return l.opts.LockTimeout }

// Opens is how many times the Store has opened its file: once per read
// transaction of a Store that does not have it open already (a read-only
// one always opens it), once per hold of the committer. For tests and
// benchmarks of how often a reader goes back to the file.
func (l *Store) Opens() int64 { return l.opens.Load() }

// pagesWritten is how many pages the Store's commits have written (bbolt's
// count, meta pages included: what the fsyncs carried), for benchmarks of
// the pages a commit costs. A file held open for commits counts once it is
// let go, except the held file (Options.Hold), which counts at once.
func (l *Store) pagesWritten() int64 {
	n := l.written.Load()
	if l.held != nil {
		st := l.held.Stats()
		n += st.TxStats.GetWrite()
	}
	return n
}

// Held reports whether the Store keeps its file open (Options.Hold): its
// read transactions then run alongside commits rather than open the file.
func (l *Store) Held() bool { return l.held != nil }

package boltstore

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// A Store remembers which ledger it is using and how far its log went, and
// checks both each time it opens the file: a ledger deleted, replaced by
// another one, or by an older copy of itself (a rename or a symlink swap)
// would otherwise be followed silently, and ids already acknowledged would
// be issued again.

// seen is what a Store last saw of its file.
type seen struct {
	mu   sync.Mutex
	init bool
	id   []byte      // the ledger's random id (nil for a file made before ids)
	head ledger.Head // the largest head seen or committed
	// answered is the head of the last commit answered, which may be
	// pending (pending.go): past head until bbolt commits it. What the
	// file is checked against stays head; what others are told (Seen) is
	// the later of the two.
	answered ledger.Head
}

// answer records head as that of a commit answered and left pending.
func (s *seen) answer(head ledger.Head) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if head.Seq > s.answered.Seq {
		s.answered = head
	}
}

// newID is a ledger's identity, written once when the file is created.
func newID() ([]byte, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("ledger id: %w", err)
	}
	return id, nil
}

// committed records the head a commit of this Store left.
func (s *seen) committed(head ledger.Head) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if head.Seq >= s.head.Seq {
		s.head = head
	}
}

// checkFile checks, in a transaction just begun, that the file is the
// ledger this Store has been using, with its log intact up to the head last
// seen; then records what it saw. It also checks the format. Writers check
// before every commit; readers (an auditor's verify) read the file as it is
// and report what they find.
func (l *Store) checkFile(btx *bolt.Tx) error {
	if err := checkFormat(btx); err != nil {
		return err
	}
	id, head := fileHead(btx)
	s := &l.seen
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.init {
		if d := differs(btx, id, head, Seen{ID: s.id, Head: s.head}, "this process"); d != "" {
			return replaced(btx, l.path, d, s.head.Seq)
		}
		// A head other than the one seen (another process committed, or
		// it changed since) must name the last event and its hash, as a
		// commit leaves it: a hash damaged since this process read it
		// would be the next event's prev, a broken link written by this
		// process.
		if head != s.head {
			if why := headProblem(btx); why != "" {
				return fmt.Errorf("%w: %s: %s", ErrDamaged, l.path, why)
			}
		}
	}
	if !s.init || !bytes.Equal(s.id, id) { // (a copy: id is in the file's mapping)
		s.id = append([]byte(nil), id...)
	}
	s.init, s.head = true, head
	return nil
}

// checkLedger checks, in a read transaction just begun, that the file is
// the ledger this Store has been using and has not gone back past the head
// last seen (ErrReplaced), and the format; it records nothing. Unlike
// checkFile it does not compare the last event seen, whose bytes changed
// are damage for the reader to find and report (a rebuild's link check).
func (l *Store) checkLedger(btx *bolt.Tx) error {
	if err := checkFormat(btx); err != nil {
		return err
	}
	id, head := fileHead(btx)
	s := &l.seen
	s.mu.Lock()
	seen, init := Seen{ID: s.id, Head: s.head}, s.init
	s.mu.Unlock()
	if d := moved(id, head, seen, "this process"); init && d != "" {
		return replaced(btx, l.path, d, seen.Head.Seq)
	}
	return nil
}

// replaced is the error for the file in btx at path, which differs (d)
// from what was seen of it: ErrReplaced — unless the file does not hold
// together by itself (headProblem), which is damage, ErrDamaged. Damage
// changes what a head or an event reads as, and was reported as another
// file: a flipped byte in the head's seq read as the ledger gone back, or
// as no longer holding the event last seen.
func replaced(btx *bolt.Tx, path, d string, seen uint64) error {
	why := headProblem(btx)
	if why == "" {
		why = lookupProblem(btx, seen)
	}
	if why != "" {
		return fmt.Errorf("%w: %s: %s", ErrDamaged, path, why)
	}
	return fmt.Errorf("%w: %s %s", ErrReplaced, path, d)
}

// lookupWalk bounds how many events lookupProblem walks back from the last.
const lookupWalk = 1 << 16

// lookupProblem says how a lookup of event seq, which was seen, misses
// while the events bucket holds it: a walk from its last event back to seq
// (within lookupWalk) reads no branch key, a lookup goes down the child a
// branch page's keys name. A key changed there sent the lookup astray,
// which read as the file no longer holding the event: damage, not another
// file. "" if the lookup finds it, or the walk does not.
func lookupProblem(btx *bolt.Tx, seq uint64) string {
	events := btx.Bucket(bucketEvents)
	if seq == 0 || events.Get(u64(seq)) != nil {
		return ""
	}
	c := events.Cursor()
	k, _ := c.Last()
	for i := 0; k != nil && i < lookupWalk; i++ {
		if s, ok := seqOf(k); ok && s <= seq {
			if s == seq {
				return fmt.Sprintf("a lookup of event seq %d does not find it, which its events bucket holds: a key of a branch page changed", seq)
			}
			break
		}
		k, _ = c.Prev()
	}
	return ""
}

// headProblem says how the head stored in btx does not name the log's
// last event and its hash, as every commit leaves it: "" if it does.
func headProblem(btx *bolt.Tx) string {
	_, head := fileHead(btx)
	k, v := btx.Bucket(bucketEvents).Cursor().Last()
	switch {
	case k == nil && head.Seq == 0:
		return ""
	case len(k) != 8 || binary.BigEndian.Uint64(k) != head.Seq:
		last := "none"
		if len(k) == 8 {
			last = fmt.Sprintf("seq %d", binary.BigEndian.Uint64(k))
		}
		return fmt.Sprintf("its head names seq %d, its last event is %s", head.Seq, last)
	case ledger.LeafHash(v) != head.Hash:
		return fmt.Sprintf("its head's hash is not that of its last event, seq %d", head.Seq)
	}
	return ""
}

// fileHead is the ledger id and head stored in btx.
func fileHead(btx *bolt.Tx) (id []byte, head ledger.Head) {
	meta := btx.Bucket(bucketMeta)
	if v := meta.Get(keyHead); len(v) == 8+len(ledger.Hash{}) {
		head.Seq = binary.BigEndian.Uint64(v)
		copy(head.Hash[:], v[8:])
	}
	return meta.Get(keyID), head
}

// differs says how the ledger in btx, with id and head, is not the one
// who saw (seen), with its log intact up to seen.Head: "" if it is.
func differs(btx *bolt.Tx, id []byte, head ledger.Head, seen Seen, who string) string {
	if d := moved(id, head, seen, who); d != "" {
		return d
	}
	if seen.Head.Seq > 0 && leafAt(btx, seen.Head.Seq) != seen.Head.Hash {
		return fmt.Sprintf("no longer holds the event seq %d %s saw", seen.Head.Seq, who)
	}
	return ""
}

// moved says how a ledger with id and head is not the one who saw (seen),
// by those alone — another ledger, or an older copy: "" if neither.
func moved(id []byte, head ledger.Head, seen Seen, who string) string {
	switch {
	case !bytes.Equal(id, seen.ID):
		return fmt.Sprintf("now holds another ledger than the one %s used (its id changed)", who)
	case head.Seq < seen.Head.Seq:
		return fmt.Sprintf("went back from seq %d, which %s saw, to seq %d (an older copy?)", seen.Head.Seq, who, head.Seq)
	}
	return ""
}

// Seen is what a Store has seen of its ledger: the ledger's id and the
// largest head it saw or committed.
type Seen struct {
	ID   []byte
	Head ledger.Head
}

// Seen returns what the Store has seen of its ledger; ok is false if it
// has not read it yet (a read-only Store never records it). Another
// process committing on this process's behalf (server's relay) checks its
// ledger against it with CheckSeen.
func (l *Store) Seen() (seen Seen, ok bool) {
	s := &l.seen
	s.mu.Lock()
	defer s.mu.Unlock()
	head := s.head
	if s.answered.Seq > head.Seq {
		head = s.answered
	}
	return Seen{ID: append([]byte(nil), s.id...), Head: head}, s.init
}

// Saw records what another process committing on this process's behalf
// (the relay's hub) saw of the ledger: if it is this Store's ledger, a
// head past the one this Store saw is now the one it checks its file
// against. Another ledger's is ignored (that process's own commits fail).
func (l *Store) Saw(seen Seen) {
	s := &l.seen
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.init && bytes.Equal(seen.ID, s.id) && seen.Head.Seq > s.head.Seq {
		s.head = seen.Head
	}
}

// CheckSeen checks that the file at the Store's path holds the ledger
// another process saw (its Store's Seen), with the log that process saw
// intact: an ErrReplaced error saying what differs if not. The relay's hub
// checks a follower's before committing the follower's calls, as the
// follower's own Store would check its file; who names that process.
func (l *Store) CheckSeen(seen Seen, who string) error {
	return l.withDB(true, func(db *bolt.DB, _ *os.File) error {
		return db.View(func(btx *bolt.Tx) error {
			if err := checkFormat(btx); err != nil {
				return err
			}
			id, head := fileHead(btx)
			if d := differs(btx, id, head, seen, who); d != "" {
				return replaced(btx, l.path, d, seen.Head.Seq)
			}
			return nil
		})
	})
}

// leafAt is the hash of event seq: its stored leaf, or (formats 2 and 3, no
// leaves stored) the hash of its stored bytes; zero if there is none.
func leafAt(btx *bolt.Tx, seq uint64) ledger.Hash {
	var h ledger.Hash
	if b := btx.Bucket(bucketMerkle).Bucket([]byte{0}); b != nil {
		copy(h[:], b.Get(u64(seq-1)))
	} else if raw := btx.Bucket(bucketEvents).Get(u64(seq)); raw != nil {
		h = ledger.LeafHash(raw)
	}
	return h
}

// checkSameFile checks that the path still names the file open as o:
// writing on to a file unlinked or renamed away would lose every event
// written after. (A Store keeps a file open across commits: held, or for
// the few milliseconds its calls keep coming.)
func (l *Store) checkSameFile(o *openFile) error {
	if l.opts.Scratch {
		// Its owner's alone, whose name OpenScratch removes at once.
		return nil
	}
	ps, err := statPath(l.path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrReplaced, l.path, err)
	}
	if o.id == nil {
		// An open file's identity (device, inode) never changes.
		id, err := statFile(o.file)
		if err != nil {
			return fmt.Errorf("stat open ledger: %w", err)
		}
		o.id = &id
	}
	if ps.dev != o.id.dev || ps.ino != o.id.ino {
		return fmt.Errorf("%w: %s is no longer the file this process opened", ErrReplaced, l.path)
	}
	o.size, o.linked = ps.size, ps.links > 1
	return nil
}

// pathStat is what checkSameFile reads of a file: its identity, size and
// number of names.
type pathStat struct {
	dev, ino uint64
	size     int64
	links    uint64
}

// statOf is fi's pathStat; its names counted as the journal counts them
// (hardLinks).
func statOf(fi os.FileInfo) pathStat {
	ps := pathStat{size: fi.Size(), links: hardLinks(fi)}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ps.dev, ps.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return ps
}

// statPathPortable is statPath through os.Stat.
func statPathPortable(path string) (pathStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return pathStat{}, err
	}
	return statOf(fi), nil
}

// statFilePortable is statFile through os.File.Stat.
func statFilePortable(f *os.File) (pathStat, error) {
	fi, err := f.Stat()
	if err != nil {
		return pathStat{}, err
	}
	return statOf(fi), nil
}

// guard runs fn, turning what a damaged file makes bbolt do — panic on a
// page that is not what it claims, or fault reading past the end of a
// truncated file's mapping — into an ErrDamaged error, instead of a crash.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if !fromStorage(v) {
			panic(v)
		}
		err = damagedRead(v)
	}()
	return fn()
}

// readFault is ErrDamaged for what bbolt did reading a damaged file
// (guard): a panic on a page that is not what it claims, or a fault
// reading past the end of the mapping. It says so in its own words, never
// the Go runtime's ("slice bounds out of range", "nil pointer
// dereference"), which name no page; located finds the page.
type readFault struct{ what string }

func (f *readFault) Error() string { return ErrDamaged.Error() + ": " + f.what }
func (f *readFault) Unwrap() error { return ErrDamaged }

// damagedRead is the readFault for v, a panic fromStorage.
func damagedRead(v any) error {
	if fe, ok := v.(interface{ Addr() uintptr }); ok && fe.Addr() >= 1<<16 {
		return &readFault{"reading it ran past the end of the file: a page, or an offset in one, points outside it"}
	}
	if _, ok := v.(runtime.Error); ok {
		return &readFault{"a page of it is not what its tree says it is (its header, its count of elements or an offset in it points outside it)"}
	}
	return &readFault{fmt.Sprintf("bbolt: %v", v)}
}

// located is err, if it is a readFault of a transaction on db, replaced by
// what the check of every page of the trees (checkKeyRanges, verify's)
// finds in the file: the tree and the page that are damaged. Another
// error, or a fault the check does not place, is err.
func located(db *bolt.DB, file *os.File, err error) error {
	var f *readFault
	if !errors.As(err, &f) || db == nil || file == nil {
		return err
	}
	found := guard(func() error {
		return db.View(func(btx *bolt.Tx) error { return checkKeyRanges(btx, file, db.Info().PageSize) })
	})
	if !errors.Is(found, ErrDamaged) || errors.As(found, &f) {
		return err
	}
	return found
}

// fromStorage reports whether a panic being recovered is a memory fault or
// was raised inside bbolt, rather than a bug in a caller's function (those
// are the committer's to report, as a *PanicError).
func fromStorage(v any) bool {
	// A fault at a real address (not a nil dereference) while reading
	// through bbolt's mapping is the file's doing (SetPanicOnFault).
	if fe, ok := v.(interface{ Addr() uintptr }); ok && fe.Addr() >= 1<<16 {
		return true
	}
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "runtime.") {
			if !more {
				return false
			}
			continue
		}
		return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
	}
}

// checkSize checks the file is at least as long as its last commit says:
// bbolt grows a file before it commits into the new room, so a shorter one
// was cut short, and reading it would run past its end.
func checkSize(btx *bolt.Tx, file *os.File) error {
	fi, err := file.Stat()
	if err != nil {
		return fmt.Errorf("stat ledger: %w", err)
	}
	if fi.Size() < btx.Size() {
		return fmt.Errorf("%w: the file is %d bytes, its last commit needs %d (truncated)", ErrDamaged, fi.Size(), btx.Size())
	}
	return nil
}

//go:build linux

package boltstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// journaled is a held ledger whose generations the test sees begin: each
// time, the file is copied as a stopped machine's disk holds it then (the
// checkpoint, synced). It returns the Store and where the copy is.
func journaled(t *testing.T, opts Options) (l *Store, path, checkpoint string) {
	t.Helper()
	if !NoSyncSupported() {
		t.Skip("no boot id here: no journal")
	}
	dir := t.TempDir()
	path, checkpoint = filepath.Join(dir, "ledger.db"), filepath.Join(dir, "checkpoint")
	opts.Create = true
	l, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Open has begun no generation: the first commit does. (On the
	// committer's goroutine: a t.Fatal there would end it holding the
	// generation's pin, and the test would wait for ever.)
	l.generationBegun = func() {
		if err := copyPlain(path, checkpoint); err != nil {
			t.Errorf("copy the checkpoint: %v", err)
		}
	}
	t.Cleanup(func() { l.Close() })
	return l, path, checkpoint
}

// storedEvents returns the stored bytes of every event of the ledger at
// path (l: read through it, the file it holds).
func storedEvents(t *testing.T, path string, l *Store) [][]byte {
	t.Helper()
	if l == nil {
		var err error
		if l, err = Open(path, Options{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	var out [][]byte
	err := l.View(func(tx *Tx) error {
		return tx.ScanRaw(1, tx.Head().Seq+1, func(_ uint64, raw []byte) error {
			out = append(out, bytes.Clone(raw))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// powerLoss writes to dir what a machine that stopped now may have left on
// disk of a file whose last synced state is checkpoint and whose page
// cache holds now: each page written since the checkpoint (the meta pages
// included) as it was, as it is now, or torn (random bytes), at random.
func powerLoss(t *testing.T, rng *rand.Rand, checkpoint, now, dir string) string {
	t.Helper()
	a, err := os.ReadFile(checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(now)
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	img := bytes.Clone(b)
	changed := 0
	for off := 0; off < len(b); off += ps {
		end := min(off+ps, len(b))
		var was []byte
		if off < len(a) {
			was = a[off:min(end, len(a))]
		}
		if bytes.Equal(was, b[off:end]) {
			continue
		}
		changed++
		switch rng.IntN(3) {
		case 0:
			copy(img[off:end], was)
			if len(was) < end-off {
				clear(img[off+len(was) : end])
			}
		case 1: // as now
		case 2:
			for i := off; i < end; i++ {
				img[i] = byte(rng.Uint32())
			}
		}
	}
	if changed == 0 {
		t.Fatal("no page changed since the checkpoint")
	}
	out := filepath.Join(dir, "ledger.db")
	if err := os.WriteFile(out, img, 0o600); err != nil {
		t.Fatal(err)
	}
	copyFile(t, journalPath(now), journalPath(out))
	return out
}

func appendOne(t *testing.T, l *Store, i int) {
	t.Helper()
	err := l.Update(func(tx *Tx) error {
		_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{"T-1"}, Payload: []byte{0x81, 0xa1, 'i', byte(i & 0x7f)}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A machine that stops while a process commits through the journal loses
// no acknowledged event and leaves a ledger that verifies: Open, in the
// next boot, writes the checkpoint back and ingests the journal's events —
// whatever became of the pages written since (kept, lost or torn), across
// generations (150 commits: two begin after the first).
func TestJournalPowerLoss(t *testing.T) {
	for _, commits := range []int{1, 40, 150} {
		l, path, checkpoint := journaled(t, Options{Hold: true})
		for i := range commits {
			appendOne(t, l, i)
		}
		want := storedEvents(t, path, l) // what was acknowledged: all of it
		rng := rand.New(rand.NewPCG(uint64(commits), 7))
		for round := range 12 {
			setBoot(t, "boot-after-"+string(rune('a'+round)))
			img := powerLoss(t, rng, checkpoint, path, t.TempDir())
			if _, err := Open(img, Options{ReadOnly: true}); !errors.Is(err, ErrUnrecovered) {
				t.Fatalf("%d commits, round %d: a reader opened the image: %v, want ErrUnrecovered", commits, round, err)
			}
			r, err := Open(img, Options{})
			if err != nil {
				t.Fatalf("%d commits, round %d: recover: %v", commits, round, err)
			}
			rep, err := r.Verify(context.Background(), VerifyOptions{})
			r.Close()
			if err != nil {
				t.Fatalf("%d commits, round %d: verify after recovery: %v", commits, round, err)
			}
			got := storedEvents(t, img, nil)
			if len(got) != len(want) || rep.Size != uint64(len(want)) {
				t.Fatalf("%d commits, round %d: %d events after recovery (verify: %d), want %d", commits, round, len(got), rep.Size, len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("%d commits, round %d: event %d differs after recovery", commits, round, i+1)
				}
			}
			if h := readHeader(t, img); h {
				t.Fatalf("%d commits, round %d: the journal still holds after recovery", commits, round)
			}
		}
		setBoot(t, mustBoot(t))
		l.Close()
	}
}

func mustBoot(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}

// readHeader tells whether the journal of the ledger at path holds.
func readHeader(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(journalPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	_, ok := decodeHeader(b)
	return ok
}

// A record cut short by the stop was never acknowledged: recovery ingests
// the records before it.
func TestJournalTornRecord(t *testing.T) {
	l, path, checkpoint := journaled(t, Options{Hold: true})
	for i := range 5 {
		appendOne(t, l, i)
	}
	want := storedEvents(t, path, l)
	j, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := decodeHeader(j)
	body := j[journalRecords:]
	if evs, err := readRecords(body, h.salt); len(evs) != 5 || err != nil {
		t.Fatalf("the journal holds %d events (%v), want 5", len(evs), err)
	}
	// The last record's last byte, torn.
	end := 0
	for b := body; ; {
		n := int(uint32(b[8]) | uint32(b[9])<<8 | uint32(b[10])<<16 | uint32(b[11])<<24)
		if _, ok := recordAt(b[12+n+8:], h.salt); !ok {
			end += 12 + n + 8
			break
		}
		end += 12 + n + 8
		b = b[12+n+8:]
	}
	j[journalRecords+end-1] ^= 0xff
	dir := t.TempDir()
	img := filepath.Join(dir, "ledger.db")
	copyFile(t, checkpoint, img) // nothing of the unsynced commits reached the disk
	if err := os.WriteFile(journalPath(img), j, 0o600); err != nil {
		t.Fatal(err)
	}
	setBoot(t, "another-boot")
	r, err := Open(img, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	got := storedEvents(t, img, nil)
	if len(got) != len(want)-1 {
		t.Fatalf("%d events after recovery, want the %d before the torn record", len(got), len(want)-1)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d differs", i+1)
		}
	}
}

// A journal damaged after it was written — a record other than the last,
// any byte of it (its salt, its length, its events, its sum), or the
// header of a generation whose records follow — is not taken for a record
// or a header cut short by a stop: recovering without it would drop
// acknowledged commits in silence (it did: a writer's Open ingested the
// records before the damaged one, and verify then passed). Open refuses
// with ErrDamaged and writes nothing, to the file or the journal.
func TestJournalDamagedNotTakenForTorn(t *testing.T) {
	l, path, checkpoint := journaled(t, Options{Hold: true})
	for i := range 5 {
		appendOne(t, l, i)
	}
	j, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := decodeHeader(j)
	// Where records 2 and 3 begin.
	var starts []int
	for at := journalRecords; ; {
		n, ok := recordAt(j[at:], h.salt)
		if !ok {
			break
		}
		starts = append(starts, at)
		at += 12 + n + 8
	}
	if len(starts) != 6 {
		t.Fatalf("%d records, want 5 and the sentinel", len(starts))
	}
	starts = starts[1:] // (the sentinel: journalSentinel)
	second, third := starts[1], starts[2]
	for _, tc := range []struct {
		name string
		at   int
	}{
		{"record salt", second},
		{"record length", second + 9},
		{"record events", second + 20},
		{"record sum", third - 1},
		{"header magic", 0},
		{"header salt", 8},
		{"header salt's last byte", 15},
		{"header boot", 20},
		{"header meta", 8 + 8 + 1 + 64 + 4 + 40},
		{"header sum", headerLen - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(j)
			bad[tc.at] ^= 0x40
			dir := t.TempDir()
			img := filepath.Join(dir, "ledger.db")
			copyFile(t, checkpoint, img)
			if err := os.WriteFile(journalPath(img), bad, 0o600); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			setBoot(t, "another-boot")
			defer setBoot(t, mustBoot(t))
			r, err := Open(img, Options{})
			if err == nil {
				r.Close()
				t.Fatalf("opened, recovering %d events; want ErrDamaged", len(storedEvents(t, img, nil)))
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("open: %v; want ErrDamaged saying nothing was written", err)
			}
			after, _ := os.ReadFile(img)
			jafter, _ := os.ReadFile(journalPath(img))
			if !bytes.Equal(before, after) || !bytes.Equal(bad, jafter) {
				t.Fatal("the refused open changed the file or its journal")
			}
		})
	}
}

// A header cut short as it was retired (or replaced by the next
// generation's), after the file was synced with every commit of its
// generation, leaves its magic and salt with its records after it: the
// file holds all their events, so the open goes on — in another boot and
// in the same — and retires the header; nothing is ingested twice. (The
// refusal of a damaged header refused this healthy ledger: review.)
func TestJournalHeaderTornAtRetire(t *testing.T) {
	for _, boot := range []string{"another-boot", ""} {
		l, path, _ := journaled(t, Options{Hold: true})
		for i := range 5 {
			appendOne(t, l, i)
		}
		j, err := os.ReadFile(journalPath(path))
		if err != nil {
			t.Fatal(err)
		}
		want := storedEvents(t, path, l)
		l.Close() // the generation ends: the file synced, the header retired
		torn := bytes.Clone(j)
		clear(torn[16:headerLen]) // magic and salt kept, the rest zeros
		img := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, path, img)
		if err := os.WriteFile(journalPath(img), torn, 0o600); err != nil {
			t.Fatal(err)
		}
		if boot != "" {
			setBoot(t, boot)
		}
		r, err := Open(img, Options{})
		if boot != "" {
			setBoot(t, mustBoot(t))
		}
		if err != nil {
			t.Fatalf("boot %q: open after a header torn at its retiring: %v", boot, err)
		}
		r.Close()
		if got := storedEvents(t, img, nil); len(got) != len(want) {
			t.Errorf("boot %q: %d events, want %d", boot, len(got), len(want))
		}
		if jafter, _ := os.ReadFile(journalPath(img)); slices.ContainsFunc(jafter[:headerLen], func(c byte) bool { return c != 0 }) {
			t.Errorf("boot %q: the torn header was not retired", boot)
		}
	}
}

// In the same boot, a process killed mid-generation left its commits whole
// in the page cache: a reader reads them, and a writer's Open syncs the
// file and retires the header, replaying nothing.
func TestJournalSameBoot(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	for i := range 10 {
		appendOne(t, l, i)
	}
	want := storedEvents(t, path, l)
	img := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, path, img)
	copyFile(t, journalPath(path), journalPath(img))
	if !readHeader(t, img) {
		t.Fatal("no header holds mid-generation")
	}
	if got := storedEvents(t, img, nil); len(got) != len(want) {
		t.Fatalf("a reader read %d events, want %d", len(got), len(want))
	}
	r, err := Open(img, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if readHeader(t, img) {
		t.Error("a writer's Open left the header holding")
	}
	r.Close()
	if got := storedEvents(t, img, nil); len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
}

// A journal is written back only onto the file its checkpoint is from:
// another ledger's journal beside a file is refused, and nothing written.
func TestJournalOtherLedger(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	for i := range 3 {
		appendOne(t, l, i)
	}
	other := filepath.Join(t.TempDir(), "ledger.db")
	o, err := Open(other, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, o, 7)
	o.Close()
	copyFile(t, journalPath(path), journalPath(other))
	before, _ := os.ReadFile(other)
	setBoot(t, "another-boot")
	if _, err := Open(other, Options{}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("open with another ledger's journal: %v, want ErrDamaged", err)
	}
	if after, _ := os.ReadFile(other); !bytes.Equal(before, after) {
		t.Error("the file changed")
	}
}

// A hold of the shared file ends its generation: the header retired, the
// file synced, before another process may have it; and a Close of the held
// file does the same.
func TestJournalRetiredAtRelease(t *testing.T) {
	for _, hold := range []bool{false, true} {
		l, path, _ := journaled(t, Options{Hold: hold})
		for i := range 3 {
			appendOne(t, l, i)
		}
		if !hold {
			// Another process waits: the holder lets go after its commit.
			w, err := Open(path, Options{ReadOnly: true, LockTimeout: 5e9})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.View(func(*Tx) error { return nil }); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if readHeader(t, path) {
				t.Errorf("hold %v: the header holds while another process reads", hold)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if readHeader(t, path) {
			t.Errorf("hold %v: the header holds after Close", hold)
		}
	}
}

// A process that may not map the journal's address space (a limit on it)
// commits synced, as bbolt would: no header, every event there.
func TestJournalNoRoomToMap(t *testing.T) {
	old := journalMap
	journalMap = 1 << 47 // past what a process may map here
	t.Cleanup(func() { journalMap = old })
	l, path, _ := journaled(t, Options{})
	for i := range 5 {
		appendOne(t, l, i)
	}
	if !l.nomap.Load() {
		t.Fatal("the mapping was not refused: the test maps too little")
	}
	if readHeader(t, path) {
		t.Error("a header holds: commits went through the journal")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedEvents(t, path, nil); len(got) != 5 {
		t.Fatalf("%d events, want 5", len(got))
	}
}

// The journal of a ledger deleted after a stop is not the next one's: a
// ledger created at the path opens, and its commits go to a new journal.
func TestJournalOfDeletedLedger(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	for i := range 3 {
		appendOne(t, l, i)
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "ledger.db")
	copyFile(t, journalPath(path), journalPath(img)) // a header that holds
	setBoot(t, "another-boot")
	n, err := Open(img, Options{Create: true})
	if err != nil {
		t.Fatalf("create beside a deleted ledger's journal: %v", err)
	}
	appendN(t, n, 2)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedEvents(t, img, nil); len(got) != 2 {
		t.Fatalf("%d events, want 2", len(got))
	}
}

// Processes naming one ledger through different links share its journal:
// it is beside the file, not the link. With a journal beside the link, a
// process that committed through the link and stopped with the machine
// left a holding generation that an open through the file's own name
// never saw (its commits lost), and a later open through the link wrote
// that stale checkpoint back over everything committed since.
func TestJournalThroughLink(t *testing.T) {
	if !NoSyncSupported() {
		t.Skip("no boot id here: no journal")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "ledger.db")
	c, err := Open(file, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{journalPath(link), unsyncedMarker(link)} {
		if filepath.Dir(name) != dir {
			t.Errorf("%s: not beside the file %s", name, file)
		}
	}
	l, err := Open(link, Options{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 5 {
		appendOne(t, l, i)
	}
	if _, err := os.Lstat(link + journalSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a journal beside the link: %v", err)
	}
	if !readHeader(t, file) {
		t.Fatal("no header holds beside the file mid-generation")
	}
	l.Close()
	if readHeader(t, file) {
		t.Error("Close left the header holding")
	}
}

// Open refuses a link to a missing file: a ledger created through it
// would be made wherever the link points (a stale link to /nonexistent
// made it).
func TestOpenRefusesDanglingLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "missing.db")
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{Create: true}, {Create: true, Hold: true}, {ReadOnly: true}} {
		if _, err := Open(link, opts); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%+v: %v, want a missing file", opts, err)
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%+v: the link's target was made", opts)
		}
	}
}

// A file with more than one name (hard links) commits synced, through no
// journal: an open through its other name would look for the journal
// beside that name. A name added while a Store commits ends its
// generation at the next one's start.
func TestJournalHardLinkedFileCommitsSynced(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	appendOne(t, l, 0)
	if !readHeader(t, path) {
		t.Fatal("no header holds mid-generation")
	}
	other := filepath.Join(t.TempDir(), "other.db")
	if err := os.Link(path, other); err != nil {
		t.Skipf("no hard link here: %v", err)
	}
	// The next commit ends the generation (the file synced, the header
	// retired): an open through the other name, which cannot see this
	// journal, finds no generation left holding. (It ran on to its 64th
	// commit: killed, then opened after a restart through the other name
	// and written, the file was then refused as damaged through this one,
	// its checkpoint's pages reused; attack round crash2.)
	appendOne(t, l, 1)
	if readHeader(t, path) {
		t.Error("a generation runs on past a commit on a file with two names")
	}
	l.generationBegun = func() { t.Error("a generation began on a file with two names") }
	for i := range genCommits + 1 {
		appendOne(t, l, 2+i)
	}
	if readHeader(t, path) {
		t.Error("a generation runs on a file with two names")
	}
	l.Close()

	file := filepath.Join(t.TempDir(), "ledger.db")
	c, err := Open(file, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := os.Link(file, file+".2"); err != nil {
		t.Fatal(err)
	}
	h, err := Open(file, Options{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.generationBegun = func() { t.Error("a generation began on a file with two names") }
	for i := range 3 {
		appendOne(t, h, i)
	}
	if readHeader(t, file) {
		t.Error("a header holds")
	}
	if got := storedEvents(t, file, h); len(got) != 3 {
		t.Errorf("%d events, want 3", len(got))
	}
}

// A journal holding commits, or an unsynced marker, that a logbook older
// than Beside left beside a link is refused, naming where it belongs: an
// open looks beside the file, and would miss it. Moved there, it is
// settled as any journal; a retired one beside the link holds nothing.
func TestOpenRefusesJournalLeftBesideLink(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	for i := range 3 {
		appendOne(t, l, i)
	}
	img := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, path, img)
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(img, link); err != nil {
		t.Fatal(err)
	}
	copyFile(t, journalPath(path), link+journalSuffix) // where an older logbook wrote it
	for _, opts := range []Options{{}, {ReadOnly: true}} {
		_, err := Open(link, opts)
		if !errors.Is(err, ErrUnrecovered) || !strings.Contains(err.Error(), "move it to "+journalPath(img)) {
			t.Fatalf("%+v: open through the link: %v, want ErrUnrecovered naming %s", opts, err, journalPath(img))
		}
	}
	if err := os.Rename(link+journalSuffix, journalPath(img)); err != nil {
		t.Fatal(err)
	}
	r, err := Open(link, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if readHeader(t, img) {
		t.Error("the moved journal still holds after a writer's open")
	}
	if err := os.WriteFile(link+journalSuffix, make([]byte, journalRecords), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := Open(link, Options{}); err != nil {
		t.Fatalf("a retired journal beside the link: %v", err)
	} else {
		r.Close()
	}
	if err := os.WriteFile(link+unsyncedSuffix, []byte("a-boot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, Options{}); !errors.Is(err, ErrUnrecovered) {
		t.Fatalf("an unsynced marker beside the link: %v, want ErrUnrecovered", err)
	}
}

// A holding journal left by a process that died (this boot) is settled by
// an open through any spelling of the file's path: "dir/./ledger.db" or a
// linked folder name the same journal, which is not one left beside a link
// (an open with --db ./ledger.db after a kill -9 was refused so).
func TestJournalThroughAnotherSpelling(t *testing.T) {
	l, path, _ := journaled(t, Options{Hold: true})
	for i := range 3 {
		appendOne(t, l, i)
	}
	dir := t.TempDir()
	linked := filepath.Join(t.TempDir(), "folder")
	if err := os.Symlink(dir, linked); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{dir + "/./ledger.db", filepath.Join(linked, "ledger.db")} {
		img := filepath.Join(dir, "ledger.db")
		copyFile(t, path, img)
		copyFile(t, journalPath(path), journalPath(img))
		r, err := Open(name, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.Close()
		if readHeader(t, img) {
			t.Errorf("%s: the journal still holds after a writer's open", name)
		}
		os.Remove(journalPath(img))
	}
}

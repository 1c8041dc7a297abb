package boltstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// formatEvent is the i'th event of the format tests: payloads of varying
// length, so no two events hash alike.
func formatEvent(i int) ledger.Event {
	return ledger.Event{Type: "test.appended", Version: 1, Actor: "A-0001",
		Subjects: []string{fmt.Sprintf("T-%04d", i)}, Payload: append([]byte{0xc4, byte(i % 50)}, make([]byte, i%50)...)}
}

// TestFormatsAgree builds the same events into a file of each format — in
// commits of varying sizes, some rolled back, from two Stores taking turns
// on the format-3 file so its leaf cache goes stale — and checks that every
// node, root, range root, inclusion and consistency proof of every size is
// the same in each as in format 1, and verifies against the roots.
func TestFormatsAgree(t *testing.T) {
	const n = 150
	dir := t.TempDir()
	clock := func() time.Time { return time.UnixMilli(1_700_000_000_000) }
	open := func(name string, format uint64) *Store {
		l, err := Open(filepath.Join(dir, name), Options{Create: true, Format: format, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	v1 := open("v1.db", 1)
	v2 := open("v2.db", 2)
	v3a := open("v3.db", 3)
	v3b := open("v3.db", 0) // the default: FormatVersion
	errRollback := errors.New("rolled back")
	appendN := func(l *Store, first, k int, fail bool) {
		err := l.Update(func(tx *Tx) error {
			for i := first; i < first+k; i++ {
				if _, err := tx.Append(formatEvent(i)); err != nil {
					return err
				}
			}
			if fail {
				return errRollback
			}
			return nil
		})
		if fail != errors.Is(err, errRollback) || (!fail && err != nil) {
			t.Fatalf("append %d..%d: %v", first, first+k, err)
		}
	}
	batch := []int{1, 3, 16, 2, 31, 1, 1, 17, 5, 40, 7, 1, 33}
	for i, done := 0, 0; done < n; i++ {
		k := min(batch[i%len(batch)], n-done)
		v3 := v3a
		if i%3 == 1 {
			v3 = v3b
		}
		if i%4 == 2 {
			appendN(v2, done, 9, true) // its tail cache runs ahead, then is dropped
			appendN(v3, done, 9, true)
		}
		appendN(v1, done, k, false)
		appendN(v2, done, k, false)
		appendN(v3, done, k, false)
		done += k
	}

	var got []uint64
	for _, l := range []*Store{v1, v2, v3a} {
		l.View(func(tx *Tx) error { got = append(got, tx.Format()); return nil })
	}
	if !slices.Equal(got, []uint64{1, 2, 3}) || FormatVersion != 3 {
		t.Fatalf("formats %v, want [1 2 3]", got)
	}
	// Format 2 stores levels 4 and up only, a sub-bucket each.
	err := v2.View(func(tx *Tx) error {
		return tx.btx.Bucket(bucketMerkle).ForEachBucket(func(name []byte) error {
			if name[0] < baseLevel {
				return fmt.Errorf("format 2 stores level %d", name[0])
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Format 3 stores the same nodes in the merkle bucket itself, in the
	// order they were completed.
	err = v3a.View(func(tx *Tx) error {
		var want [][]byte
		for seq := uint64(1 << baseLevel); seq <= n; seq += 1 << baseLevel {
			for level := uint(baseLevel); seq%(1<<level) == 0; level++ {
				k, _ := nodeKey(level, seq>>level-1)
				want = append(want, k)
			}
		}
		var keys [][]byte
		err := tx.btx.Bucket(bucketMerkle).ForEach(func(k, v []byte) error {
			if v == nil || len(v) != 32 {
				return fmt.Errorf("format 3: key %x holds %d bytes (or a bucket)", k, len(v))
			}
			keys = append(keys, k)
			return nil
		})
		if err == nil && fmt.Sprint(keys) != fmt.Sprint(want) {
			err = fmt.Errorf("format 3 node keys\n%x, want\n%x", keys, want)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, other := range []*Store{v2, v3a} {
		if err := formatsAgree(v1, other, n); err != nil {
			t.Fatalf("%s: %v", other.Path(), err)
		}
	}
	for _, l := range []*Store{v1, v2, v3a} {
		if _, err := l.Verify(context.Background(), VerifyOptions{Chunk: 7}); err != nil {
			t.Fatalf("verify %s: %v", l.Path(), err)
		}
	}
}

// formatsAgree checks that every node, root, range root, inclusion and
// consistency proof of every size up to n is the same in v1 and other, and
// that other's verify against its roots.
func formatsAgree(v1, other *Store, n uint64) error {
	return v1.View(func(t1 *Tx) error {
		return other.View(func(t2 *Tx) error {
			if t1.Head() != t2.Head() || t1.Head().Seq != n {
				return fmt.Errorf("heads %v and %v", t1.Head(), t2.Head())
			}
			for level := uint(0); n>>level > 0; level++ {
				for i := range uint64(n >> level) {
					a, err1 := t1.Node(level, i)
					b, err2 := t2.Node(level, i)
					if err1 != nil || err2 != nil || a != b {
						return fmt.Errorf("node %d/%d: %v %v / %v %v", level, i, a, err1, b, err2)
					}
				}
			}
			same := func(what string, a, b []ledger.Hash, err1, err2 error) error {
				if err1 != nil || err2 != nil || !slices.Equal(a, b) {
					return fmt.Errorf("%s: %v (%v) / %v (%v)", what, a, err1, b, err2)
				}
				return nil
			}
			for size := uint64(1); size <= n; size++ {
				r1, err1 := t1.Root(size)
				r2, err2 := t2.Root(size)
				if err := same(fmt.Sprint("root ", size), []ledger.Hash{r1}, []ledger.Hash{r2}, err1, err2); err != nil {
					return err
				}
				for seq := uint64(1); seq <= size; seq++ {
					p1, err1 := t1.InclusionProof(seq, size)
					p2, err2 := t2.InclusionProof(seq, size)
					if err := same(fmt.Sprintf("inclusion %d/%d", seq, size), p1, p2, err1, err2); err != nil {
						return err
					}
					leaf, _ := t2.Node(0, seq-1)
					if err := ledger.VerifyInclusion(leaf, seq-1, size, p2, r2); err != nil {
						return fmt.Errorf("inclusion %d/%d: %w", seq, size, err)
					}
					c1, err1 := t1.ConsistencyProof(seq, size)
					c2, err2 := t2.ConsistencyProof(seq, size)
					if err := same(fmt.Sprintf("consistency %d→%d", seq, size), c1, c2, err1, err2); err != nil {
						return err
					}
					old, _ := t2.Root(seq)
					if err := ledger.VerifyConsistency(seq, size, old, r2, c2); err != nil {
						return fmt.Errorf("consistency %d→%d: %w", seq, size, err)
					}
					g1, err1 := t1.RangeRoot(seq, size+1)
					g2, err2 := t2.RangeRoot(seq, size+1)
					if err := same(fmt.Sprintf("range [%d, %d)", seq, size+1), []ledger.Hash{g1}, []ledger.Hash{g2}, err1, err2); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
}

// TestFormatNewerRefused: a file of a format this binary does not know is
// refused with ErrFormat naming both versions, and never written.
func TestFormatNewerRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	editFile(t, path, func(btx *bolt.Tx) error {
		return btx.Bucket([]byte("meta")).Put([]byte("format"), key(FormatVersion+1))
	})
	_, err = Open(path, Options{})
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("open a format-%d file: %v, want ErrFormat", FormatVersion+1, err)
	}
	want := fmt.Sprintf("file is format %d, this binary reads formats 1 to %d", FormatVersion+1, FormatVersion)
	if got := err.Error(); !strings.Contains(got, want) {
		t.Fatalf("error %q does not say %q", got, want)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "new.db"), Options{Create: true, Format: FormatVersion + 1}); !errors.Is(err, ErrFormat) {
		t.Fatalf("create a format-%d file: %v, want ErrFormat", FormatVersion+1, err)
	}
}

// TestSnapshotKeepsFormat: a snapshot is in its source's format, with the
// same roots.
func TestSnapshotKeepsFormat(t *testing.T) {
	eachFormat(t, func(t *testing.T, format uint64) {
		path, _ := tamperLedger(t, 70, format)
		l := openPath(t, path, Options{})
		dst := filepath.Join(t.TempDir(), "copy.db")
		if _, err := l.Snapshot(context.Background(), dst, SnapshotOptions{Chunk: 5}); err != nil {
			t.Fatal(err)
		}
		c, err := Open(dst, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rep, err := c.Verify(context.Background(), VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var root ledger.Hash
		var got uint64
		l.View(func(tx *Tx) error { root, err = tx.Root(70); return err })
		c.View(func(tx *Tx) error { got = tx.Format(); return nil })
		if got != format || rep.Root != root || rep.Size != 70 {
			t.Fatalf("copy: format %d, size %d, root %v; want format %d, size 70, root %v", got, rep.Size, rep.Root, format, root)
		}
	})
}

// TestVerifyEventsOutOfRange: ranges past the head check nothing and
// report nothing (format 1, as before format 2, refuses a range starting
// past head+1: no stored leaf for the event before it).
func TestVerifyEventsOutOfRange(t *testing.T) {
	eachFormat(t, func(t *testing.T, format uint64) {
		path, _ := tamperLedger(t, 5, format)
		l := openPath(t, path, Options{ReadOnly: true})
		for _, r := range [][2]uint64{{6, 7}, {9, 12}, {7, 3}, {0, 0}} {
			if format == 1 && r[0] > 6 {
				continue
			}
			var checked uint64
			var problems []*ledger.IntegrityError
			err := l.View(func(tx *Tx) error {
				var err error
				checked, err = tx.VerifyEvents(r[0], r[1], func(p *ledger.IntegrityError) error { problems = append(problems, p); return nil })
				return err
			})
			if err != nil || checked != 0 {
				t.Errorf("VerifyEvents(%d, %d): %d checked, %v", r[0], r[1], checked, err)
			}
			if format >= 2 && len(problems) != 0 {
				t.Errorf("VerifyEvents(%d, %d): %v", r[0], r[1], problems)
			}
		}
	})
}

// TestVerifyBesideAppends: Verify checks the log as it stood when it began,
// while appends go on — in a format-3 file the nodes they store follow the
// last one it checks, in the same key space, and are not taken for stray.
func TestVerifyBesideAppends(t *testing.T) {
	eachFormat(t, func(t *testing.T, format uint64) {
		path, _ := tamperLedger(t, 70, format)
		l := openPath(t, path, Options{})
		appended := 0
		progress := func(done, total uint64) {
			if appended > 0 {
				return
			}
			appended++
			err := l.Update(func(tx *Tx) error {
				for i := range 70 {
					if _, err := tx.Append(formatEvent(i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}
		rep, err := l.Verify(context.Background(), VerifyOptions{Chunk: 4, Progress: progress})
		if err != nil || rep.Size != 70 || appended == 0 {
			t.Fatalf("verify beside appends: size %d, %v (appended: %d)", rep.Size, err, appended)
		}
		if rep, err := l.Verify(context.Background(), VerifyOptions{Chunk: 4}); err != nil || rep.Size != 140 {
			t.Fatalf("verify after: size %d, %v", rep.Size, err)
		}
	})
}

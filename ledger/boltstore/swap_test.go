package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// fillSpace writes n keys of about 100 bytes into the space name.
func fillSpace(tx *Tx, name string, n int) error {
	sp, err := tx.Space(name)
	if err != nil {
		return err
	}
	for i := range n {
		if err := sp.Put([]byte(fmt.Sprintf("%s-%08d", name, i)), bytes.Repeat([]byte{byte(i)}, 1+i%200)); err != nil {
			return err
		}
	}
	return nil
}

// ledgerAndScratch opens a new ledger and a scratch file beside it, in dir,
// both closed when the test ends.
func ledgerAndScratch(t *testing.T) (dir string, l, scratch *Store) {
	t.Helper()
	dir = t.TempDir()
	l, err := Open(filepath.Join(dir, "ledger.db"), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	scratch, err = OpenScratch(dir, "scratch-", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { scratch.Close() })
	return dir, l, scratch
}

// TestSwapReusesPages: dropping the spaces in one transaction of a series
// and copying a scratch file's in the next puts the copy in the pages the
// drop freed: the file's pages reach no further than before, and the
// copy holds exactly the scratch file's keys and values, in every space.
func TestSwapReusesPages(t *testing.T) {
	dir, l, scratch := ledgerAndScratch(t)
	if names, _ := filepath.Glob(filepath.Join(dir, "scratch-*")); len(names) != 0 {
		t.Fatalf("the scratch file has a name: %v", names)
	}
	// The live spaces are written a little at a time, as calls write them
	// (half-full pages); the scratch file's the same keys at once.
	for range 20 {
		if err := l.Update(func(tx *Tx) error {
			if _, err := tx.Append(ledger.Event{Type: "x", Version: 1}); err != nil {
				return err
			}
			return errors.Join(fillSpace(tx, "big", 1500), fillSpace(tx, "small", 3))
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := scratch.Update(func(tx *Tx) error {
		return errors.Join(fillSpace(tx, "big", 1500), fillSpace(tx, "small", 3), fillSpace(tx, "other", 10))
	}); err != nil {
		t.Fatal(err)
	}
	size := func() (n int64) {
		l.View(func(tx *Tx) error { n = tx.btx.Size(); return nil })
		return n
	}
	before := size()
	for round := range 3 {
		err := scratch.View(func(stx *Tx) error {
			copies := 0
			_, err := l.UpdateSeries(func(tx *Tx) (bool, error) {
				if copies == 0 {
					copies++
					return false, tx.DropSpaces()
				}
				if copies == 1 && tx.btx.Bucket(bucketSpaces) != nil {
					t.Error("the spaces are still there after DropSpaces")
				}
				copies++
				// "small" last, "big" in transactions of about 16 KiB.
				return tx.CopySpaces(stx, "small", 16<<10)
			})
			if copies < 10 {
				t.Errorf("copied in %d transactions, want many", copies-1)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if after := size(); after > before {
			t.Errorf("round %d: the file's pages reach %d bytes, %d before the swap", round, after, before)
		}
		var want, got [][]byte
		each := func(s *Store, out *[][]byte) {
			s.View(func(tx *Tx) error {
				return tx.btx.Bucket(bucketSpaces).ForEachBucket(func(name []byte) error {
					return tx.btx.Bucket(bucketSpaces).Bucket(name).ForEach(func(k, v []byte) error {
						*out = append(*out, append(append(append([]byte(nil), name...), k...), v...))
						return nil
					})
				})
			})
		}
		each(scratch, &want)
		each(l, &got)
		if len(want) != 1513 || len(got) != len(want) {
			t.Fatalf("round %d: %d keys copied of %d", round, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(want[i], got[i]) {
				t.Fatalf("round %d: key %d differs", round, i)
			}
		}
	}
	// Copying onto spaces that end where the source has no key is refused.
	if err := l.Update(func(tx *Tx) error {
		sp, err := tx.Space("other")
		if err != nil {
			return err
		}
		return sp.Put([]byte("zzz"), []byte{1})
	}); err != nil {
		t.Fatal(err)
	}
	err := scratch.View(func(stx *Tx) error {
		return l.Update(func(tx *Tx) error { _, err := tx.CopySpaces(stx, "big", 1<<20); return err })
	})
	if err == nil {
		t.Error("copied spaces over other spaces")
	}
	// bbolt's own consistency check.
	l.Close()
	db, err := bolt.Open(filepath.Join(dir, "ledger.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(btx *bolt.Tx) error {
		for err := range btx.Check() {
			t.Error(err)
		}
		return nil
	})
}

// TestUpdateSeries: the transactions of a series commit one after
// another, with no other call committing between them; the first that
// fails is rolled back and ends the series, the ones before it stay
// committed; a transaction of a series that appends is refused.
func TestUpdateSeries(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("hold %v", held), func(t *testing.T) {
			l, err := Open(filepath.Join(t.TempDir(), "ledger.db"), Options{Create: true, Hold: held})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			put := func(key string) func(*Tx) error {
				return func(tx *Tx) error {
					sp, err := tx.Space("s")
					if err != nil {
						return err
					}
					return sp.Put([]byte(key), []byte{1})
				}
			}
			has := func(tx *Tx, key string) bool {
				sp, _ := tx.Space("s")
				return sp.Get([]byte(key)) != nil
			}
			// series runs fns as a series, one transaction each.
			series := func(fns ...func(*Tx) error) error {
				i := 0
				_, err := l.UpdateSeries(func(tx *Tx) (bool, error) {
					i++
					return i == len(fns), fns[i-1](tx)
				})
				return err
			}
			queued := make(chan struct{})
			other := make(chan error, 1)
			err = series(func(tx *Tx) error {
				// A call of another goroutine comes while the series runs.
				go func() {
					close(queued)
					other <- l.Update(put("other"))
				}()
				<-queued
				for len(l.queue) == 0 { // until it waits for the committer
					runtime.Gosched()
				}
				return put("a")(tx)
			}, func(tx *Tx) error {
				if has(tx, "other") {
					t.Error("a call committed between two transactions of a series")
				}
				if !has(tx, "a") {
					t.Error("the series' first transaction is not seen by its second")
				}
				return put("b")(tx)
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := <-other; err != nil {
				t.Fatal(err)
			}
			cut := errors.New("cut")
			err = series(put("c"), func(tx *Tx) error {
				if err := put("d")(tx); err != nil {
					return err
				}
				return cut
			}, put("e"))
			if !errors.Is(err, cut) {
				t.Fatalf("series: %v, want its second transaction's error", err)
			}
			err = series(func(tx *Tx) error {
				_, err := tx.Append(ledger.Event{Type: "x", Version: 1})
				return err
			})
			if !errors.Is(err, errSeriesAppend) {
				t.Errorf("a series appended: %v", err)
			}
			l.View(func(tx *Tx) error {
				for key, want := range map[string]bool{"a": true, "b": true, "other": true, "c": true, "d": false, "e": false} {
					if has(tx, key) != want {
						t.Errorf("key %s stored: %v, want %v", key, !want, want)
					}
				}
				if tx.Head().Seq != 0 {
					t.Errorf("head %d after a series that appended", tx.Head().Seq)
				}
				return nil
			})
		})
	}
}

// TestOpenScratchLeavesNothing: a scratch file has no name once open, and
// works (commits) without one.
func TestOpenScratchLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenScratch(dir, "x-", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(tx *Tx) error { return fillSpace(tx, "s", 100) }); err != nil {
		t.Fatal(err)
	}
	if got := s.held.Info().PageSize; got != scratchPageSize {
		t.Errorf("scratch pages of %d bytes, want %d", got, scratchPageSize)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the scratch file's directory: %v", entries)
	}
}

// A space of small keys and no values is copied in several transactions
// of the budget, as one of large values is: what a transaction holds per
// key counts, not only the key's bytes (4,096 keys of 13 bytes, 52 KiB,
// took one transaction of a 64 KiB budget and several times that in
// memory).
func TestCopySpacesBudgetCountsKeys(t *testing.T) {
	_, l, scratch := ledgerAndScratch(t)
	const keys = 4096
	if err := scratch.Update(func(tx *Tx) error {
		sp, err := tx.Space("keys")
		if err != nil {
			return err
		}
		for i := range keys {
			if err := sp.Put([]byte(fmt.Sprintf("key-%09d", i)), nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	txs := 0
	err := scratch.View(func(stx *Tx) error {
		_, err := l.UpdateSeries(func(tx *Tx) (bool, error) {
			txs++
			return tx.CopySpaces(stx, "", 64<<10)
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if min := keys * (13 + keyOverhead) / (64 << 10); txs < min {
		t.Errorf("copied %d keys of 13 bytes in %d transactions of a 64 KiB budget, want at least %d", keys, txs, min)
	}
	n := 0
	l.View(func(tx *Tx) error {
		return tx.btx.Bucket(bucketSpaces).Bucket([]byte("keys")).ForEach(func(k, v []byte) error { n++; return nil })
	})
	if n != keys {
		t.Errorf("%d keys copied, want %d", n, keys)
	}
}

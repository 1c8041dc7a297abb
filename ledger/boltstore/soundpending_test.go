package boltstore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Pages a commit frees while a read transaction is open go pending, and
// bbolt writes them into the freelist with the free ones: a file closed
// (or copied) then lists them, and open's checks must not take them for
// pages in use. Readers are held across many commits of a held Store (not
// beside its journal's pin), of random length, some overlapping, and
// the file is checked as it grows, closed, and reopened by each freelist
// type.
func TestSoundFilesWithPendingPages(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SOUND_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (SOUND_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	path := filepath.Join(t.TempDir(), "ledger.db")
	// Journaled: its mapping never remaps, which would wait for the
	// readers held here.
	l, err := Open(path, Options{Create: true, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var readers []*bolt.Tx
	for i := range 200 {
		if rng.IntN(8) == 0 && len(readers) < 4 {
			rtx, err := l.held.Begin(false)
			if err != nil {
				t.Fatal(err)
			}
			readers = append(readers, rtx)
		}
		if len(readers) > 0 && rng.IntN(12) == 0 {
			k := rng.IntN(len(readers))
			readers[k].Rollback()
			readers = append(readers[:k], readers[k+1:]...)
		}
		if err := randomCommit(rng, l, i); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		if rng.IntN(8) == 0 {
			soundChecks(t, l, fmt.Sprintf("after commit %d, %d readers", i, len(readers)))
			// A copy of the file now (what a crash leaves: pending pages
			// listed), as bbolt alone opens it.
			img := filepath.Join(t.TempDir(), "copy.db")
			copyFile(t, path, img)
			soundFile(t, img, fmt.Sprintf("copy after commit %d", i))
		}
	}
	for _, r := range readers {
		r.Rollback()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	soundFile(t, path, "closed")
	r := openPath(t, path, Options{ReadOnly: true})
	r.Close()
}

// A raw bbolt file written with either freelist type, a reader held across
// commits that free thousands of pages (a freelist on overflow pages,
// pending pages in it), is sound to open's checks.
func TestSoundRawFreelistTypes(t *testing.T) {
	for _, ft := range []bolt.FreelistType{bolt.FreelistArrayType, bolt.FreelistMapType} {
		t.Run(string(ft), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "raw.db")
			db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: 1024, NoSync: true, NoGrowSync: true, FreelistType: ft, InitialMmapSize: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var reader *bolt.Tx
			for i := range 60 {
				if i%15 == 5 {
					if reader != nil {
						reader.Rollback()
					}
					if reader, err = db.Begin(false); err != nil {
						t.Fatal(err)
					}
				}
				err := db.Update(func(tx *bolt.Tx) error {
					b, err := tx.CreateBucketIfNotExists([]byte("spaces"))
					if err != nil {
						return err
					}
					sp, err := b.CreateBucketIfNotExists(fmt.Appendf(nil, "s%d", rng.IntN(3)))
					if err != nil {
						return err
					}
					for range 300 {
						k := fmt.Appendf(nil, "k%05d", rng.IntN(3000))
						if rng.IntN(3) == 0 {
							err = sp.Delete(k)
						} else {
							err = sp.Put(k, make([]byte, rng.IntN(900)))
						}
						if err != nil {
							return err
						}
					}
					if rng.IntN(10) == 0 {
						return sp.Put([]byte("big"), make([]byte, rng.IntN(3)*4000*1024)) // freed: a freelist of thousands of 1 KiB pages, on overflow pages
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if i%7 == 0 {
					img := filepath.Join(t.TempDir(), "copy.db")
					copyFile(t, path, img)
					soundFile(t, img, fmt.Sprintf("commit %d", i))
				}
			}
			if reader != nil {
				reader.Rollback()
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			soundFile(t, path, "closed")
			if pages := freelistPages(t, path, 1024); pages < 2 {
				t.Fatalf("the freelist takes %d page(s): the test did not build the shape it is for (a freelist on overflow pages)", pages)
			}
		})
	}
}

// freelistPages is how many pages the freelist of the file's newest meta
// page takes.
func freelistPages(t *testing.T, path string, ps uint64) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	var newest []byte
	for slot := range uint64(2) {
		m := make([]byte, metaLen)
		if _, err := f.ReadAt(m, int64(slot*ps)); err != nil {
			t.Fatal(err)
		}
		if validMeta(m) && (newest == nil || binary.LittleEndian.Uint64(m[metaTxidField:]) > binary.LittleEndian.Uint64(newest[metaTxidField:])) {
			newest = m
		}
	}
	fl, err := readFreelist(f, newest, ps, uint64(fi.Size())/ps)
	if err != nil || fl == nil {
		t.Fatalf("freelist: %v, %v", fl, err)
	}
	return fl.last - fl.first + 1
}

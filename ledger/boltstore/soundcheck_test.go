package boltstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// soundChecks runs open's and verify's checks of the trees (checkTrees,
// checkKeyRanges with the freelist), a writer's open's check of the
// freelist page (checkFreelistPage) and bbolt's own Tx.Check on the ledger
// through l, and fails the test if bbolt finds the file sound but either
// check of ours calls it damaged (or bbolt itself finds a problem).
func soundChecks(t *testing.T, l *Store, what string) {
	t.Helper()
	err := l.withDB(true, func(db *bolt.DB, file *os.File) error {
		return db.View(func(btx *bolt.Tx) error { return soundTx(db, btx, file) })
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// soundFile is soundChecks on the file at path, opened by bbolt alone
// (its freelist as the file has it).
func soundFile(t *testing.T, path, what string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer db.Close()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := db.View(func(btx *bolt.Tx) error { return soundTx(db, btx, file) }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func soundTx(db *bolt.DB, btx *bolt.Tx, file *os.File) error {
	var errs []error
	for err := range btx.Check() {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("bbolt's check: %w", errors.Join(errs...))
	}
	if err := checkTrees(btx, file, db.Info().PageSize, true); err != nil {
		return fmt.Errorf("checkTrees calls a sound file damaged: %w", err)
	}
	if err := checkKeyRanges(btx, file, db.Info().PageSize); err != nil {
		return fmt.Errorf("checkKeyRanges calls a sound file damaged: %w", err)
	}
	if err := checkFreelistPage(file); err != nil {
		return fmt.Errorf("a writer's open calls a sound file damaged: %w", err)
	}
	return nil
}

// randomCommit makes one commit of random work: events (some with payloads
// on overflow pages), puts and deletes in several spaces (values small and
// large), now and then dropping every space, which frees many pages.
func randomCommit(rng *rand.Rand, l *Store, i int) error {
	return l.Update(func(tx *Tx) error {
		for range rng.IntN(4) {
			n := 8 + rng.IntN(64)
			if rng.IntN(5) == 0 {
				n = 4096 + rng.IntN(20000)
			}
			payload := make([]byte, n)
			payload[0] = 0xc6 // msgpack bin 32
			payload[1], payload[2], payload[3], payload[4] = byte((n-5)>>24), byte((n-5)>>16), byte((n-5)>>8), byte(n-5)
			if _, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{fmt.Sprintf("T-%d", i%7)}, Payload: payload}); err != nil {
				return err
			}
		}
		if rng.IntN(25) == 0 {
			return tx.DropSpaces()
		}
		for range rng.IntN(3) {
			sp, err := tx.Space(fmt.Sprintf("space-%d", rng.IntN(5)))
			if err != nil {
				return err
			}
			for range rng.IntN(200) {
				k := fmt.Appendf(nil, "k%06d", rng.IntN(4000))
				switch rng.IntN(5) {
				case 0, 1:
					err = sp.Put(k, make([]byte, rng.IntN(200)))
				case 2:
					err = sp.Put(k, make([]byte, 3000+rng.IntN(12000)))
				default:
					err = sp.Delete(k)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// No sound file is called damaged by open's or verify's checks of its
// trees and freelist: ledgers built at random (events, spaces, deletes,
// dropped spaces, values on overflow pages; held or not, journaled or not,
// each format), checked as they grow through the Store, and by bbolt alone
// once closed, and verified whole.
func TestSoundFilesPassTreeChecks(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			opts := Options{Create: true, Hold: seed%2 == 1, Format: []uint64{0, 1, 2}[seed%3]}
			if seed == 4 {
				opts.Scratch, opts.Hold = true, true // no journal
			}
			path := filepath.Join(t.TempDir(), "ledger.db")
			l, err := Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for i := range 160 {
				if err := randomCommit(rng, l, i); err != nil {
					t.Fatalf("commit %d: %v", i, err)
				}
				if rng.IntN(10) == 0 {
					soundChecks(t, l, fmt.Sprintf("after commit %d", i))
				}
			}
			soundChecks(t, l, "at the end")
			if _, err := l.Verify(context.Background(), VerifyOptions{}); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			soundFile(t, path, "closed")
			r := openPath(t, path, Options{ReadOnly: true})
			if _, err := r.Verify(context.Background(), VerifyOptions{}); err != nil {
				t.Fatalf("verify after close: %v", err)
			}
		})
	}
}

// A freelist of 0xFFFF pages or more (its count the first of its ids, on
// overflow pages) is read as bbolt writes it: a file of 1 KiB pages, one
// value of 70,000 of them deleted.
func TestSoundFileLongFreelist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: 1024, NoSync: true, NoGrowSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	for i, fn := range []func(*bolt.Tx) error{
		func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("events"))
			if err != nil {
				return err
			}
			return b.Put([]byte("big"), make([]byte, 70000*1024))
		},
		func(tx *bolt.Tx) error { return tx.Bucket([]byte("events")).Delete([]byte("big")) },
		func(tx *bolt.Tx) error { return tx.Bucket([]byte("events")).Put([]byte("small"), []byte("x")) },
	} {
		if err := db.Update(fn); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if n := db.Stats().FreePageN + db.Stats().PendingPageN; n < 0xFFFF {
		t.Fatalf("%d pages free: too few for the long form", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	soundFile(t, path, "long freelist")
}

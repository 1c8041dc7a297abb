package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
)

// A rebuild folds the log into a scratch file of its own (OpenScratch),
// then, in one hold of the ledger file (UpdateSeries), drops the live
// spaces in one transaction (DropSpaces) and copies the scratch file's in
// the next (CopySpaces): the pages the first frees are the ones the second
// fills, so a rebuild does not grow the file.

// bucketStaging is where an older binary's rebuild folded its projections
// before swapping them in: one it left unfinished is dropped by DropSpaces.
var bucketStaging = []byte("staging")

// OpenScratch creates a scratch Store (Options.Scratch: held, never synced)
// in a new file in dir (the system temp dir if ""), named prefix, this
// process's pid, "-", random, suffix (CreateOwnTemp), and removes the
// file's name as soon as it is open: the file lives as long as the Store
// is open. A process killed in the moment between leaves it behind, under
// that name: the next OpenScratch with the same prefix in dir removes it
// (RemoveDeadTemps).
func OpenScratch(dir, prefix, suffix string) (*Store, error) {
	RemoveDeadTemps(dir, prefix)
	f, err := CreateOwnTemp(dir, prefix, suffix)
	if err != nil {
		return nil, fmt.Errorf("scratch: %w", err)
	}
	path := f.Name()
	f.Close()
	l, err := Open(path, Options{Create: true, Hold: true, Scratch: true})
	if rerr := os.Remove(path); err == nil && rerr != nil {
		l.Close()
		err = rerr
	}
	if err != nil {
		return nil, fmt.Errorf("scratch: %w", err)
	}
	return l, nil
}

// DropSpaces deletes every space (and the staging set an older binary's
// rebuild may have left), freeing their pages in this transaction: a
// later transaction reuses them. It reads every page of them to free it
// (letting go of the pages mapped after each space). The projections are
// then missing: State reads no version.
func (tx *Tx) DropSpaces() error {
	if !tx.btx.Writable() {
		return ErrReadOnly
	}
	// The pages were checked before the rebuild began (CheckPages), but
	// other processes committed since: the trees are checked again in
	// this hold, as a writer's open checks them, so that no page another
	// tree uses is freed.
	if tx.file == nil {
		return errors.New("drop spaces: not in a writer's transaction of a Store")
	}
	if err := checkTrees(tx.btx, tx.file, tx.btx.DB().Info().PageSize, true); err != nil {
		return err
	}
	tx.live = nil
	for _, name := range [][]byte{bucketSpaces, bucketStaging} {
		b := tx.btx.Bucket(name)
		if b == nil {
			continue
		}
		var spaces [][]byte
		b.ForEachBucket(func(k []byte) error { spaces = append(spaces, k); return nil })
		for _, sp := range spaces {
			// bbolt deletes the buckets a bucket holds, and theirs, by
			// recursion: a space holds none, but in a damaged file one
			// may hold itself, and the recursion would overflow the
			// stack (a fatal error, no recover).
			err := b.Bucket(sp).ForEachBucket(func(k []byte) error {
				return fmt.Errorf("%w: space %q holds a bucket (key %x): spaces hold none", ErrDamaged, sp, k)
			})
			if err != nil {
				return err
			}
			if err := b.DeleteBucket(sp); err != nil {
				return fmt.Errorf("drop space %s: %w", sp, err)
			}
			tx.releaseMapped()
		}
		if err := tx.btx.DeleteBucket(name); err != nil {
			return fmt.Errorf("drop spaces: %w", err)
		}
	}
	return nil
}

// keyOverhead is about what a transaction holds per key it puts besides
// the key and value (bbolt's in-memory entry, and its share of the slice
// that holds them): CopySpaces counts it against its budget, or a space of
// small keys (a task's events: 16 bytes, no value) took five times the
// budget in memory.
const keyOverhead = 128

// CopySpaces copies the spaces of src, a transaction of another Store (a
// rebuild's scratch file), into tx, which held none of them when the copy
// began: each space's keys in order, its pages packed full, in name order
// but for the space named last, copied after all the others (a rebuild's
// marker of complete projections, copied whole in one transaction). It
// copies about budget bytes of keys and values (each key counted with
// keyOverhead), then returns; a later transaction goes on from where the
// spaces in tx end, until it reports done. src must stay open until tx has
// committed (tx keeps src's values until then).
func (tx *Tx) CopySpaces(src *Tx, last string, budget int) (done bool, err error) {
	if !tx.btx.Writable() {
		return false, ErrReadOnly
	}
	from := src.btx.Bucket(bucketSpaces)
	if from == nil {
		return true, nil
	}
	to, err := tx.btx.CreateBucketIfNotExists(bucketSpaces)
	if err != nil {
		return false, fmt.Errorf("copy spaces: %w", err)
	}
	tx.live = nil
	var names [][]byte
	from.ForEachBucket(func(k []byte) error {
		if string(k) != last {
			names = append(names, k)
		}
		return nil
	})
	if from.Bucket([]byte(last)) != nil {
		names = append(names, []byte(last))
	}
	n, copied := 0, 0
	for _, name := range names {
		in, out := from.Bucket(name), to.Bucket(name)
		c := in.Cursor()
		k, v := c.First()
		if out == nil {
			if out, err = to.CreateBucket(name); err != nil {
				return false, fmt.Errorf("copy space %s: %w", name, err)
			}
		} else if end, _ := out.Cursor().Last(); end != nil {
			// Begun by an earlier transaction: on from its last key.
			if k, _ = c.Seek(end); k == nil || !bytes.Equal(k, end) {
				return false, fmt.Errorf("copy space %s: it ends at a key the source does not hold: the copy did not begin on an empty file", name)
			}
			k, v = c.Next()
		}
		out.FillPercent = 1
		if string(name) == last {
			// Whole, in the transaction that ends the copy: once it is
			// there, every other space is.
			budget = math.MaxInt
		}
		for ; k != nil; k, v = c.Next() {
			if copied >= budget {
				return false, nil
			}
			if v == nil {
				return false, fmt.Errorf("copy space %s: %w: a nested bucket at %x", name, ErrDamaged, k)
			}
			if err := out.Put(k, v); err != nil {
				return false, fmt.Errorf("copy space %s: %w", name, err)
			}
			copied += len(k) + len(v) + keyOverhead
			if n++; n%releaseEvery == 0 {
				src.releaseMapped()
			}
		}
	}
	return true, nil
}

package boltstore

import (
	"errors"
	"fmt"
	"os"
)

// A rebuild folds the log into a scratch file of its own (OpenScratch),
// then, in one hold of the ledger file (UpdateSeries), drops the live
// spaces in one transaction (DropSpaces) and copies the scratch file's in
// the next (CopySpaces): the pages the first frees are the ones the second
// fills, so a rebuild does not grow the file.

// OpenScratch creates a scratch Store (Options.Scratch: held, never synced)
// in a new file in dir (the system temp dir if ""), named after pattern as
// os.CreateTemp names files, and removes the file's name at once: the file
// lives as long as the Store is open, and nothing of it is left behind
// however the process ends.
func OpenScratch(dir, pattern string) (*Store, error) {
	f, err := os.CreateTemp(dir, pattern)
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
// later transaction reuses them. It reads every page of them to free it.
// The projections are then missing: State reads no version.
func (tx *Tx) DropSpaces() error {
	if !tx.btx.Writable() {
		return ErrReadOnly
	}
	tx.live = nil
	defer tx.releaseMapped()
	for _, name := range [][]byte{bucketSpaces, bucketStaging} {
		if tx.btx.Bucket(name) == nil {
			continue
		}
		if err := tx.btx.DeleteBucket(name); err != nil {
			return fmt.Errorf("drop spaces: %w", err)
		}
	}
	return nil
}

// CopySpaces copies every space of src, a transaction of another Store (a
// rebuild's scratch file), into tx, which must hold no space: each space's
// keys in order, its pages packed full. src must stay open until tx has
// committed (tx keeps src's values until then).
func (tx *Tx) CopySpaces(src *Tx) error {
	if !tx.btx.Writable() {
		return ErrReadOnly
	}
	from := src.btx.Bucket(bucketSpaces)
	if from == nil {
		return nil
	}
	to, err := tx.btx.CreateBucketIfNotExists(bucketSpaces)
	if err != nil {
		return fmt.Errorf("copy spaces: %w", err)
	}
	if k, _ := to.Cursor().First(); k != nil {
		return errors.New("copy spaces: the file holds spaces already")
	}
	tx.live = nil
	n := 0
	return from.ForEachBucket(func(name []byte) error {
		out, err := to.CreateBucket(name)
		if err != nil {
			return fmt.Errorf("copy space %s: %w", name, err)
		}
		out.FillPercent = 1
		c := from.Bucket(name).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				return fmt.Errorf("copy space %s: %w: a nested bucket at %x", name, ErrDamaged, k)
			}
			if err := out.Put(k, v); err != nil {
				return fmt.Errorf("copy space %s: %w", name, err)
			}
			if n++; n%releaseEvery == 0 {
				src.releaseMapped()
			}
		}
		return nil
	})
}

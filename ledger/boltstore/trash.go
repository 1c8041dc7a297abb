package boltstore

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Older binaries' rebuilds discarded the projections they replaced into
// the file's trash, in constant time, to be freed a bounded number of keys
// per transaction afterwards (every commit frees a little; EmptyTrash the
// rest). This binary frees what it drops at once (DropSpaces), so that the
// transaction after reuses the pages; it still empties what older ones
// left.

var bucketTrash = []byte("trash")

// emptyTrash frees discarded spaces, up to about budget bytes of their keys
// and values (the pages it reads are about twice that, scattered over the
// file), and reports whether any are left.
func (tx *Tx) emptyTrash(budget int) (more bool, err error) {
	trash := tx.btx.Bucket(bucketTrash)
	if trash == nil {
		return false, nil
	}
	if !tx.btx.Writable() {
		return false, ErrReadOnly
	}
	// The discarded pages are scattered: let go of them once read.
	defer tx.releaseMapped()
	freed := 0
	var batches [][]byte
	trash.ForEachBucket(func(k []byte) error { batches = append(batches, k); return nil })
	for _, id := range batches {
		batch := trash.Bucket(id)
		var names [][]byte
		batch.ForEachBucket(func(k []byte) error { names = append(names, k); return nil })
		for _, name := range names {
			n, empty, err := drain(batch.Bucket(name), budget-freed)
			freed += n
			if err != nil {
				return true, fmt.Errorf("empty trash: %w", err)
			}
			if !empty {
				return true, nil
			}
			if err := batch.DeleteBucket(name); err != nil {
				return true, fmt.Errorf("empty trash: %w", err)
			}
		}
		if err := trash.DeleteBucket(id); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return true, fmt.Errorf("empty trash: %w", err)
		}
	}
	return false, tx.btx.DeleteBucket(bucketTrash)
}

// drain deletes keys of b from its first, about budget bytes of keys and
// values, and returns the bytes deleted and whether b is now empty. A
// space holds no bucket: one found is damage (in a damaged file a bucket
// may hold itself, and bbolt's recursive delete would overflow the stack,
// as DropSpaces guards against).
func drain(b *bolt.Bucket, budget int) (n int, empty bool, err error) {
	var keys [][]byte
	c := b.Cursor()
	k, v := c.First()
	for ; k != nil && n < budget; k, v = c.Next() {
		if v == nil {
			return n, false, fmt.Errorf("%w: a trashed space holds a bucket (key %x): spaces hold none", ErrDamaged, k)
		}
		keys = append(keys, append([]byte(nil), k...))
		n += len(k) + len(v)
	}
	empty = k == nil
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return n, false, err
		}
	}
	return n, empty, nil
}

// EmptyTrash frees every discarded space, in short write transactions, so
// other processes keep working meanwhile.
func (l *Store) EmptyTrash() error {
	for more := true; more; {
		if err := l.Update(func(tx *Tx) (err error) {
			more, err = tx.emptyTrash(512 << 10)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

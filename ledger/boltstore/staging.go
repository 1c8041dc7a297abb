package boltstore

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A rebuild folds the whole log into a second set of spaces, the staging
// set, a chunk per transaction, while calls keep folding their events into
// the live set; once the staging set has caught up with the head, one short
// transaction swaps it in (PromoteStaging). Nobody waits for a refold, and
// nobody ever sees a half-built projection.

var bucketStaging = []byte("staging")

var errStagingAppend = errors.New("append through a staging view")

// Staging returns a view of tx whose Space calls reach the staging set of
// spaces instead of the live one. Everything else (head, events, nodes) is
// tx's; appending through the view is refused.
func (tx *Tx) Staging() *Tx {
	st := *tx
	st.spaces, st.live = bucketStaging, nil
	return &st
}

func (tx *Tx) staged() bool { return string(tx.spaces) == string(bucketStaging) }

// DropStaging discards the staging set, if any, in constant time (its pages
// are freed later, a bounded amount per transaction).
func (tx *Tx) DropStaging() error {
	if tx.btx.Bucket(bucketStaging) == nil {
		return nil
	}
	batch, err := tx.trashBatch()
	if err == nil {
		err = tx.btx.MoveBucket(bucketStaging, nil, batch)
	}
	if err != nil {
		return fmt.Errorf("drop staging spaces: %w", err)
	}
	return nil
}

// PromoteStaging makes the staging set the live one: every live space is
// discarded and every staging space moved into its place, in time
// proportional to the number of spaces, not their size. It must come before
// anything reaches the staging set in the same transaction (bbolt moves a
// bucket as last committed), and is refused otherwise.
func (tx *Tx) PromoteStaging() error {
	if *tx.stagingUsed {
		return errors.New("promote staging spaces: the staging set was used in this transaction")
	}
	staging := tx.btx.Bucket(bucketStaging)
	if staging == nil {
		return fmt.Errorf("promote staging spaces: %w", ErrNotFound)
	}
	live := tx.btx.Bucket(bucketSpaces)
	tx.live = nil // the spaces looked up are about to move to the trash
	batch, err := tx.trashBatch()
	if err != nil {
		return fmt.Errorf("promote staging spaces: %w", err)
	}
	move := func(from, to *bolt.Bucket) error {
		var names [][]byte
		from.ForEachBucket(func(k []byte) error { names = append(names, k); return nil })
		for _, name := range names {
			if err := tx.btx.MoveBucket(name, from, to); err != nil {
				return err
			}
		}
		return nil
	}
	if err := move(live, batch); err != nil {
		return fmt.Errorf("promote staging spaces: %w", err)
	}
	if err := move(staging, live); err != nil {
		return fmt.Errorf("promote staging spaces: %w", err)
	}
	return tx.btx.DeleteBucket(bucketStaging)
}

// HasStaging reports whether a staging set of spaces exists.
func (tx *Tx) HasStaging() bool { return tx.btx.Bucket(bucketStaging) != nil }

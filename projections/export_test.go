package projections

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// SetIndexLump sets how many knowledge events make a lump of the index
// until the returned func restores it.
func SetIndexLump(n uint64) (restore func()) {
	old := indexLump
	indexLump = n
	return func() { indexLump = old }
}

// SetBetweenSwapTxs makes fn run where a rebuild has dropped the old
// projections and copied n transactions' worth of the new ones in (its
// error cuts the rebuild there), and sets how many bytes a transaction of
// the copy copies (0: as it was), until the returned func restores both.
func SetBetweenSwapTxs(fn func(n int) error, budget int) (restore func()) {
	old, oldBudget := betweenSwapTxs, copyBudget
	betweenSwapTxs = fn
	if budget > 0 {
		copyBudget = budget
	}
	return func() { betweenSwapTxs, copyBudget = old, oldBudget }
}

// SetAfterRefoldTx has fn told how many chunks each transaction of a
// rebuild's refold folded, until the returned func restores it.
func SetAfterRefoldTx(fn func(chunks int)) (restore func()) {
	old := afterRefoldTx
	afterRefoldTx = fn
	return func() { afterRefoldTx = old }
}

// TxChunks is how many chunks a transaction of a rebuild's refold folds.
const TxChunks = txChunks

// TaskIndex is the task index's keys and values in the tasks space, and
// those its tasks' records make, both in order, each key and value in hex.
func TaskIndex(tx *boltstore.Tx) (stored, want []string, err error) {
	sp, err := tx.Space(spTasks)
	if err != nil {
		return nil, nil, err
	}
	err = sp.Scan(nil, false, func(k, v []byte) (bool, error) {
		if isIndexKey(k) {
			stored = append(stored, fmt.Sprintf("%x=%x", k, v))
		}
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	blocks := map[uint64]map[string]uint64{} // block → prefix → bitmap
	err = Tasks(tx, func(t Task) bool {
		n, _ := domain.ParseID(domain.TaskPrefix, t.ID)
		changes, buf := appendChanges(nil, nil, indexedOf(&t), 1<<(n&63), true)
		if blocks[n>>6] == nil {
			blocks[n>>6] = map[string]uint64{}
		}
		for _, c := range changes {
			blocks[n>>6][string(buf[c.start:c.end])] |= c.set
		}
		return true
	})
	for _, b := range slices.Sorted(maps.Keys(blocks)) {
		var v []byte
		for _, p := range slices.Sorted(maps.Keys(blocks[b])) {
			v = binary.BigEndian.AppendUint64(append(v, p...), blocks[b][p])
		}
		want = append(want, fmt.Sprintf("%x=%x", indexKey(nil, b), v))
	}
	return stored, want, err
}

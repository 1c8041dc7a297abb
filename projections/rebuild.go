package projections

import "github.com/logbook-dev/logbook/ledger/boltstore"

// StartRebuild begins refolding the whole log, at this binary's version,
// into a fresh staging set of spaces (an unfinished earlier rebuild's is
// dropped). The live projections go on serving, and being folded into, until
// ContinueRebuild promotes the staging set.
func StartRebuild(tx *boltstore.Tx) error {
	if err := tx.DropStaging(); err != nil {
		return err
	}
	return Reset(tx.Staging())
}

// ContinueRebuild folds at most limit more events (0: all) into the staging
// set started by StartRebuild, in an earlier transaction. When the events
// left fit in this call, it swaps the staging set in for the live one first
// and folds what is left into it, so the swap and the last events commit
// together; it then reports done. folded counts the events folded now,
// applied the events the (staging or new live) projections hold.
func ContinueRebuild(tx *boltstore.Tx, limit uint64) (done bool, folded, applied uint64, err error) {
	if !tx.HasStaging() {
		// Another process sharing the file finished the rebuild and
		// promoted its staging set: the live projections are the rebuilt
		// ones (CatchUp refuses them if they are of another version).
		folded, err = CatchUp(tx, 0)
		_, applied, _ = State(tx)
		return err == nil, folded, applied, err
	}
	_, applied, err = State(tx.Staging())
	if err != nil {
		return false, 0, 0, err
	}
	head := tx.Head().Seq
	if limit > 0 && head-applied > limit {
		folded, err = CatchUp(tx.Staging(), limit)
		return false, folded, applied + folded, err
	}
	if err := tx.PromoteStaging(); err != nil {
		return false, 0, applied, err
	}
	folded, err = CatchUp(tx, 0)
	return true, folded, applied + folded, err
}

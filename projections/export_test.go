package projections

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

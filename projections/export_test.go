package projections

// SetIndexLump sets how many knowledge events make a lump of the index
// until the returned func restores it.
func SetIndexLump(n uint64) (restore func()) {
	old := indexLump
	indexLump = n
	return func() { indexLump = old }
}

// SetBetweenSwapTxs makes fn run where a rebuild has dropped the old
// projections and not yet copied the new ones in (its error cuts the
// rebuild there), until the returned func restores it.
func SetBetweenSwapTxs(fn func() error) (restore func()) {
	old := betweenSwapTxs
	betweenSwapTxs = fn
	return func() { betweenSwapTxs = old }
}

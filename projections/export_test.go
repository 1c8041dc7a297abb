package projections

// SetIndexLump sets how many knowledge events make a lump of the index
// until the returned func restores it.
func SetIndexLump(n uint64) (restore func()) {
	old := indexLump
	indexLump = n
	return func() { indexLump = old }
}

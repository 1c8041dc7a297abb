//go:build !linux

package boltstore

// statPath is what checkSameFile reads of the file path names (the Linux
// version says why it is not os.Stat there).
func statPath(path string) (pathStat, error) { return statPathPortable(path) }

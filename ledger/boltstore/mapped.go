package boltstore

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// releaseMapped lets the kernel unmap the file pages this process has mapped
// so far in the transaction. bbolt reads the file through a shared read-only
// mapping, and each page fault maps a whole page-cache folio around the page
// (often 64-128 KiB), so a long transaction that reads scattered pages (a
// rebuild's chunk) would otherwise keep that many times the pages it reads
// resident. The data stays valid: the pages are mapped again from the page
// cache on the next access, and bbolt never writes the file through the
// mapping, nor a page a transaction can see before it commits.
func (tx *Tx) releaseMapped() { releaseMapped(tx.btx) }

func releaseMapped(btx *bolt.Tx) {
	info := btx.DB().Info()
	size := btx.Size()
	if info == nil || info.Data == 0 || size <= 0 {
		return
	}
	// The mapping is bbolt's, so it is passed on as the address it is.
	syscall.Syscall(syscall.SYS_MADVISE, info.Data, uintptr(size), syscall.MADV_DONTNEED)
}

// releaseEvery is how many events (or keys of a space) a long scan reads
// between releases of the pages it has mapped: a rebuild's chunk reads
// projection pages all over the file, and a walk over a whole space (a
// fingerprint, a comparison) would otherwise keep all of it resident.
const releaseEvery = 4096

// ReleaseMapped lets the kernel unmap the file pages this process has
// mapped, for a Store that holds its file open (Options.Hold): one that
// refolds into a scratch file of its own, say, would otherwise keep every
// page it has touched resident, transaction after transaction. A no-op for
// a Store without Hold: its committer closes the file, and so unmaps it,
// within quietHold.
func (l *Store) ReleaseMapped() error {
	if l.held == nil {
		return nil
	}
	return guard(func() error {
		return l.held.View(func(btx *bolt.Tx) error {
			releaseMapped(btx)
			return nil
		})
	})
}

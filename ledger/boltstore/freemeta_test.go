package boltstore

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// verify's freelist check reads the meta page of its read transaction
// from the file, where a writer of the same process (a held
// Store) may be writing that slot over: the txid read old and the freelist
// page id new named a freelist that lists pages freed since, which the
// read transaction's trees still use: a sound file called damaged. A meta
// page whose checksum fails (torn as read) now names no freelist.
func TestFreelistCheckSkipsTornMeta(t *testing.T) {
	const ps = 4096
	data := make([]byte, 8*ps)
	for slot := range 2 {
		m := data[slot*ps:]
		binary.LittleEndian.PutUint32(m[16:], metaMagic)
		binary.LittleEndian.PutUint32(m[20:], metaVersion)
		binary.LittleEndian.PutUint32(m[metaPageSize:], ps)
		binary.LittleEndian.PutUint64(m[metaFreeField:], 5)
		binary.LittleEndian.PutUint64(m[metaPgidField:], 8)
		binary.LittleEndian.PutUint64(m[metaTxidField:], uint64(10+slot))
	}
	// Slot 0 as a writer leaves it half written: txid 10 still, its
	// freelist field (and checksum) already the next commit's: page 6,
	// which is not a freelist.
	binary.LittleEndian.PutUint64(data[metaFreeField:], 6)
	w := rangeWalk{data: data, pageSize: ps, end: 8, seen: make([]uint64, 1)}
	if err := w.freelist(bytes.NewReader(data), 10); err != nil {
		t.Fatalf("a torn meta page's freelist checked: %v", err)
	}
}

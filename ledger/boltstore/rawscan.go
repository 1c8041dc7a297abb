package boltstore

import (
	"encoding/binary"
)

// ScanRaw calls fn with the stored bytes of each event with seq in
// [begin, end), in order, without decoding them: for callers that decode
// elsewhere, such as in another goroutine (a Tx itself must stay on its
// own). raw is valid only during the call. It stops at the first error and
// returns it.
func (tx *Tx) ScanRaw(begin, end uint64, fn func(seq uint64, raw []byte) error) error {
	c := tx.events.Cursor()
	n := 0
	for k, v := c.Seek(u64(begin)); k != nil && binary.BigEndian.Uint64(k) < end; k, v = c.Next() {
		if n++; n%releaseEvery == 0 {
			tx.releaseMapped()
		}
		if err := fn(binary.BigEndian.Uint64(k), v); err != nil {
			return err
		}
	}
	return nil
}

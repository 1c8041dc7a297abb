package boltstore

import "fmt"

// ScanRaw calls fn with the stored bytes of each event with seq in
// [begin, end), in order, without decoding them: for callers that decode
// elsewhere, such as in another goroutine (a Tx itself must stay on its
// own). raw is valid only during the call. It stops at the first error and
// returns it. An event of the range the head says the log holds but the
// file does not is ErrDamaged: a caller folding the scan would otherwise go
// on without it.
func (tx *Tx) ScanRaw(begin, end uint64, fn func(seq uint64, raw []byte) error) error {
	c := tx.events.Cursor()
	n := 0
	want := max(begin, 1) // the next seq the log holds
	var prev []byte
	for k, v := c.Seek(u64(begin)); k != nil; k, v = c.Next() {
		seq, ok := seqOf(k)
		if !ok {
			return fmt.Errorf("%w: an event key of %d bytes", ErrDamaged, len(k))
		}
		if err := inOrder(prev, k, false); err != nil {
			return err
		}
		prev = k
		if seq >= end {
			break
		}
		if seq != want && want <= tx.head.Seq {
			return tx.missing(want)
		}
		want = seq + 1
		if n++; n%releaseEvery == 0 {
			tx.releaseMapped()
		}
		if err := fn(seq, v); err != nil {
			return err
		}
	}
	if want < min(end, tx.head.Seq+1) {
		return tx.missing(want)
	}
	return nil
}

// missing is the error of event seq (at most the head) not being stored.
func (tx *Tx) missing(seq uint64) error {
	return fmt.Errorf("%w: event %d is missing (the head is seq %d)", ErrDamaged, seq, tx.head.Seq)
}

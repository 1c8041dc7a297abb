package boltstore

import (
	"bytes"
	"fmt"
)

// Range calls fn for each key in [begin, end), in order, until fn returns
// false or an error; a nil begin is the first key, a nil end is past the
// last. Keys and values are valid during the transaction only. Long walks
// are split across transactions by resuming from a key (see KeyAfter).
func (s *Space) Range(begin, end []byte, fn func(k, v []byte) (bool, error)) error {
	if s.b == nil {
		return nil
	}
	c := s.b.Cursor()
	var k, v []byte
	if begin == nil {
		k, v = c.First()
	} else {
		k, v = c.Seek(begin)
	}
	var prev []byte
	for n := 0; k != nil && (end == nil || bytes.Compare(k, end) < 0); k, v = c.Next() {
		if err := inOrder(prev, k, false); err != nil {
			return err
		}
		if err := s.notBucket(k, v); err != nil {
			return err
		}
		if n++; n%releaseEvery == 0 {
			releaseMapped(s.b.Tx())
		}
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
		prev = k
	}
	return nil
}

// inOrder checks that a cursor walking a bucket forwards (backwards with
// reverse) gave k after prev (nil: k is the first). Keys come in order
// from a sound file; a damaged page (a child pointer changed to point back
// into the tree) gives keys already given, and a walk to the end of the
// bucket would never end: ErrDamaged instead. prev and k stay valid for
// the transaction (releaseMapped only lets the pages be mapped again).
func inOrder(prev, k []byte, reverse bool) error {
	if prev == nil {
		return nil
	}
	if c := bytes.Compare(k, prev); c > 0 && !reverse || c < 0 && reverse {
		return nil
	}
	return fmt.Errorf("%w: a bucket's keys are out of order (%x after %x): a page of the file is not what it should be", ErrDamaged, k, prev)
}

// KeyAfter is the smallest key greater than k: where a Range resumes
// after k.
func KeyAfter(k []byte) []byte { return append(append(make([]byte, 0, len(k)+1), k...), 0) }

package boltstore

import "bytes"

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
	for n := 0; k != nil && (end == nil || bytes.Compare(k, end) < 0); k, v = c.Next() {
		if n++; n%releaseEvery == 0 {
			releaseMapped(s.b.Tx())
		}
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// KeyAfter is the smallest key greater than k: where a Range resumes
// after k.
func KeyAfter(k []byte) []byte { return append(append(make([]byte, 0, len(k)+1), k...), 0) }

package search

import (
	"encoding/binary"
	"fmt"
)

// encodeDoc is the stored form of a document: id, kind, project, author, seq,
// hash and the fields, strings prefixed by their length.
func encodeDoc(d Doc) []byte {
	b := appendString(nil, d.ID)
	b = append(b, byte(d.Kind))
	b = appendString(b, d.Project)
	b = appendString(b, d.Author)
	b = binary.AppendUvarint(b, d.Seq)
	b = append(b, d.Hash[:]...)
	b = binary.AppendUvarint(b, uint64(len(d.Fields)))
	for _, f := range d.Fields {
		b = appendString(b, f.Name)
		b = appendString(b, f.Text)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeDoc reverses encodeDoc; it copies, so the result outlives b.
func decodeDoc(b []byte) (Doc, error) {
	var d Doc
	r := reader{b: b}
	d.ID = r.string()
	d.Kind = Kind(r.byte())
	d.Project = r.string()
	d.Author = r.string()
	d.Seq = r.uvarint()
	copy(d.Hash[:], r.bytes(len(d.Hash)))
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = ErrCorrupt
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		d.Fields = append(d.Fields, Field{Name: r.string(), Text: r.string()})
	}
	if r.err != nil || len(r.b) != 0 {
		return Doc{}, fmt.Errorf("stored document: %w", ErrCorrupt)
	}
	return d, nil
}

// reader decodes a stored document, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	v, r.b, r.err = uvarint(r.b)
	return v
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n > len(r.b) {
		r.err = ErrCorrupt
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = ErrCorrupt
		return ""
	}
	return string(r.bytes(int(n)))
}

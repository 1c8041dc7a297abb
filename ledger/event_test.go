package ledger

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// sampleEvents are events as Append stores them, covering each field's
// msgpack widths: seq, time and version small and large, empty and long
// strings, nil and empty payloads, no subjects and several.
func sampleEvents() []Event {
	long := string(bytes.Repeat([]byte("x"), 300))
	return []Event{
		{Seq: 1, Time: time.UnixMilli(0).UTC(), Type: "t", Payload: []byte{0xc0}},
		{Seq: 2, Time: time.UnixMilli(1_700_000_000_123).UTC(), Type: "task.created", Version: 1, Actor: "A-0001",
			Subjects: []string{"T-0001", "Θ-0001"}, Payload: []byte{0x81, 0xa1, 'a', 0x01}, Prev: Hash{1, 2, 3}},
		{Seq: 127, Time: time.UnixMilli(-1).UTC(), Version: 65535, Subjects: []string{""}, Payload: []byte{}},
		{Seq: 128, Time: time.UnixMilli(1 << 40).UTC(), Type: long, Actor: long, Subjects: []string{long}, Payload: bytes.Repeat([]byte{7}, 70000)},
		{Seq: 1 << 16, Time: time.UnixMilli(-1 << 40).UTC(), Type: "x"},
		{Seq: 1<<64 - 1, Time: time.UnixMilli(1<<63 - 1).UTC(), Type: "x", Prev: Hash{31: 0xff}},
	}
}

func TestEventEncodeDecodeRoundTrip(t *testing.T) {
	for _, e := range sampleEvents() {
		raw, err := e.Encode()
		if err != nil {
			t.Fatalf("encode seq %d: %v", e.Seq, err)
		}
		got, err := DecodeEvent(raw)
		if err != nil {
			t.Fatalf("decode seq %d: %v", e.Seq, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("seq %d: decoded\n%+v, want\n%+v", e.Seq, got, e)
		}
		again, err := got.Encode()
		if err != nil || !bytes.Equal(again, raw) {
			t.Errorf("seq %d: re-encoding differs (%v)", e.Seq, err)
		}
		seq, prev, ok := peekEnvelope(raw)
		if !ok || seq != e.Seq || prev != e.Prev {
			t.Errorf("seq %d: peekEnvelope = %d, %s, %v", e.Seq, seq, prev, ok)
		}
	}
}

// nonCanonical are envelopes a lenient msgpack reader accepts but Encode
// never writes: an integer in a longer form than the shortest, a string
// stored as bin or str8, nil for a string, a value that does not fit its
// field. The envelope is defined as each element in its shortest encoding,
// so each must be ErrMalformed.
var nonCanonical = map[string][]byte{
	"seq as uint16": envelope(bs(0xcd, 0, 1)),
	"time as int64": envelope(nil, bs(0xd3, 0, 0, 0, 0, 0, 0, 0, 0)),
	"negative seq":  envelope(bs(0xff)),
	"type as bin":   envelope(nil, nil, bs(0xc4, 1, 'x')),
	"type as str8":  envelope(nil, nil, bs(0xd9, 1, 'x')),
	"version 65536": envelope(nil, nil, nil, bs(0xce, 0, 1, 0, 0)),
	"actor nil":     envelope(nil, nil, nil, nil, bs(0xc0)),
	"payload str":   envelope(nil, nil, nil, nil, nil, nil, bs(0xa1, 0xc0)),
	"prev as str8":  envelope(nil, nil, nil, nil, nil, nil, nil, append(bs(0xd9, 32), make([]byte, 32)...)),
	"prev as bin16": envelope(nil, nil, nil, nil, nil, nil, nil, append(bs(0xc5, 0, 32), make([]byte, 32)...)),
}

func bs(b ...byte) []byte { return b }

// envelope builds a stored event field by field; a nil field takes the
// canonical encoding of the event {Seq 1, Type "x", Payload 0xc0}.
func envelope(fields ...[]byte) []byte {
	canonical := [][]byte{
		bs(0x01),          // seq
		bs(0x00),          // time
		bs(0xa1, 'x'),     // type
		bs(0x00),          // payload version
		bs(0xa0),          // actor
		bs(0x90),          // subjects
		bs(0xc4, 1, 0xc0), // payload
		append(bs(0xc4, 32), make([]byte, 32)...), // prev
	}
	raw := bs(0x99, 0x01)
	for i, c := range canonical {
		if i < len(fields) && fields[i] != nil {
			c = fields[i]
		}
		raw = append(raw, c...)
	}
	return raw
}

// TestEnvelopeTypeCodes: envelope version 2 stores a type of TypeCodes as
// its code (one byte) and any other as a string; an event read from a
// version 1 envelope keeps its string and its bytes; a known type as a
// string in version 2, an unknown code, or a code in version 1 is
// malformed.
func TestEnvelopeTypeCodes(t *testing.T) {
	for code, name := range TypeCodes {
		if code == 0 || name == "" {
			if code != 0 {
				t.Errorf("code %d names no type", code)
			}
			continue
		}
		e := Event{Seq: 9, Time: time.UnixMilli(0).UTC(), Type: name, Payload: []byte{0x90}}
		raw, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		// 0x99, 0x02, seq 9, time 0, then the code.
		if raw[1] != 2 || raw[4] != byte(code) {
			t.Errorf("%s: stored % x, want envelope 2 and code %d", name, raw[:5], code)
		}
		if got, err := DecodeEvent(raw); err != nil || got.Type != name || got.Envelope != 0 {
			t.Errorf("%s: decoded %q, envelope %d, %v", name, got.Type, got.Envelope, err)
		}
		// The same event in a version 1 envelope: the type as a string.
		v1 := e
		v1.Envelope = 1
		old, err := v1.Encode()
		if err != nil {
			t.Fatal(err)
		}
		want := append(append(bs(0x99, 0x01, 0x09, 0x00, 0xa0|byte(len(name))), name...), raw[5:]...)
		if !bytes.Equal(old, want) {
			t.Errorf("%s v1: % x, want % x", name, old, want)
		}
		if got, err := DecodeEvent(old); err != nil || got.Type != name || got.Envelope != 1 {
			t.Errorf("%s v1: decoded %q, envelope %d, %v", name, got.Type, got.Envelope, err)
		}
		// A known type as a string in version 2 is not the canonical form.
		if _, err := DecodeEvent(append(bs(0x99, 0x02), old[2:]...)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s as a string in envelope 2: %v, want ErrMalformed", name, err)
		}
		// A code in version 1 is not a type.
		if _, err := DecodeEvent(append(bs(0x99, 0x01), raw[2:]...)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s as a code in envelope 1: %v, want ErrMalformed", name, err)
		}
	}
	for name, typ := range map[string][]byte{"code 0": bs(0), "code past the table": bs(byte(len(TypeCodes))),
		"code 127": bs(0x7f), "code as uint8": bs(0xcc, 3), "negative code": bs(0xff), "type nil": bs(0xc0)} {
		raw := envelope(nil, nil, typ)
		raw[1] = 2
		if _, err := DecodeEvent(raw); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	// The canonical v2 form of such an event, for contrast, decodes.
	raw := envelope(nil, nil, bs(3))
	raw[1] = 2
	if e, err := DecodeEvent(raw); err != nil || e.Type != "thought.recorded" {
		t.Errorf("code 3: %q, %v", e.Type, err)
	}
	if _, err := (&Event{Envelope: 3, Type: "x"}).Encode(); err == nil {
		t.Error("envelope 3 encoded")
	}
}

func TestDecodeEventRejectsNonCanonical(t *testing.T) {
	if _, err := DecodeEvent(envelope()); err != nil {
		t.Fatalf("canonical envelope: %v", err)
	}
	for name, raw := range nonCanonical {
		e, err := DecodeEvent(raw)
		if !errors.Is(err, ErrMalformed) {
			again, _ := e.Encode()
			t.Errorf("%s: decoded (%v), and re-encodes to % x, not % x", name, err, again, raw)
		}
	}
}

func TestDecodeEventRejectsMalformed(t *testing.T) {
	raw, err := sampleEvents()[1].Encode()
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string][]byte{
		"empty":            nil,
		"truncated":        raw[:len(raw)-1],
		"trailing byte":    append(append([]byte(nil), raw...), 0),
		"array of 8":       append(bs(0x98), raw[1:]...),
		"map":              append(bs(0x89), raw[1:]...),
		"envelope v3":      append(bs(0x99, 0x03), raw[2:]...),
		"envelope v0":      append(bs(0x99, 0x00), raw[2:]...),
		"prev of 31 bytes": envelope(nil, nil, nil, nil, nil, nil, nil, append(bs(0xc4, 31), make([]byte, 31)...)),
		"subjects nil":     envelope(nil, nil, nil, nil, nil, bs(0xc0)),
		"subjects huge":    envelope(nil, nil, nil, nil, nil, bs(0xdd, 0xff, 0xff, 0xff, 0xff)),
		"subject int":      envelope(nil, nil, nil, nil, nil, bs(0x91, 0x01)),
	}
	for name, raw := range tests {
		if _, err := DecodeEvent(raw); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// hugeLength are envelopes of a few dozen bytes whose bin or str header
// claims 256 MiB: a decoder that trusts the claim allocates it before
// finding the input short. One flipped bit in a stored payload's header
// (0xc4 bin8 → 0xc6 bin32) makes such an event.
var hugeLength = map[string][]byte{
	"payload bin32": envelope(nil, nil, nil, nil, nil, nil, bs(0xc6, 0x10, 0, 0, 0, 0xc0)),
	"payload str32": envelope(nil, nil, nil, nil, nil, nil, bs(0xdb, 0x10, 0, 0, 0, 0xc0)),
	"prev bin32":    envelope(nil, nil, nil, nil, nil, nil, nil, append(bs(0xc6, 0x10, 0, 0, 0), make([]byte, 32)...)),
	"type str32":    envelope(nil, nil, bs(0xdb, 0x10, 0, 0, 0, 'x')),
	"subject str32": envelope(nil, nil, nil, nil, nil, bs(0x91, 0xdb, 0x10, 0, 0, 0, 'x')),
}

// maxDecodeAlloc is what decoding raw may allocate: a small multiple of its
// size, plus the msgpack reader's first chunk for a long string (1 MiB,
// twice that under the race detector).
func maxDecodeAlloc(raw []byte) uint64 { return 4<<20 + 64*uint64(len(raw)) }

// heapAllocs is the bytes allocated on the heap so far. Large objects are
// counted as they are allocated; small ones when their span fills.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestDecodeEventAllocationIsBounded(t *testing.T) {
	for name, raw := range hugeLength {
		runtime.GC()
		before := heapAllocs()
		_, err := DecodeEvent(raw)
		allocated := heapAllocs() - before
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
		if allocated > maxDecodeAlloc(raw) {
			t.Errorf("%s: decoding %d bytes allocated %d bytes", name, len(raw), allocated)
		}
	}
}

// FuzzDecodeEvent: DecodeEvent never panics, and is exact. The decision
// (see Event): stored bytes are either the canonical encoding of an event —
// DecodeEvent succeeds and Encode gives back the same bytes — or they are
// reported, as an error wrapping ErrMalformed. There is no third kind of
// input that decodes to an event with other bytes, so an event has exactly
// one stored form, and the hash of the stored bytes is the hash of the event.
//
// It also checks that decoding allocates no more than a small multiple of
// the input (maxDecodeAlloc), whatever lengths the input claims, and that
// peekEnvelope, which Verify reads instead of decoding, finds the same seq
// and prev as DecodeEvent on every well-formed event.
func FuzzDecodeEvent(f *testing.F) {
	for _, e := range sampleEvents() {
		raw, err := e.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add(envelope())
	for _, raw := range nonCanonical {
		f.Add(raw)
	}
	for _, raw := range hugeLength {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		peekEnvelope(raw) // must not panic on anything
		before := heapAllocs()
		e, err := DecodeEvent(raw)
		if allocated := heapAllocs() - before; allocated > maxDecodeAlloc(raw) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(raw), allocated)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := e.Encode()
		if err != nil {
			t.Fatalf("decoded event does not encode: %v", err)
		}
		if !bytes.Equal(again, raw) {
			t.Fatalf("decoded, but is not canonical:\n  stored  % x\n  encoded % x", raw, again)
		}
		seq, prev, ok := peekEnvelope(raw)
		if !ok || seq != e.Seq || prev != e.Prev {
			t.Fatalf("peekEnvelope = (%d, %s, %v), DecodeEvent = (%d, %s)", seq, prev, ok, e.Seq, e.Prev)
		}
	})
}

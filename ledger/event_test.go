package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
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

// intForms are envelopes whose time takes each integer form, in its
// shortest encoding and in one a size too long, and whose strings and
// bins take each header at and around their limits.
var intForms = func() [][]byte {
	long := func(code byte, n int, fill byte) []byte {
		b := []byte{code}
		switch code {
		case 0xd9, 0xc4:
			b = append(b, byte(n))
		case 0xda, 0xc5:
			b = append(b, byte(n>>8), byte(n))
		case 0xdb, 0xc6:
			b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		}
		return append(b, bytes.Repeat([]byte{fill}, n)...)
	}
	var out [][]byte
	for _, time := range [][]byte{
		bs(0x7f), bs(0xcc, 0x80), bs(0xcc, 0x7f), bs(0xcd, 0x01, 0x00), bs(0xcd, 0x00, 0xff),
		bs(0xce, 0, 1, 0, 0), bs(0xce, 0, 0, 0xff, 0xff), bs(0xcf, 0, 0, 0, 1, 0, 0, 0, 0), bs(0xcf, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff),
		bs(0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0), bs(0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		bs(0xe0), bs(0xff), bs(0xd0, 0xdf), bs(0xd0, 0xe0), bs(0xd0, 0x01), bs(0xd1, 0xff, 0x7f), bs(0xd1, 0xff, 0x80),
		bs(0xd2, 0xff, 0xff, 0x7f, 0xff), bs(0xd2, 0xff, 0xff, 0x80, 0x00), bs(0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff),
		bs(0xd3, 0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0), bs(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0), bs(0xca, 0, 0, 0, 0), bs(0xc0),
	} {
		out = append(out, envelope(nil, time))
	}
	for _, n := range []int{31, 32, 255, 256, 65535, 65536} {
		out = append(out, envelope(nil, nil, long(0xd9, min(n, 255), 'a')), envelope(nil, nil, long(0xda, min(n, 65535), 'a')),
			envelope(nil, nil, nil, nil, long(0xdb, n, 'b')), envelope(nil, nil, nil, nil, nil, nil, long(0xc4, min(n, 255), 1)),
			envelope(nil, nil, nil, nil, nil, nil, long(0xc5, min(n, 65535), 1)), envelope(nil, nil, nil, nil, nil, nil, long(0xc6, n, 1)))
	}
	subjects := func(header []byte, n int) []byte { return append(header, bytes.Repeat(bs(0xa1, 'T'), n)...) }
	out = append(out, envelope(nil, nil, nil, nil, nil, subjects(bs(0x9f), 15)), envelope(nil, nil, nil, nil, nil, subjects(bs(0xdc, 0, 15), 15)),
		envelope(nil, nil, nil, nil, nil, subjects(bs(0xdc, 0, 16), 16)), envelope(nil, nil, nil, nil, nil, subjects(bs(0xdd, 0, 0, 0, 16), 16)),
		envelope(nil, nil, nil, nil, nil, nil, bs(0xc4, 0)), envelope(nil, nil, nil, nil, nil, nil, bs(0xc0)),
		envelope(nil, nil, nil, bs(0xcd, 0xff, 0xff)), envelope(nil, nil, nil, bs(0xce, 0, 1, 0, 0)))
	return out
}()

// TestDecodeEventAgreesWithReference: every form in intForms is decided
// by DecodeEvent as by the generic reader with its re-encoding, and
// decodes to the same event.
func TestDecodeEventAgreesWithReference(t *testing.T) {
	accepted := 0
	for _, raw := range intForms {
		e, err := DecodeEvent(raw)
		ref, refErr := decodeEventReference(raw)
		if (err == nil) != (refErr == nil) || !reflect.DeepEqual(e, ref) {
			t.Errorf("DecodeEvent = %v, %v; the generic reader = %v, %v; input % x", e, err, ref, refErr, raw[:min(len(raw), 40)])
		}
		if err == nil {
			accepted++
		}
	}
	if accepted == 0 || accepted == len(intForms) {
		t.Fatalf("%d of %d forms accepted: the table tests nothing", accepted, len(intForms))
	}
}

// FuzzDecodeEvent: DecodeEvent never panics, and is exact. The decision
// (see Event): stored bytes are either the canonical encoding of an event —
// DecodeEvent succeeds and Encode gives back the same bytes — or they are
// reported, as an error wrapping ErrMalformed. There is no third kind of
// input that decodes to an event with other bytes, so an event has exactly
// one stored form, and the hash of the stored bytes is the hash of the event.
//
// DecodeEvent reads the bytes itself; decodeEventReference, through the
// generic msgpack reader and a re-encoding, must decide every input the
// same way and decode the same event.
//
// It also checks that decoding allocates no more than a small multiple of
// the input (maxDecodeAlloc), whatever lengths the input claims, and that
// peekEnvelope, which Verify reads instead of decoding, finds the same seq
// and prev as DecodeEvent on every well-formed event.
// An EventDecoder decodes as DecodeEvent does, event after event, and
// what one event's payload or subject list becomes never reaches another's:
// not when the caller appends to it, nor when it writes over it.
func TestEventDecoderBlocks(t *testing.T) {
	var raws [][]byte
	for i := range 3000 {
		for _, e := range sampleEvents() {
			e.Subjects = append(e.Subjects, fmt.Sprintf("T-%04d", i))
			e.Payload = append(e.Payload[:len(e.Payload):len(e.Payload)], bytes.Repeat([]byte{byte(i)}, i%700)...)
			raw, err := e.Encode()
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, raw)
		}
	}
	var dec EventDecoder
	got := make([]Event, len(raws))
	for i, raw := range raws {
		want, err := DecodeEvent(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got[i], err = dec.Decode(raw); err != nil || !reflect.DeepEqual(got[i], want) {
			t.Fatalf("event %d: EventDecoder.Decode = %+v, %v; DecodeEvent = %+v", i, got[i], err, want)
		}
	}
	for i := range got {
		got[i].Payload = append(got[i].Payload, 0xff, 0xff)
		got[i].Subjects = append(got[i].Subjects, "appended")
		if i%2 == 0 {
			clear(got[i].Payload)
			clear(got[i].Subjects)
		}
	}
	for i := 1; i < len(got); i += 2 {
		want, _ := DecodeEvent(raws[i])
		want.Payload = append(want.Payload, 0xff, 0xff)
		want.Subjects = append(want.Subjects, "appended")
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("event %d changed by what was done to the others: %+v, want %+v", i, got[i], want)
		}
	}
}

// EventDecoder.Into: the payloads go into the block given, one after the
// other while they fit, then into blocks of the decoder's own, and the
// events are those DecodeEvent reads.
func TestEventDecoderInto(t *testing.T) {
	block := make([]byte, 0, 4096)
	var dec EventDecoder
	dec.Into(block)
	inBlock, used, full := 0, 0, false
	for i := range 200 {
		e := sampleEvents()[i%len(sampleEvents())]
		e.Payload = append(e.Payload[:len(e.Payload):len(e.Payload)], bytes.Repeat([]byte{byte(i)}, i%50)...)
		raw, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeEvent(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dec.Decode(raw)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("event %d: Decode = %+v, %v; DecodeEvent = %+v", i, got, err, want)
		}
		n := len(got.Payload)
		if n > decodeBytesBlock/8 { // allocated alone
			continue
		}
		full = full || used+n > cap(block)
		if n > 0 && !full {
			if &got.Payload[0] != &block[:cap(block)][used] || cap(got.Payload) != n {
				t.Fatalf("event %d: payload not in the block at %d, or with room past its end", i, used)
			}
			used += n
			inBlock++
		}
	}
	if inBlock < 10 || used < cap(block)/2 {
		t.Fatalf("%d payloads (%d bytes) in the block", inBlock, used)
	}
}

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
	for _, raw := range intForms {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		peekEnvelope(raw) // must not panic on anything
		before := heapAllocs()
		e, err := DecodeEvent(raw)
		if allocated := heapAllocs() - before; allocated > maxDecodeAlloc(raw) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(raw), allocated)
		}
		ref, refErr := decodeEventReference(raw)
		if (err == nil) != (refErr == nil) || !reflect.DeepEqual(e, ref) {
			t.Fatalf("DecodeEvent = %+v, %v\nthe generic reader = %+v, %v\ninput % x", e, err, ref, refErr, raw)
		}
		var dec EventDecoder
		if de, derr := dec.Decode(raw); (derr == nil) != (err == nil) || !reflect.DeepEqual(de, e) {
			t.Fatalf("EventDecoder.Decode = %+v, %v; DecodeEvent = %+v, %v", de, derr, e, err)
		}
		if typ, ok := TypeOf(raw); err == nil && (!ok || typ != e.Type) {
			t.Fatalf("TypeOf = %q, %v; DecodeEvent's type %q", typ, ok, e.Type)
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

// decodeEventReference is DecodeEvent as it was written first, through the
// generic msgpack reader, each element read leniently and the whole then
// re-encoded and compared with raw: FuzzDecodeEvent checks that DecodeEvent
// decides every input as it does.
func decodeEventReference(raw []byte) (Event, error) {
	var e Event
	r := bytes.NewReader(raw)
	d := msgpack.NewDecoder(r)
	fail := func(what string, err error) (Event, error) {
		if err != nil {
			return Event{}, fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
		}
		return Event{}, fmt.Errorf("%w: %s", ErrMalformed, what)
	}
	n, err := d.DecodeArrayLen()
	if err != nil || n != envelopeFields {
		return fail(fmt.Sprintf("want array of %d, got %d", envelopeFields, n), err)
	}
	v, err := d.DecodeUint64()
	if err != nil || v < 1 || v > EnvelopeVersion {
		return fail(fmt.Sprintf("envelope version %d", v), err)
	}
	if v != EnvelopeVersion {
		e.Envelope = uint8(v)
	}
	if e.Seq, err = d.DecodeUint64(); err != nil {
		return fail("seq", err)
	}
	ms, err := d.DecodeInt64()
	if err != nil {
		return fail("time", err)
	}
	e.Time = time.UnixMilli(ms).UTC()
	c, err := d.PeekCode()
	if err != nil {
		return fail("type", err)
	}
	if v >= 2 && !msgpcode.IsString(c) {
		code, err := d.DecodeUint64()
		if err != nil || code >= uint64(len(TypeCodes)) || TypeCodes[code] == "" {
			return fail(fmt.Sprintf("type code %d", code), err)
		}
		e.Type = TypeCodes[code]
	} else if e.Type, err = d.DecodeString(); err != nil {
		return fail("type", err)
	}
	if e.Version, err = d.DecodeUint16(); err != nil {
		return fail("payload version", err)
	}
	if e.Actor, err = d.DecodeString(); err != nil {
		return fail("actor", err)
	}
	ns, err := d.DecodeArrayLen()
	if err != nil || ns < 0 || ns > len(raw) {
		return fail("subjects", err)
	}
	if ns > 0 {
		e.Subjects = make([]string, ns)
	}
	for i := range e.Subjects {
		if e.Subjects[i], err = d.DecodeString(); err != nil {
			return fail("subject", err)
		}
	}
	// A bin's length is checked against what is left of raw before
	// anything is allocated for it: the msgpack reader would allocate the
	// claimed length (up to 4 GiB) first.
	bin := func() ([]byte, error) {
		n, err := d.DecodeBytesLen()
		if err != nil || n < 0 {
			return nil, err
		}
		if n > r.Len() {
			return nil, io.ErrUnexpectedEOF
		}
		b := make([]byte, n)
		return b, d.ReadFull(b)
	}
	if e.Payload, err = bin(); err != nil {
		return fail("payload", err)
	}
	prev, err := bin()
	if err != nil || len(prev) != len(e.Prev) {
		return fail("prev hash", err)
	}
	copy(e.Prev[:], prev)
	if r.Len() != 0 {
		return fail("trailing bytes", nil)
	}
	// Each element has one encoding, its shortest: anything else (a longer
	// integer form, str8 or bin for a short string, a version beyond
	// uint16) decodes leniently above, and is refused here.
	if !e.encodesTo(raw) {
		return fail("not the canonical encoding", nil)
	}
	return e, nil
}

// encodesTo reports whether raw is e's encoding.
func (e *Event) encodesTo(raw []byte) bool {
	var buf bytes.Buffer
	return e.encodeTo(&buf) == nil && bytes.Equal(buf.Bytes(), raw)
}

// TestDecodeEventInternsNames: events of one type and actor share their
// strings; past maxNames distinct names, they decode exactly all the same,
// from goroutines at once (run with -race).
func TestDecodeEventInternsNames(t *testing.T) {
	encode := func(e Event) []byte {
		t.Helper()
		raw, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	a, err := DecodeEvent(encode(Event{Seq: 1, Type: "interned.type", Actor: "interned-actor"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeEvent(encode(Event{Seq: 2, Type: "interned.type", Actor: "interned-actor"}))
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(a.Type) != unsafe.StringData(b.Type) || unsafe.StringData(a.Actor) != unsafe.StringData(b.Actor) {
		t.Error("two events of one type and actor hold copies of them")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range maxNames + 50 {
				want := Event{Seq: uint64(i + 1), Type: fmt.Sprintf("type.%d", i%7), Actor: fmt.Sprintf("agent-%d-%d", g, i), Prev: Hash{1}}
				raw, err := want.Encode()
				if err != nil {
					t.Error(err)
					return
				}
				got, err := DecodeEvent(raw)
				if err != nil || got.Type != want.Type || got.Actor != want.Actor {
					t.Errorf("%+v decoded as %+v, %v", want, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestNewerEnvelopeSaysSo: an event of an envelope version this binary does
// not know is malformed to it, and the error says it may be a newer
// logbook's rather than damage.
func TestNewerEnvelopeSaysSo(t *testing.T) {
	e := Event{Seq: 1, Time: time.UnixMilli(1), Type: "task.created", Version: 1, Actor: "a", Payload: []byte{0xc0}}
	raw, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if raw[0] != 0x99 || raw[1] != EnvelopeVersion {
		t.Fatalf("unexpected encoding % x", raw[:2])
	}
	raw[1] = EnvelopeVersion + 1
	_, err = DecodeEvent(raw)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "newer") {
		t.Errorf("envelope %d: %v", EnvelopeVersion+1, err)
	}
}

// TestDecodeEventSubjectsOneAllocation: an event's subjects cost one
// allocation for their list and one for their bytes, however many there
// are (an allocation a subject was a good part of a rebuild's objects),
// and decode to what was encoded.
func TestDecodeEventSubjectsOneAllocation(t *testing.T) {
	allocs := func(subjects []string) float64 {
		e := Event{Seq: 3, Time: time.UnixMilli(1_700_000_000_123).UTC(), Type: "task.updated", Actor: "claude", Subjects: subjects}
		raw, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := DecodeEvent(raw); err != nil || !reflect.DeepEqual(got.Subjects, subjects) {
			t.Fatalf("subjects %q decoded as %q, %v", subjects, got.Subjects, err)
		}
		return testing.AllocsPerRun(10, func() { DecodeEvent(raw) })
	}
	none := allocs(nil)
	for _, subjects := range [][]string{{"T-0001"}, {"Θ-0001", "T-0001", "", "S-0001", strings.Repeat("x", 300)}} {
		if n := allocs(subjects); n != none+2 {
			t.Errorf("%d subjects: %v allocations, %v without", len(subjects), n, none)
		}
	}
}

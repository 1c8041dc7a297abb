package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// EnvelopeVersion is the layout version of the stored event envelope this
// binary writes. It is the first element of every stored event. Version 1
// stores the type as a string; version 2 (written now) stores a type of
// TypeCodes as its code, a positive fixint (one byte where
// "thought.recorded" took 17), and any other type as a string. Both read.
const EnvelopeVersion = 2

// TypeCodes are the codes of the event types envelope version 2 stores as
// a number: TypeCodes[code] is the type's name. Append-only: a code, once
// written to a ledger, names its type forever; 0 is not a code.
var TypeCodes = [...]string{
	1:  "task.created",
	2:  "task.updated",
	3:  "thought.recorded",
	4:  "tool.called",
	5:  "session.started",
	6:  "session.finalized",
	7:  "skills.loaded",
	8:  "token.issued",
	9:  "token.revoked",
	10: "finding.recorded",
	11: "learning.recorded",
	12: "learning.superseded",
	13: "memory.written",
}

// typeCode is the code of each type in TypeCodes.
var typeCode = func() map[string]uint64 {
	m := make(map[string]uint64, len(TypeCodes))
	for c, name := range TypeCodes {
		if name != "" {
			m[name] = uint64(c)
		}
	}
	return m
}()

// envelopeFields is the number of elements of the stored msgpack array.
const envelopeFields = 9

// Event is one fact in the log. Seq, Time and Prev are assigned by Append.
//
// The stored form is a msgpack array of exactly nine elements, each in its
// shortest msgpack encoding (see ARCHITECTURE.md "Event format"):
//
//	[envelope_version, seq, time_unix_ms, type, payload_version, actor, subjects, payload, prev]
//
// type is a code of TypeCodes or a string (envelope version 2), or a
// string (version 1). payload is a msgpack bin holding the payload's own
// msgpack bytes, so the envelope decodes without knowing any payload type.
// An event read from an older envelope re-encodes in it (Envelope), so
// the canonical check compares like with like. The event's hash is
// LeafHash of the stored bytes, never of a re-encoding.
type Event struct {
	Envelope uint8     // the envelope version it was stored in if older than EnvelopeVersion; 0: the current one (as Append writes)
	Seq      uint64    // position in the log, from 1
	Time     time.Time // UTC, millisecond precision
	Type     string    // past-tense fact, e.g. "task.created"
	Version  uint16    // payload schema version of Type
	Actor    string    // the agent identity that caused it
	Subjects []string  // ids the event concerns (T-0001, Θ-0001, A-0001 …)
	Payload  []byte    // msgpack; see EncodePayload
	Prev     Hash      // hash of event Seq-1; zero for Seq 1
}

// Record is an event as read back from the log: the decoded envelope, the
// exact stored bytes and their hash.
type Record struct {
	Event
	Raw  []byte
	Hash Hash
}

// ErrMalformed is returned (wrapped) for stored bytes that are not a
// well-formed event envelope.
var ErrMalformed = errors.New("malformed event")

// Encode returns the stored bytes of e. It is deterministic: equal events
// encode to equal bytes.
func (e *Event) Encode() ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, 64+len(e.Payload)+len(e.Type)+len(e.Actor)))
	if err := e.encodeTo(buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeTo appends the stored bytes of e to buf.
func (e *Event) encodeTo(buf *bytes.Buffer) error {
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	// The shortest integer form is what makes the encoding canonical.
	enc.UseCompactInts(true)
	version := uint64(e.Envelope)
	if version == 0 {
		version = EnvelopeVersion
	}
	if version > EnvelopeVersion {
		return fmt.Errorf("encode event: envelope version %d", version)
	}
	typ := enc.EncodeString
	if code, ok := typeCode[e.Type]; ok && version >= 2 {
		typ = func(string) error { return enc.EncodeUint(code) }
	}
	err := errors.Join(
		enc.EncodeArrayLen(envelopeFields),
		enc.EncodeUint(version),
		enc.EncodeUint(e.Seq),
		enc.EncodeInt(e.Time.UnixMilli()),
		typ(e.Type),
		enc.EncodeUint(uint64(e.Version)),
		enc.EncodeString(e.Actor),
		enc.EncodeArrayLen(len(e.Subjects)),
	)
	for _, s := range e.Subjects {
		err = errors.Join(err, enc.EncodeString(s))
	}
	err = errors.Join(err, enc.EncodeBytes(e.Payload), enc.EncodeBytes(e.Prev[:]))
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	return nil
}

// DecodeEvent parses stored bytes. It never panics; any deviation from the
// envelope layout (wrong arity, types, trailing bytes) is ErrMalformed.
func DecodeEvent(raw []byte) (Event, error) {
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
	if !e.encodes(raw) {
		return fail("not the canonical encoding", nil)
	}
	return e, nil
}

// encodes reports whether raw is e's encoding (into a pooled buffer: every
// event read is re-encoded).
func (e *Event) encodes(raw []byte) bool {
	buf := payloadBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 { // a rare large event's buffer is not kept
			buf.Reset()
			payloadBufs.Put(buf)
		}
	}()
	return e.encodeTo(buf) == nil && bytes.Equal(buf.Bytes(), raw)
}

// EncodePayload encodes a payload value deterministically: struct fields in
// declaration order, map keys sorted; a Positional payload as its array.
func EncodePayload(v any) ([]byte, error) {
	buf := payloadBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 { // a rare large payload's buffer is not kept
			buf.Reset()
			payloadBufs.Put(buf)
		}
	}()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	enc.SetCustomStructTag("json")
	if err := EncodeWith(enc, v); err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	return bytes.Clone(buf.Bytes()), nil
}

// payloadBufs are EncodePayload's scratch buffers (a payload is encoded into
// one and copied out once, at its final size) and DecodeEvent's.
var payloadBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// DecodePayload decodes a payload into v (a pointer). Unknown fields are
// ignored so older readers can skip what newer writers add; a Positional
// v reads its array form and its older map form alike.
func DecodePayload(b []byte, v any) error {
	d := msgpack.NewDecoder(bytes.NewReader(b))
	d.SetCustomStructTag("json")
	if err := DecodeWith(d, b, v); err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	return nil
}

// DecodeRecord decodes an event's stored bytes into a record, hash
// included; raw is kept, not copied. Errors wrap ErrMalformed.
func DecodeRecord(raw []byte) (Record, error) {
	e, err := DecodeEvent(raw)
	if err != nil {
		return Record{}, fmt.Errorf("decode record: %w", err)
	}
	return Record{Event: e, Raw: raw, Hash: LeafHash(raw)}, nil
}

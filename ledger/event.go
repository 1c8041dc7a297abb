package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
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
// a number: TypeCodes[code] is the type's name; 0 is not a code. The table
// is frozen with envelope version 2: in it a type of the table has one
// canonical form, its code, and any other type another, its name, so a
// code added later would make the events stored with that name until then
// non-canonical. A new type is written by name; new codes come only with a
// new envelope version (and a table of their own).
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
	// Room for the whole event, so the buffer never grows: at most 9 bytes
	// an integer (the type's code too), 5 a header (array, string, bin),
	// 34 the prev hash.
	size := 1 + 9*5 + 5 + 34 + 5 + len(e.Type) + 5 + len(e.Actor) + 5 + len(e.Payload)
	for _, s := range e.Subjects {
		size += 5 + len(s)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
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
	prev := e.Prev // a slice of e.Prev given to the encoder would move e to the heap
	err = errors.Join(err, enc.EncodeBytes(e.Payload), enc.EncodeBytes(prev[:]))
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	return nil
}

// DecodeEvent parses stored bytes. It never panics; any deviation from the
// envelope layout (wrong arity, types, trailing bytes) is ErrMalformed, and
// so is an element in any form but its one canonical form, the shortest
// msgpack encoding, which Encode writes. It reads the bytes itself: every
// read of the log decodes every event, and a generic msgpack reader plus a
// re-encoding to check the form were most of that cost. FuzzDecodeEvent
// checks it against both.
func DecodeEvent(raw []byte) (Event, error) { return decodeEvent(raw, nil) }

// An EventDecoder decodes events as DecodeEvent does, for a pass over many
// (a verify, a rebuild): it copies their payloads and lays out their
// subject lists in blocks it allocates many events at a time, rather than
// allocating both for each event, which was a third of the objects a
// verify of 1M events allocated. A block is never reused: an event it
// returned stays valid for as long as it is kept (and keeps its block from
// the collector). Its zero value is ready; it is not safe for concurrent
// use.
type EventDecoder struct {
	bytes    []byte   // the current block of payloads: free past len
	subjects []string // the current block of subject lists: free past len
}

// Decode decodes stored bytes as DecodeEvent does.
func (dec *EventDecoder) Decode(raw []byte) (Event, error) { return decodeEvent(raw, dec) }

// Into has dec copy the payloads of the events it decodes next into
// block's array, from its start, while they fit (then into blocks of its
// own): for a pass that reuses one block for batch after batch of events,
// once it no longer keeps those decoded into it.
func (dec *EventDecoder) Into(block []byte) { dec.bytes = block[:0] }

// The blocks' sizes: a payload or list too big for a fraction of one gets
// its own allocation, so a block is never mostly waste.
const (
	decodeBytesBlock    = 32 << 10
	decodeSubjectsBlock = 512
)

// payload returns a copy of b: in dec's block, or allocated alone (dec nil).
// Its capacity is its length: appending to it never writes into the next.
func (dec *EventDecoder) payload(b []byte) []byte {
	if dec == nil || len(b) == 0 || len(b) > decodeBytesBlock/8 {
		return append(make([]byte, 0, len(b)), b...)
	}
	if len(b) > cap(dec.bytes)-len(dec.bytes) {
		dec.bytes = make([]byte, 0, decodeBytesBlock)
	}
	n := len(dec.bytes)
	dec.bytes = append(dec.bytes, b...)
	return dec.bytes[n:len(dec.bytes):len(dec.bytes)]
}

// subjectList returns a list of n subjects to fill: in dec's block, or
// allocated alone (dec nil).
func (dec *EventDecoder) subjectList(n int) []string {
	if dec == nil || n > decodeSubjectsBlock/8 {
		return make([]string, n)
	}
	if n > cap(dec.subjects)-len(dec.subjects) {
		dec.subjects = make([]string, 0, decodeSubjectsBlock)
	}
	m := len(dec.subjects)
	dec.subjects = dec.subjects[:m+n]
	return dec.subjects[m : m+n : m+n]
}

func decodeEvent(raw []byte, dec *EventDecoder) (Event, error) {
	var e Event
	d := envelopeReader{b: raw}
	fail := func(what string) (Event, error) {
		if d.err != "" {
			return Event{}, fmt.Errorf("%w: %s: %s", ErrMalformed, what, d.err)
		}
		return Event{}, fmt.Errorf("%w: %s", ErrMalformed, what)
	}
	if what := d.head(&e); what != "" {
		return fail(what)
	}
	pv, ok := d.uint()
	if !ok || pv > 0xffff {
		return fail("payload version")
	}
	e.Version = uint16(pv)
	if e.Actor, ok = d.name(); !ok {
		return fail("actor")
	}
	ns, ok := d.arrayLen()
	if !ok || ns > uint64(len(raw)) { // a subject takes a byte at least
		return fail("subjects")
	}
	if ns > 0 {
		// The subjects are slices of one string, a copy of the bytes that
		// hold them (their headers between them): one allocation an event
		// rather than one a subject, a good part of the objects a rebuild
		// allocated.
		start := d.off
		for range ns {
			if _, ok := d.strBytes(); !ok {
				return fail("subject")
			}
		}
		all := string(raw[start:d.off])
		d.off = start
		e.Subjects = dec.subjectList(int(ns))
		for i := range e.Subjects {
			b, _ := d.strBytes() // (read above)
			end := d.off - start
			e.Subjects[i] = all[end-len(b) : end]
		}
	}
	// The bins are slices of raw, whose length bounds them: nothing is
	// allocated for what a header claims.
	payload, ok := d.bin()
	if !ok {
		return fail("payload")
	}
	if payload != nil {
		e.Payload = dec.payload(payload)
	}
	prev, ok := d.bin()
	if !ok || len(prev) != len(e.Prev) {
		return fail("prev hash")
	}
	copy(e.Prev[:], prev)
	if d.off != len(raw) {
		return fail("trailing bytes")
	}
	return e, nil
}

// TypeOf reads an event's type from its stored bytes without decoding the
// rest (a pass that decodes events elsewhere, say, but must tell some
// apart as it reads them); ok is false where DecodeEvent fails before the
// type.
func TypeOf(raw []byte) (typ string, ok bool) {
	var e Event
	d := envelopeReader{b: raw}
	if d.head(&e) != "" {
		return "", false
	}
	return e.Type, true
}

// head reads the envelope up to the type into e: "" if it reads, else what
// does not (DecodeEvent's and TypeOf's one reading of it).
func (d *envelopeReader) head(e *Event) string {
	if n, ok := d.arrayLen(); !ok || n != envelopeFields {
		return fmt.Sprintf("want array of %d, got %d", envelopeFields, n)
	}
	v, ok := d.uint()
	if !ok || v < 1 {
		return fmt.Sprintf("envelope version %d", v)
	}
	if v > EnvelopeVersion {
		return fmt.Sprintf("envelope version %d, newer than this binary reads (1 to %d): written by a newer logbook?", v, EnvelopeVersion)
	}
	if v != EnvelopeVersion {
		e.Envelope = uint8(v)
	}
	if e.Seq, ok = d.uint(); !ok {
		return "seq"
	}
	ms, ok := d.int()
	if !ok {
		return "time"
	}
	e.Time = time.UnixMilli(ms).UTC()
	if e.Time.UnixMilli() != ms { // beyond what a time.Time holds
		return "time out of range"
	}
	if v >= 2 && d.off < len(d.b) && !msgpcode.IsString(d.b[d.off]) {
		code, ok := d.uint()
		if !ok || code >= uint64(len(TypeCodes)) || TypeCodes[code] == "" {
			return fmt.Sprintf("type code %d, not one of envelope %d's", code, v)
		}
		e.Type = TypeCodes[code]
	} else {
		if e.Type, ok = d.name(); !ok {
			return "type"
		}
		if _, coded := typeCode[e.Type]; coded && v >= 2 {
			// Its one canonical form in this envelope is its code.
			return "type " + e.Type + " written as a string, not its code"
		}
	}
	return ""
}

// envelopeReader reads the elements of a stored event, each in its
// canonical form only: the shortest msgpack encoding (an integer in the
// fewest bytes, a string or bin with the shortest header), as the
// envelope's encoder writes it. A read that fails may say why in err.
type envelopeReader struct {
	b   []byte
	off int
	err string
}

// take returns the next n bytes.
func (d *envelopeReader) take(n uint64) ([]byte, bool) {
	if uint64(len(d.b)-d.off) < n {
		d.err = io.ErrUnexpectedEOF.Error()
		return nil, false
	}
	b := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b, true
}

func (d *envelopeReader) code() (byte, bool) {
	b, ok := d.take(1)
	if !ok {
		return 0, false
	}
	return b[0], true
}

// be reads a big-endian number of width bytes that must be at least min,
// the smallest value that needs that width.
func (d *envelopeReader) be(width uint64, min uint64) (uint64, bool) {
	b, ok := d.take(width)
	if !ok {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	if v < min {
		d.err = "not the canonical encoding"
		return 0, false
	}
	return v, true
}

// uint reads an unsigned integer: a positive fixint, or uint 8 to 64.
func (d *envelopeReader) uint() (uint64, bool) {
	c, ok := d.code()
	if !ok {
		return 0, false
	}
	return d.uintAfter(c)
}

func (d *envelopeReader) uintAfter(c byte) (uint64, bool) {
	switch {
	case c <= 0x7f:
		return uint64(c), true
	case c == 0xcc:
		return d.be(1, 1<<7)
	case c == 0xcd:
		return d.be(2, 1<<8)
	case c == 0xce:
		return d.be(4, 1<<16)
	case c == 0xcf:
		return d.be(8, 1<<32)
	}
	d.err = fmt.Sprintf("0x%02x is not an unsigned integer", c)
	return 0, false
}

// int reads a signed integer: one >= 0 as uint writes it, a negative one
// as a negative fixint or int 8 to 64.
func (d *envelopeReader) int() (int64, bool) {
	c, ok := d.code()
	if !ok {
		return 0, false
	}
	var v, min int64 // min: the largest value that needs the width, plus one
	switch {
	case c <= 0x7f || (c >= 0xcc && c <= 0xcf):
		u, ok := d.uintAfter(c)
		if !ok || u > math.MaxInt64 {
			return 0, false
		}
		return int64(u), true
	case c >= 0xe0:
		return int64(int8(c)), true
	case c == 0xd0:
		u, ok := d.be(1, 0)
		v, min = int64(int8(u)), -32
		if !ok {
			return 0, false
		}
	case c == 0xd1:
		u, ok := d.be(2, 0)
		v, min = int64(int16(u)), math.MinInt8
		if !ok {
			return 0, false
		}
	case c == 0xd2:
		u, ok := d.be(4, 0)
		v, min = int64(int32(u)), math.MinInt16
		if !ok {
			return 0, false
		}
	case c == 0xd3:
		u, ok := d.be(8, 0)
		v, min = int64(u), math.MinInt32
		if !ok {
			return 0, false
		}
	default:
		d.err = fmt.Sprintf("0x%02x is not an integer", c)
		return 0, false
	}
	if v >= min {
		d.err = "not the canonical encoding"
		return 0, false
	}
	return v, true
}

// name reads a string as strBytes does, interned (names).
func (d *envelopeReader) name() (string, bool) {
	b, ok := d.strBytes()
	if !ok {
		return "", false
	}
	return names.intern(b), true
}

// strBytes reads a string as a slice of the input: fixstr, or str 8 to 32.
func (d *envelopeReader) strBytes() ([]byte, bool) {
	c, ok := d.code()
	if !ok {
		return nil, false
	}
	var n uint64
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == 0xd9:
		n, ok = d.be(1, 32)
	case c == 0xda:
		n, ok = d.be(2, 1<<8)
	case c == 0xdb:
		n, ok = d.be(4, 1<<16)
	default:
		d.err = fmt.Sprintf("0x%02x is not a string", c)
		return nil, false
	}
	if !ok {
		return nil, false
	}
	return d.take(n)
}

// names interns the event types and actors DecodeEvent reads: a log holds
// a handful of each, over and over, and a new string for each in every
// event was a good part of what reading the log allocated. It keeps at
// most maxNames, each at most maxNameLen bytes; others are allocated as
// before.
var names internTable

const (
	maxNames   = 256
	maxNameLen = 64
)

// internTable is a copy-on-write map: readers never lock.
type internTable struct {
	m  atomic.Pointer[map[string]string]
	mu sync.Mutex
}

func (t *internTable) intern(b []byte) string {
	if m := t.m.Load(); m != nil {
		if s, ok := (*m)[string(b)]; ok {
			return s
		}
	}
	s := string(b)
	if len(b) > maxNameLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	if old == nil {
		old = &map[string]string{}
	}
	if len(*old) >= maxNames {
		return s
	}
	if kept, ok := (*old)[s]; ok {
		return kept
	}
	m := make(map[string]string, len(*old)+1)
	for k, v := range *old {
		m[k] = v
	}
	m[s] = s
	t.m.Store(&m)
	return s
}

// arrayLen reads an array's header: fixarray, or array 16 or 32.
func (d *envelopeReader) arrayLen() (uint64, bool) {
	c, ok := d.code()
	switch {
	case !ok:
		return 0, false
	case c >= 0x90 && c <= 0x9f:
		return uint64(c & 0x0f), true
	case c == 0xdc:
		return d.be(2, 16)
	case c == 0xdd:
		return d.be(4, 1<<16)
	}
	d.err = fmt.Sprintf("0x%02x is not an array", c)
	return 0, false
}

// bin reads a bin 8 to 32 as a slice of the input (never nil), or nil for
// a msgpack nil (how the encoder writes a nil slice).
func (d *envelopeReader) bin() ([]byte, bool) {
	c, ok := d.code()
	if !ok {
		return nil, false
	}
	var n uint64
	switch c {
	case 0xc0:
		return nil, true
	case 0xc4:
		n, ok = d.be(1, 0)
	case 0xc5:
		n, ok = d.be(2, 1<<8)
	case 0xc6:
		n, ok = d.be(4, 1<<16)
	default:
		d.err = fmt.Sprintf("0x%02x is not a bin", c)
		return nil, false
	}
	if !ok {
		return nil, false
	}
	return d.take(n)
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
// one and copied out once, at its final size).
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
func DecodeRecord(raw []byte) (Record, error) { return (*EventDecoder)(nil).DecodeRecord(raw) }

// DecodeRecord decodes as the function DecodeRecord does, the event as
// Decode does (dec nil: as DecodeEvent does).
func (dec *EventDecoder) DecodeRecord(raw []byte) (Record, error) {
	e, err := decodeEvent(raw, dec)
	if err != nil {
		return Record{}, fmt.Errorf("decode record: %w", err)
	}
	return Record{Event: e, Raw: raw, Hash: LeafHash(raw)}, nil
}

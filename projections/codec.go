package projections

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/vmihailenco/msgpack/v5"
)

// The fold decodes a payload and decodes and re-encodes a record or two for
// every event, so a rebuild spends much of its time in msgpack. These are
// ledger.DecodePayload and ledger.EncodePayload (same options, same bytes)
// with the encoders and decoders reused instead of allocated per call.

var decoders = sync.Pool{New: func() any {
	d := msgpack.NewDecoder(nil)
	d.SetCustomStructTag("json")
	return d
}}

type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	e.enc.SetSortMapKeys(true)
	e.enc.UseCompactInts(true)
	e.enc.SetCustomStructTag("json")
	return e
}}

// unmarshal is ledger.DecodePayload: unknown fields are ignored. The
// payloads and records a fold reads most go through their hand-written
// readers first (fastcodec.go).
func unmarshal(b []byte, v any) error {
	if _, ok := v.(*Task); ok { // positional, without its id: decodeTask
		return errors.New("decode payload: a task record is read by decodeTask")
	}
	if decodeFast(b, v) {
		return nil
	}
	return unmarshalGeneric(b, v)
}

// unmarshalGeneric is unmarshal through msgpack's generic reader alone.
func unmarshalGeneric(b []byte, v any) error {
	d := decoders.Get().(*msgpack.Decoder)
	d.ResetReader(bytes.NewReader(b))
	err := ledger.DecodeWith(d, b, v)
	d.ResetReader(nil)
	decoders.Put(d)
	if err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	return nil
}

// marshal is ledger.EncodePayload: struct fields in declaration order, map
// keys sorted, shortest integers. The result is a new slice. The records
// a fold writes most have hand-written writers of the same bytes.
func marshal(v any) ([]byte, error) {
	switch v := v.(type) {
	case *Task:
		return encodeTask(v), nil
	}
	e := encoders.Get().(*encoder)
	e.buf.Reset()
	err := ledger.EncodeWith(e.enc, v)
	b := bytes.Clone(e.buf.Bytes())
	if e.buf.Cap() <= 64<<10 {
		encoders.Put(e)
	}
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	return b, nil
}

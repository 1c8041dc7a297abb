package ledger

import (
	"encoding/hex"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Digest is a SHA-256 digest in a payload (an arguments or reply hash, a
// thought's previous hash, a token's hash), held as its 64 lowercase hex
// digits: the form every reader shows. In a payload it is stored as a
// msgpack bin of its 32 bytes (tool.called from payload version 3,
// thought.recorded from 2), half the size of the hex string older versions
// wrote; it decodes from either, so those events read as before. The empty
// Digest (no digest) is the empty string: omitted where the field is
// omitempty, nil otherwise.
type Digest string

// DigestOf is the Digest of a 32-byte hash.
func DigestOf(sum [32]byte) Digest { return Digest(Hash(sum).String()) }

// EncodeMsgpack writes d as a bin of 32 bytes (nil if empty); a Digest
// that is not 64 lowercase hex digits is an error, never written.
func (d Digest) EncodeMsgpack(enc *msgpack.Encoder) error {
	if d == "" {
		return enc.EncodeNil()
	}
	var sum [32]byte
	if len(d) != 2*len(sum) || !lowerHex(string(d)) {
		return fmt.Errorf("digest %q: want 64 lowercase hex digits", string(d))
	}
	if _, err := hex.Decode(sum[:], []byte(d)); err != nil {
		return fmt.Errorf("digest %q: %w", string(d), err)
	}
	return enc.EncodeBytes(sum[:])
}

// DecodeMsgpack reads a bin of 32 bytes (as EncodeMsgpack writes it), nil,
// or a string (as payloads written before binary digests hold it, kept as
// is).
func (d *Digest) DecodeMsgpack(dec *msgpack.Decoder) error {
	c, err := dec.PeekCode()
	if err != nil {
		return err
	}
	if msgpcode.IsBin(c) {
		b, err := dec.DecodeBytes()
		if err != nil {
			return err
		}
		if len(b) != 32 {
			return fmt.Errorf("digest of %d bytes: want 32", len(b))
		}
		*d = DigestOf([32]byte(b))
		return nil
	}
	s, err := dec.DecodeString()
	*d = Digest(s)
	return err
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

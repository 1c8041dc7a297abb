package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Hash is a SHA-256 digest: an event hash, a Merkle node or a root.
type Hash [32]byte

// String is the lower-case hex form used everywhere outside the file. The
// digits are written into an array, not by hex.EncodeToString, whose
// buffer and then string were two allocations (a call makes several).
func (h Hash) String() string {
	var b [2 * len(h)]byte
	hex.Encode(b[:], h[:])
	return string(b[:])
}

// ParseHash reads the 64-digit hex form.
func ParseHash(s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("hash %q: want 64 hex digits", s)
	}
	copy(h[:], b)
	return h, nil
}

// MarshalText makes a Hash encode as hex in JSON.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads the hex form.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// LeafHash is RFC 9162 §2.1.1's leaf hash, SHA-256(0x00 ‖ data). The data of
// an event leaf is its stored bytes, and this is also the event's hash: the
// value the next event links to.
func LeafHash(data []byte) Hash {
	d := sha256.New()
	d.Write([]byte{0})
	d.Write(data)
	var h Hash
	d.Sum(h[:0])
	return h
}

// NodeHash is RFC 9162 §2.1.1's interior node, SHA-256(0x01 ‖ left ‖ right).
func NodeHash(left, right Hash) Hash {
	var buf [65]byte
	buf[0] = 1
	copy(buf[1:33], left[:])
	copy(buf[33:], right[:])
	return sha256.Sum256(buf[:])
}

// EmptyRoot is the root of the empty tree, SHA-256 of the empty string.
var EmptyRoot = Hash(sha256.Sum256(nil))

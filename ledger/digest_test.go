package ledger_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// TestDigest: a Digest is stored as a bin of its 32 bytes and reads back
// as the same hex; the hex string older payloads hold reads as it is; an
// empty one is omitted or nil; anything else is refused both ways.
func TestDigest(t *testing.T) {
	type payload struct {
		D   ledger.Digest `json:"d"`
		Opt ledger.Digest `json:"opt,omitempty"`
	}
	type old struct {
		D string `json:"d"`
	}
	sum := sha256.Sum256([]byte("logbook"))
	d := ledger.DigestOf(sum)
	b, err := ledger.EncodePayload(payload{D: d})
	if err != nil {
		t.Fatal(err)
	}
	// fixmap of 1, "d", bin8 of 32, the bytes: "opt" is omitted.
	want := append([]byte{0x81, 0xa1, 'd', 0xc4, 32}, sum[:]...)
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded % x, want % x", b, want)
	}
	var got payload
	if err := ledger.DecodePayload(b, &got); err != nil || got.D != d || got.Opt != "" {
		t.Fatalf("decoded %+v, %v; want %s", got, err, d)
	}
	// An older payload's hex string (whatever it holds) reads as written.
	for _, s := range []string{string(d), "ABC"} {
		b, _ := ledger.EncodePayload(old{D: s})
		if err := ledger.DecodePayload(b, &got); err != nil || string(got.D) != s {
			t.Errorf("old form %q decoded as %q, %v", s, got.D, err)
		}
	}
	// Empty and not omitempty: nil, read back empty.
	b, err = ledger.EncodePayload(payload{})
	if err != nil || !bytes.Equal(b, []byte{0x81, 0xa1, 'd', 0xc0}) {
		t.Fatalf("empty digest encoded % x, %v", b, err)
	}
	if err := ledger.DecodePayload(b, &got); err != nil || got.D != "" {
		t.Errorf("nil decoded as %q, %v", got.D, err)
	}
	for _, bad := range []ledger.Digest{d[:62], d + "00", ledger.Digest(strings.ToUpper(string(d))), "zz" + d[2:]} {
		if _, err := ledger.EncodePayload(payload{D: bad}); err == nil {
			t.Errorf("digest %q encoded", bad)
		}
	}
	short := append([]byte{0x81, 0xa1, 'd', 0xc4, 31}, sum[:31]...)
	if err := ledger.DecodePayload(short, &got); err == nil {
		t.Errorf("a bin of 31 bytes decoded as %q", got.D)
	}
}

package audit_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/audit"
)

func TestOptionErrorFormat(t *testing.T) {
	for _, c := range []struct {
		e          *audit.OptionError
		plain, cli string
	}{
		{audit.BadOption("to", "%d is beyond the head %d", 9, 4), "to 9 is beyond the head 4", "--to 9 is beyond the head 4"},
		{&audit.OptionError{Option: "size", With: "from/to"}, "size and from/to exclude each other", "--size and --from/to exclude each other"},
	} {
		if got := c.e.Error(); got != c.plain {
			t.Errorf("Error() = %q, want %q", got, c.plain)
		}
		if got := c.e.Format("--"); got != c.cli {
			t.Errorf("Format(--) = %q, want %q", got, c.cli)
		}
	}
}

// TestKeyRequests: what a caller gets wrong about keys is an
// *OptionError or names the file, and leaves no file behind.
func TestKeyRequests(t *testing.T) {
	var oe *audit.OptionError
	if _, err := audit.NewKeys("two words"); !errors.As(err, &oe) || oe.Option != "name" {
		t.Errorf("a key name with a space: %v", err)
	}
	keys, err := audit.NewKeys("example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sk, vk := filepath.Join(dir, "k.skey"), filepath.Join(dir, "k.vkey")
	if err := keys.Write(sk, sk); err == nil {
		t.Error("signer and verifier written to one file")
	}
	if _, err := os.Stat(sk); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused Write left a file: %v", err)
	}
	if err := keys.Write(sk, vk); err != nil {
		t.Fatal(err)
	}
	if err := keys.Write(sk, filepath.Join(dir, "other.vkey")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Write over an existing signer key: %v, want fs.ErrExist", err)
	}
	signer, err := audit.ReadSigner(sk)
	if err != nil || signer.Name() != "example.com/log" {
		t.Fatalf("ReadSigner: %v, %v", signer, err)
	}
	if _, err := audit.ReadSigner(vk); err == nil {
		t.Error("a verifier key read as a signer key")
	}
	if _, err := (audit.Checkpoint{Origin: "two\nlines", Size: 1}).Sign(signer); !errors.As(err, &oe) || oe.Option != "origin" {
		t.Errorf("an origin of two lines: %v", err)
	}
}

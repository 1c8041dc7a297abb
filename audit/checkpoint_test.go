package audit_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
	"golang.org/x/mod/sumdb/note"
)

func newKeys(t testing.TB, name string) (note.Signer, note.Verifier) {
	t.Helper()
	keys, err := audit.NewKeys(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := audit.ParseSignerKey(keys.Signer + "\n")
	if err != nil {
		t.Fatal(err)
	}
	v, err := audit.ParseVerifierKey(" " + keys.Verifier + "\n")
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

func TestCheckpointSignOpen(t *testing.T) {
	s, v := newKeys(t, "example.com/log")
	cp := audit.Checkpoint{Origin: "example.com/log", Size: 12, Root: ledger.LeafHash([]byte("x"))}
	signed, err := cp.Sign(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(signed, []byte(cp.Text()+"\n— example.com/log ")) {
		t.Errorf("signed note:\n%s", signed)
	}
	got, err := audit.OpenCheckpoint(signed, v)
	if err != nil || got != cp {
		t.Errorf("open: %+v, %v; want %+v", got, err, cp)
	}
	if _, err := (audit.Checkpoint{Origin: "example.com/log", Root: ledger.EmptyRoot}).Sign(s); err == nil || !strings.Contains(err.Error(), "no events") {
		t.Errorf("a checkpoint of size 0 signed: %v", err)
	}
	// Whatever origin Sign takes, OpenCheckpoint takes back; the others
	// are refused before signing (attack review: a tab, a control
	// character or invalid UTF-8 was signed into a checkpoint no verifier
	// could open).
	for _, origin := range []string{"two\nlines", "", "tab\there", "cr\rhere", "nul\x00", "esc\x1b[0m", "bad \xff utf-8",
		"example.com/log", "a space", "café", "del\x7f", " ", "gol/moc.elpmaxe\u202e", "c1\u009b"} {
		signed, err := (audit.Checkpoint{Origin: origin, Size: 1}).Sign(s)
		if err != nil {
			var oe *audit.OptionError
			if !errors.As(err, &oe) || oe.Option != "origin" {
				t.Errorf("origin %q: %v, want an *OptionError about origin", origin, err)
			}
			continue
		}
		if strings.ContainsAny(origin, "\x7f\u202e\u009b") {
			t.Errorf("origin %q signed: it shows the auditor other text", origin)
		}
		if got, err := audit.OpenCheckpoint(signed, v); err != nil || got.Origin != origin {
			t.Errorf("origin %q signed, but opens as %+v, %v", origin, got, err)
		}
	}
}

func TestCheckpointSignature(t *testing.T) {
	s, v := newKeys(t, "example.com/log")
	_, other := newKeys(t, "example.com/log")
	signed, _ := audit.Checkpoint{Origin: "example.com/log", Size: 3, Root: ledger.EmptyRoot}.Sign(s)
	edited := bytes.Replace(signed, []byte("\n3\n"), []byte("\n4\n"), 1)
	for _, c := range []struct {
		name string
		msg  []byte
		v    note.Verifier
	}{
		{"another key of the same name", signed, other},
		{"the size edited", edited, v},
		{"not a note", []byte("hello\n"), v},
	} {
		_, err := audit.OpenCheckpoint(c.msg, c.v)
		p := wantKind(t, err, audit.CheckpointSignature, c.name)
		if !strings.HasPrefix(p.Error(), "signature: ") || p.Err == nil {
			t.Errorf("%s: %q (cause %v)", c.name, p.Error(), p.Err)
		}
	}
}

func TestCheckpointMalformed(t *testing.T) {
	s, v := newKeys(t, "k")
	for _, c := range []struct{ body, want string }{
		{"origin\n12\n", "want origin, size and root lines"},
		{"\n12\nAAAA\n", "want origin, size and root lines"},
		{"origin\n012\n" + rootB64 + "\n", `size line "012"`},
		{"origin\n-1\n" + rootB64 + "\n", `size line "-1"`},
		{"origin\n12\nAAAA\n", `root line "AAAA"`},
		// Every log extends the empty one: such a checkpoint was taken
		// and verified, proving nothing.
		{"origin\n0\n" + rootB64 + "\n", "size 0: a checkpoint of no events proves nothing"},
	} {
		// Signed, so the signature holds and the body is what is wrong.
		msg, err := note.Sign(&note.Note{Text: c.body}, s)
		if err != nil {
			t.Fatal(err)
		}
		_, err = audit.OpenCheckpoint(msg, v)
		p := wantKind(t, err, audit.CheckpointMalformed, c.body)
		if !strings.Contains(p.Error(), c.want) {
			t.Errorf("%q: %q, want %q", c.body, p.Error(), c.want)
		}
	}
	// Extension lines after the root are allowed.
	if _, err := audit.ParseCheckpoint("origin\n12\n" + rootB64 + "\nextension\n"); err != nil {
		t.Errorf("extension line: %v", err)
	}
}

var rootB64 = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" // EmptyRoot

func TestKeys(t *testing.T) {
	if _, err := audit.NewKeys("two words"); err == nil {
		t.Error("a key name with a space")
	}
	// A control character: the key was made, but nothing it signs opens
	// (note.Open refuses one anywhere in a note, its signature line too),
	// and checkpoint spoke of an --origin not given (attack5).
	for name, want := range map[string]bool{"example.com/log": true, "": false, "a+b": false, "a\tb": false, "\xff": false,
		"a\x01b": false, "a\x1bb": false, "\x00": false, "é/log": true,
		// Nor one that shows the auditor other text: an override, an
		// isolate, a C1 control, DEL (attack5).
		"a\u202eb": false, "a\u2066b": false, "a\u009bb": false, "a\x7fb": false} {
		if audit.ValidKeyName(name) != want {
			t.Errorf("ValidKeyName(%q) = %v", name, !want)
		}
		if !want {
			continue
		}
		keys, err := audit.NewKeys(name)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := audit.ParseSignerKey(keys.Signer)
		v, _ := audit.ParseVerifierKey(keys.Verifier)
		msg, err := audit.Checkpoint{Origin: "example.com/log", Size: 1}.Sign(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := audit.OpenCheckpoint(msg, v); err != nil {
			t.Errorf("a checkpoint signed by key %q does not open: %v", name, err)
		}
	}
	keys, err := audit.NewKeys("example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sk, vk := filepath.Join(dir, "k.skey"), filepath.Join(dir, "k.vkey")
	if err := keys.Write(sk, vk); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sk); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("signer key file: %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(vk); string(b) != keys.Verifier+"\n" {
		t.Errorf("verifier key file: %q", b)
	}
	if err := keys.Write(filepath.Join(dir, "new.skey"), vk); err == nil {
		t.Error("overwrote a key file")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.skey")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Write left the signer key behind: %v", err)
	}
}

// TestReadCheckpoint: a checkpoint file checked with a verifier key file;
// a missing file, a file that is not a key, and another signer's key each
// fail as documented.
func TestReadCheckpoint(t *testing.T) {
	dir := t.TempDir()
	keys, err := audit.NewKeys("example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey := filepath.Join(dir, "s.key"), filepath.Join(dir, "v.key")
	if err := keys.Write(skey, vkey); err != nil {
		t.Fatal(err)
	}
	s, _ := audit.ParseSignerKey(keys.Signer)
	cp := audit.Checkpoint{Origin: "example.com/log", Size: 5, Root: ledger.LeafHash([]byte("x"))}
	signed, _ := cp.Sign(s)
	path := filepath.Join(dir, "checkpoint")
	if err := os.WriteFile(path, signed, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := audit.ReadCheckpoint(path, vkey); err != nil || got != cp {
		t.Errorf("ReadCheckpoint: %+v, %v; want %+v", got, err, cp)
	}
	if _, err := audit.ReadCheckpoint(filepath.Join(dir, "none"), vkey); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing checkpoint: %v", err)
	}
	if _, err := audit.ReadCheckpoint(path, skey); err == nil || !strings.Contains(err.Error(), skey+" is not a verifier key") {
		t.Errorf("signer key given as the verifier key: %v", err)
	}
	other, _ := audit.NewKeys("example.com/log")
	otherPath := filepath.Join(dir, "other.key")
	os.WriteFile(otherPath, []byte(other.Verifier), 0o644)
	var p *audit.Problem
	if _, err := audit.ReadCheckpoint(path, otherPath); !errors.As(err, &p) || p.Kind != audit.CheckpointSignature {
		t.Errorf("another signer's key: %v", err)
	}
}

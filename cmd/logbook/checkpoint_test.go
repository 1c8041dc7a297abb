package main

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/note"
)

// writeKey makes a key pair with logbook keygen in dir and returns the
// signer key's path (the verifier key is beside it, .vkey).
func writeKey(t testing.TB, dir string) string {
	t.Helper()
	skey, vkey := filepath.Join(dir, "log.skey"), filepath.Join(dir, "log.vkey")
	if _, err := os.Stat(skey); err == nil {
		return skey
	}
	r := run(t, "keygen", "--name", "example.com/logbook", "--skey", skey, "--vkey", vkey)
	wantExit(t, r, 0, "keygen")
	return skey
}

func vkeyOf(skey string) string { return strings.TrimSuffix(skey, ".skey") + ".vkey" }

func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	skey := writeKey(t, dir)
	fi, err := os.Stat(skey)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signer key mode %v, %v", fi.Mode(), err)
	}
	sk, _ := os.ReadFile(skey)
	vk, _ := os.ReadFile(vkeyOf(skey))
	if _, err := note.NewSigner(strings.TrimSpace(string(sk))); err != nil {
		t.Errorf("signer key: %v", err)
	}
	if _, err := note.NewVerifier(strings.TrimSpace(string(vk))); err != nil {
		t.Errorf("verifier key: %v", err)
	}
	r := run(t, "keygen", "--skey", skey, "--vkey", filepath.Join(dir, "other.vkey"))
	wantExit(t, r, 2, "keygen over an existing key")
	if b, _ := os.ReadFile(skey); string(b) != string(sk) {
		t.Error("keygen overwrote a key")
	}
	wantExit(t, run(t, "keygen", "--name", "has space", "--skey", filepath.Join(dir, "a"), "--vkey", filepath.Join(dir, "b")), 2, "bad key name")
}

// TestCheckpoint: the checkpoint is a C2SP tlog-checkpoint signed note of
// the ledger's size and root; verify --checkpoint accepts the ledger it was
// taken of and every append-only extension, and rejects a truncated or
// rewritten ledger, a checkpoint signed by another key and an edited one.
func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	skey := writeKey(t, dir)
	vkey := vkeyOf(skey)
	path := healthyLedger(t, 10)
	size := headOf(t, path)
	cp := filepath.Join(dir, "checkpoint")
	wantExit(t, run(t, "checkpoint", "--db", path, "--key", skey, "--out", cp), 0, "checkpoint")

	// The format, checked with the note package alone.
	msg, _ := os.ReadFile(cp)
	vk, _ := os.ReadFile(vkey)
	verifier, _ := note.NewVerifier(strings.TrimSpace(string(vk)))
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		t.Fatalf("note.Open: %v\n%s", err, msg)
	}
	lines := strings.Split(n.Text, "\n")
	root := run(t, "root", "--db", path, "--json")
	var rj struct{ Root string }
	decodeJSON(t, root, &rj)
	rootBytes, _ := base64.StdEncoding.DecodeString(lines[2])
	if len(lines) != 4 || lines[0] != "example.com/logbook" || lines[1] != strconv.FormatUint(size, 10) ||
		len(rootBytes) != 32 || lines[3] != "" || hex.EncodeToString(rootBytes) != rj.Root {
		t.Fatalf("checkpoint body %q, want origin, size %d, base64 root %s", n.Text, size, rj.Root)
	}

	check := func(path string, wantCode int, wantProblem string) {
		t.Helper()
		out, r := verifyJSONOf(t, "--db", path, "--checkpoint", cp, "--vkey", vkey)
		wantExit(t, r, wantCode, "verify --checkpoint")
		if wantCode == 0 && (out.Checkpoint == nil || !out.Checkpoint.Consistent || out.Checkpoint.Size != size) {
			t.Errorf("checkpoint not reported consistent: %s", r.stdout)
		}
		if wantCode == 1 && (out.Error == nil || out.Error.Problem != wantProblem) {
			t.Errorf("want %q, got %s", wantProblem, r.stdout)
		}
	}
	check(path, 0, "")

	t.Run("extended", func(t *testing.T) {
		ext := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, path, ext)
		w := newLedger(t, ext, "agent-b")
		for i := range 7 {
			w.call("task_create", map[string]any{"title": "later " + strconv.Itoa(i), "project": "core"})
		}
		w.l.Close()
		check(ext, 0, "")
	})
	t.Run("truncated", func(t *testing.T) {
		tr := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, path, tr)
		truncateTail(t, tr, 2, true)
		// The projections' trace of the cut wiped too (rebuild refuses a
		// log its projections were folded past): only the checkpoint tells.
		head := headOf(t, tr)
		editBolt(t, tr, func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("spaces")).Bucket([]byte("meta")).Put([]byte("applied"), be(head))
		})
		wantExit(t, run(t, "rebuild", "--db", tr), 0, "rebuild")
		wantExit(t, run(t, "verify", "--db", tr), 0, "verify without the checkpoint")
		check(tr, 1, "log truncated")
	})
	t.Run("rewritten with every hash fixed up", func(t *testing.T) {
		rw := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, path, rw)
		rewriteFrom(t, rw, 3)
		wantExit(t, run(t, "rebuild", "--db", rw), 0, "rebuild")
		wantExit(t, run(t, "verify", "--db", rw), 0, "verify without the checkpoint")
		check(rw, 1, "checkpoint mismatch")
	})
	t.Run("rewritten and extended", func(t *testing.T) {
		rw := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, path, rw)
		rewriteFrom(t, rw, 3)
		w := newLedger(t, rw, "agent-b")
		w.call("task_create", map[string]any{"title": "cover the tracks", "project": "core"})
		w.l.Close()
		check(rw, 1, "checkpoint mismatch")
	})
	t.Run("other key", func(t *testing.T) {
		other := writeKey(t, t.TempDir())
		r := run(t, "verify", "--db", path, "--checkpoint", cp, "--vkey", vkeyOf(other))
		wantExit(t, r, 1, "verify with another key")
		// --json says it as JSON too, with its kind: verify's report and
		// check-proof's outcome (stdout was empty).
		r = run(t, "verify", "--db", path, "--checkpoint", cp, "--vkey", vkeyOf(other), "--json")
		wantExit(t, r, 1, "verify --json with another key")
		var rep struct {
			OK    *bool
			Error struct{ Problem, Detail string }
		}
		if decodeJSON(t, r, &rep); rep.OK == nil || *rep.OK || rep.Error.Problem != "checkpoint signature" || rep.Error.Detail == "" {
			t.Errorf("verify --json with another key: %s", r)
		}
		proof := filepath.Join(t.TempDir(), "proof.json")
		wantExit(t, run(t, "prove", "inclusion", "--seq", "1", "--db", path, "--out", proof), 0, "prove")
		r = run(t, "check-proof", proof, "--checkpoint", cp, "--vkey", vkeyOf(other), "--json")
		wantExit(t, r, 1, "check-proof --json with another key")
		var res struct {
			OK             *bool
			Problem, Error string
		}
		if decodeJSON(t, r, &res); res.OK == nil || *res.OK || res.Problem != "checkpoint signature" || res.Error == "" {
			t.Errorf("check-proof --json with another key: %s", r)
		}
	})
	t.Run("edited checkpoint", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "checkpoint")
		os.WriteFile(bad, []byte(strings.Replace(string(msg), "\n"+strconv.FormatUint(size, 10)+"\n", "\n"+strconv.FormatUint(size-1, 10)+"\n", 1)), 0o644)
		wantExit(t, run(t, "verify", "--db", path, "--checkpoint", bad, "--vkey", vkey), 1, "verify an edited checkpoint")
	})
	t.Run("no events", func(t *testing.T) {
		// A checkpoint of size 0 proves nothing (every log extends the
		// empty one): checkpoint does not sign one of an empty ledger,
		// verify and check-proof refuse one signed anyway. The first was
		// written and the others said "the ledger extends it", exit 0.
		dir := t.TempDir()
		empty := filepath.Join(dir, "empty.db")
		l, err := boltstore.Open(empty, boltstore.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		out := filepath.Join(dir, "cp0")
		r := run(t, "checkpoint", "--db", empty, "--key", skey, "--out", out)
		wantExit(t, r, 2, "checkpoint of an empty ledger")
		if _, err := os.Stat(out); !os.IsNotExist(err) || !strings.Contains(r.stderr, "no events") {
			t.Errorf("checkpoint of an empty ledger: %v, %q", err, r.stderr)
		}
		sk, _ := os.ReadFile(skey)
		signer, err := note.NewSigner(strings.TrimSpace(string(sk)))
		if err != nil {
			t.Fatal(err)
		}
		signed, err := note.Sign(&note.Note{Text: "example.com/logbook\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"}, signer)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(out, signed, 0o644)
		r = run(t, "verify", "--db", path, "--checkpoint", out, "--vkey", vkey)
		wantExit(t, r, 1, "verify against a checkpoint of size 0")
		if !strings.Contains(r.stderr, "size 0: a checkpoint of no events proves nothing") {
			t.Errorf("verify against a checkpoint of size 0: %q", r.stderr)
		}
		proof := filepath.Join(dir, "proof.json")
		wantExit(t, run(t, "prove", "consistency", "--db", path, "--old", "1", "--out", proof), 0, "prove consistency")
		wantExit(t, run(t, "check-proof", proof, "--checkpoint", out, "--vkey", vkey), 1, "check-proof against a checkpoint of size 0")
	})
	t.Run("older size and json", func(t *testing.T) {
		r := run(t, "checkpoint", "--db", path, "--key", skey, "--size", "5", "--origin", "other.example/log", "--json")
		wantExit(t, r, 0, "checkpoint --size")
		var out struct {
			Origin, Checkpoint string
			Size               uint64
		}
		decodeJSON(t, r, &out)
		if out.Origin != "other.example/log" || out.Size != 5 || !strings.HasPrefix(out.Checkpoint, "other.example/log\n5\n") {
			t.Fatalf("checkpoint --json: %s", r.stdout)
		}
		old := filepath.Join(t.TempDir(), "cp5")
		os.WriteFile(old, []byte(out.Checkpoint), 0o644)
		out2, r := verifyJSONOf(t, "--db", path, "--checkpoint", old, "--vkey", vkey)
		wantExit(t, r, 0, "verify against an older checkpoint")
		if out2.Checkpoint == nil || out2.Checkpoint.Size != 5 {
			t.Errorf("%s", r.stdout)
		}
	})
}

// TestOutNeverReplaces: prove and checkpoint write --out only as a new
// file. A file there (the signer key itself, say), a symbolic link to one
// or to nowhere, or a directory is exit 2 and left as it was; the link is
// not followed. They used to replace the file (os.WriteFile), through
// the link.
func TestOutNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	skey := writeKey(t, dir)
	path := healthyLedger(t, 2)
	victim := filepath.Join(dir, "victim")
	link, dangling, sub := filepath.Join(dir, "link"), filepath.Join(dir, "dangling"), filepath.Join(dir, "sub")
	nowhere := filepath.Join(dir, "nowhere")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(nowhere, dangling); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(skey)
	cmds := map[string][]string{
		"prove inclusion":   {"prove", "inclusion", "--db", path, "--seq", "1"},
		"prove consistency": {"prove", "consistency", "--db", path, "--old", "1"},
		"checkpoint":        {"checkpoint", "--db", path, "--key", skey},
	}
	for name, args := range cmds {
		for _, out := range []string{victim, link, dangling, sub, skey, path} {
			r := run(t, append(args, "--out", out)...)
			wantExit(t, r, 2, name+" --out "+out)
			if !strings.Contains(r.stderr, out) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("%s --out %s: want one line naming it, got %q", name, out, r.stderr)
			}
		}
		if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
			t.Fatalf("%s replaced the file at --out: %q", name, b)
		}
		if b, _ := os.ReadFile(skey); string(b) != string(key) {
			t.Fatalf("%s replaced the signer key", name)
		}
		if _, err := os.Lstat(nowhere); err == nil {
			t.Fatalf("%s followed a dangling link", name)
		}
		fresh := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		wantExit(t, run(t, append(args, "--out", fresh)...), 0, name+" to a new file")
		if b, err := os.ReadFile(fresh); err != nil || len(b) == 0 {
			t.Fatalf("%s --out %s: %q, %v", name, fresh, b, err)
		}
	}
	wantExit(t, run(t, "verify", "--db", path), 0, "verify after")
}

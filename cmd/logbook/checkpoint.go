package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// keygen and checkpoint make the C2SP signed checkpoints of package audit
// (audit.Checkpoint); verify and check-proof check them.

func init() {
	register("keygen", "create an Ed25519 key pair for signing checkpoints", keygen)
	register("checkpoint", "sign a checkpoint (size and root) of the ledger", checkpoint)
}

func keygen(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "keygen", "Create an Ed25519 note key pair: the signer key (secret, written 0600) signs checkpoints,\nthe verifier key is what auditors are given.")
	name := fs.String("name", "logbook", "key name: usually the log's origin, e.g. example.com/logbook (no spaces or '+')")
	skey := fs.String("skey", "logbook.skey", "signer (private) key file to create")
	vkey := fs.String("vkey", "logbook.vkey", "verifier (public) key file to create")
	if done, err := parse(e, fs, args); done {
		return err
	}
	for _, p := range []struct{ flag, path string }{{"--skey", *skey}, {"--vkey", *vkey}} {
		if err := checkPath(p.flag, p.path, false); err != nil {
			return err
		}
		if _, err := os.Lstat(p.path); err == nil {
			return usageErr("keygen: %s %s exists; refusing to overwrite a key", p.flag, p.path)
		}
	}
	if *skey == *vkey {
		return usageErr("keygen: --skey and --vkey are the same file")
	}
	if !audit.ValidKeyName(*name) {
		return usageErr("keygen: --name %q: want a non-empty name without spaces or '+' (e.g. example.com/logbook)", *name)
	}
	keys, err := audit.NewKeys(*name)
	if err != nil {
		return usageErr("keygen: --name %q: %v", *name, err)
	}
	if err := keys.Write(*skey, *vkey); err != nil {
		return usageErr("keygen: %v", err)
	}
	fmt.Fprintf(e.stdout, "signer key:   %s (keep it secret)\nverifier key: %s\n%s\n", *skey, *vkey, keys.Verifier)
	return nil
}

// checkpointJSON is checkpoint's --json output.
type checkpointJSON struct {
	Origin     string      `json:"origin"`
	Size       uint64      `json:"size"`
	Root       ledger.Hash `json:"root"`
	KeyName    string      `json:"key_name"`
	Out        string      `json:"out,omitempty"`
	Checkpoint string      `json:"checkpoint"`
}

func checkpoint(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "checkpoint", "Sign a C2SP tlog-checkpoint of the ledger (its size and RFC 9162 root) with an Ed25519 note key.\nPublish it outside the ledger; `logbook verify --checkpoint` later proves the ledger still extends it.")
	lf := addLedgerFlags(e, fs)
	key := fs.String("key", "", "signer key file from logbook keygen (required)")
	origin := fs.String("origin", "", "origin line: the log's name (default: the key's name)")
	size := fs.Uint64("size", 0, "sign the ledger as of this size (default: its head)")
	out := fs.String("out", "", "write the checkpoint to this file (default: stdout)")
	asJSON := fs.Bool("json", false, "print a JSON object instead of the checkpoint text")
	if done, err := parse(e, fs, args); done {
		return err
	}
	if *key == "" {
		return usageErr("checkpoint: --key is required")
	}
	if err := checkPath("--key", *key, true); err != nil {
		return err
	}
	if *out != "" {
		if err := checkPath("--out", *out, false); err != nil {
			return err
		}
	}
	skey, err := os.ReadFile(*key)
	if err != nil {
		return usageErr("checkpoint: %v", err)
	}
	signer, err := audit.ParseSignerKey(string(skey))
	if err != nil {
		return usageErr("checkpoint: --key %s is not a signer key: %v", *key, err)
	}
	if *origin == "" {
		*origin = signer.Name()
	}
	if *origin == "" || strings.ContainsAny(*origin, "\n") {
		return usageErr("checkpoint: --origin must be one non-empty line")
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()
	cp := audit.Checkpoint{Origin: *origin}
	err = l.View(func(tx *boltstore.Tx) error {
		cp.Size = tx.Head().Seq
		if *size > 0 {
			if *size > cp.Size {
				return usageErr("checkpoint: --size %d is beyond the ledger's head %d", *size, cp.Size)
			}
			cp.Size = *size
		}
		var err error
		cp.Root, err = tx.Root(cp.Size)
		return err
	})
	if err != nil {
		return passExit("checkpoint", err)
	}
	signed, err := cp.Sign(signer)
	if err != nil {
		return usageErr("checkpoint: sign: %v", err)
	}
	if *out != "" {
		if err := os.WriteFile(*out, signed, 0o644); err != nil {
			return usageErr("checkpoint: %v", err)
		}
	}
	switch {
	case *asJSON:
		return writeJSON(e.stdout, checkpointJSON{Origin: cp.Origin, Size: cp.Size, Root: cp.Root, KeyName: signer.Name(), Out: *out, Checkpoint: string(signed)})
	case *out == "":
		_, err = e.stdout.Write(signed)
		return err
	default:
		fmt.Fprintf(e.stdout, "checkpoint of %d events (root %s) signed by %s, written to %s\n", cp.Size, cp.Root, signer.Name(), *out)
		return nil
	}
}

// openCheckpoint reads a signed checkpoint and checks its signature with the
// verifier key file. An unreadable file or key is an exit-2 error; a
// signature that does not verify, or a malformed body, is exit 1.
func openCheckpoint(cmd, cpPath, vkeyPath string) (audit.Checkpoint, error) {
	var c audit.Checkpoint
	if err := checkPath("--checkpoint", cpPath, true); err != nil {
		return c, err
	}
	if vkeyPath == "" {
		return c, usageErr("%s: --checkpoint needs --vkey, the verifier key of its signer", cmd)
	}
	if err := checkPath("--vkey", vkeyPath, true); err != nil {
		return c, err
	}
	vk, err := os.ReadFile(vkeyPath)
	if err != nil {
		return c, usageErr("%s: %v", cmd, err)
	}
	verifier, err := audit.ParseVerifierKey(string(vk))
	if err != nil {
		return c, usageErr("%s: --vkey %s is not a verifier key: %v", cmd, vkeyPath, err)
	}
	msg, err := os.ReadFile(cpPath)
	if err != nil {
		return c, usageErr("%s: %v", cmd, err)
	}
	if c, err = audit.OpenCheckpoint(msg, verifier); err != nil {
		return c, integrityErr(fmt.Errorf("%s: checkpoint %s: %w", cmd, cpPath, err))
	}
	return c, nil
}

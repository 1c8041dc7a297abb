package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/views"
)

// The auditor's commands: verify, replay, root, prove, check-proof, keygen
// and checkpoint. What they check and compute is package audit's (and
// boltaudit's, for a ledger file); here are their flags and output.

func verify(c *call) func() error {
	c.ledgerFlags()
	c.jsonFlag("print the report as JSON")
	cpPath := c.fs.String("checkpoint", "", "signed checkpoint the ledger must extend")
	vkeyPath := c.fs.String("vkey", "", "verifier key of the checkpoint's signer (with --checkpoint)")
	noProj := c.fs.Bool("no-projections", false, "skip the projection check")
	opts := boltaudit.Options{Progress: c.progress("verify")}
	c.fs.StringVar(&opts.ScratchDir, "scratch", "", "directory for the scratch projections (default: the system temp dir)")
	c.fs.Uint64Var(&opts.Chunk, "chunk", 1<<13, "events per read transaction")
	return func() error {
		switch {
		case opts.Chunk == 0:
			return usageErr("verify: --chunk must be positive")
		case *vkeyPath != "" && *cpPath == "":
			return usageErr("verify: --vkey without --checkpoint")
		case *cpPath != "":
			cp, err := openCheckpoint("verify", *cpPath, *vkeyPath)
			if err != nil {
				return err
			}
			opts.Checkpoint = &cp
		}
		if fi, err := os.Stat(opts.ScratchDir); opts.ScratchDir != "" && (err != nil || !fi.IsDir()) {
			return usageErr("verify: --scratch %s is not a directory", opts.ScratchDir)
		}
		opts.Projections = !*noProj
		return c.with(true, func(l *boltstore.Store) error {
			boundMemory()
			out, err := boltaudit.Verify(c.ctx, l, opts)
			if err != nil {
				return ioErr("verify", err)
			}
			if err := c.print(out, func() error { views.VerifyReport(c.stdout, out); return nil }); err != nil || out.OK {
				return err
			}
			return integrityErr(fmt.Errorf("verify: %w", out.Problem))
		})
	}
}

func replay(c *call) func() error {
	c.ledgerFlags()
	var o boltaudit.ReplayOptions
	c.fs.Uint64Var(&o.From, "from", 1, "first seq")
	c.fs.Uint64Var(&o.To, "to", 0, "last seq, inclusive (default: the head; with --follow, no end)")
	types := c.fs.String("type", "", "only these event types, comma-separated (e.g. task.created,thought.recorded)")
	c.fs.StringVar(&o.Filter.Task, "task", "", "only events concerning this task id (e.g. T-0001)")
	c.fs.StringVar(&o.Filter.Session, "session", "", "only events concerning this audit session id (e.g. A-0001)")
	c.fs.StringVar(&o.Filter.Actor, "actor", "", "only events of this actor")
	c.fs.BoolVar(&o.Follow, "follow", false, "keep printing new events as they are appended")
	c.fs.DurationVar(&o.Interval, "interval", 200*time.Millisecond, "with --follow, how often to look for new events")
	c.fs.Uint64Var(&o.Chunk, "chunk", 4096, "events per read transaction")
	return func() error {
		switch {
		case o.From == 0:
			return usageErr("replay: --from must be at least 1 (seqs start at 1)")
		case o.To != 0 && o.To < o.From:
			return usageErr("replay: --to %d is before --from %d", o.To, o.From)
		case o.Interval <= 0:
			return usageErr("replay: --interval must be positive")
		case o.Chunk == 0:
			return usageErr("replay: --chunk must be positive")
		}
		if *types != "" {
			o.Filter.Types = strings.Split(*types, ",")
		}
		return c.with(true, func(l *boltstore.Store) error {
			err := l.View(func(tx *boltstore.Tx) error {
				if head := tx.Head().Seq; !o.Follow && o.To > head {
					return usageErr("replay: --to %d is beyond the head %d", o.To, head)
				}
				return nil
			})
			if err == nil {
				err = boltaudit.Replay(c.ctx, l, c.stdout, o)
			}
			var ie *ledger.IntegrityError
			if errors.Is(err, ledger.ErrMalformed) || errors.As(err, &ie) {
				return integrityErr(fmt.Errorf("replay: %w (run logbook verify)", err))
			}
			return passExit("replay", err)
		})
	}
}

// rootJSON is root's output.
type rootJSON struct {
	Size      uint64      `json:"size,omitempty"` // the first size events (no range)
	From      uint64      `json:"from,omitempty"` // the range from..to, inclusive
	To        uint64      `json:"to,omitempty"`
	LeafCount uint64      `json:"leaf_count"`
	Root      ledger.Hash `json:"root"`
}

func root(c *call) func() error {
	c.ledgerFlags()
	size := c.fs.Uint64("size", 0, "root of the first N events (default: the head)")
	from := c.fs.Uint64("from", 0, "first seq of a range")
	to := c.fs.Uint64("to", 0, "last seq of a range, inclusive")
	c.jsonFlag("print JSON")
	return func() error {
		ranged := c.isSet("from") || c.isSet("to")
		switch {
		case ranged && c.isSet("size"):
			return usageErr("root: --size and --from/--to exclude each other")
		case ranged && (*from < 1 || *to < *from):
			return usageErr("root: want 1 <= --from <= --to (both given)")
		case c.isSet("size") && *size == 0:
			return usageErr("root: --size must be at least 1 (the empty tree's root is SHA-256 of nothing)")
		}
		var out rootJSON
		err := c.view(func(tx *boltstore.Tx) (err error) {
			head := tx.Head().Seq
			switch {
			case ranged && *to > head:
				return usageErr("root: --to %d is beyond the head %d", *to, head)
			case ranged:
				out.From, out.To, out.LeafCount = *from, *to, *to-*from+1
				out.Root, err = tx.RangeRoot(*from, *to+1)
				return err
			case *size > head:
				return usageErr("root: --size %d is beyond the head %d", *size, head)
			}
			out.Size = head
			if c.isSet("size") {
				out.Size = *size
			}
			out.LeafCount = out.Size
			out.Root, err = tx.Root(out.Size)
			return err
		})
		if err != nil {
			return err
		}
		return c.print(out, func() error {
			if ranged {
				_, err := fmt.Fprintf(c.stdout, "events %d..%d (%d leaves) root %s\n", out.From, out.To, out.LeafCount, out.Root)
				return err
			}
			_, err := fmt.Fprintf(c.stdout, "size %d root %s\n", out.Size, out.Root)
			return err
		})
	}
}

const proveHelp = `Write an RFC 9162 proof as JSON (to --out, or stdout):
  logbook prove inclusion --seq S [--size N]     event S is in the log of the first N events
  logbook prove consistency --old M [--new N]    the log of M events is a prefix of the log of N
N defaults to the head. Check it with logbook check-proof, with no database.`

// prove is `logbook prove inclusion|consistency`; prove --help lists the
// flags of both.
func prove(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, proveHelp)
		return usageErr("prove: want inclusion or consistency")
	}
	kind := args[0]
	if isHelp(kind) {
		return e.exec(ctx, subcommand{name: "prove", use: "prove inclusion|consistency", help: proveHelp, setup: proveKind("")}, args)
	}
	if kind != audit.ProofInclusion && kind != audit.ProofConsistency {
		return usageErr("prove: unknown proof %q: want inclusion or consistency", kind)
	}
	return e.exec(ctx, subcommand{name: "prove", use: "prove " + kind, help: proveHelp, setup: proveKind(kind)}, args[1:])
}

func proveKind(kind string) func(c *call) func() error {
	return func(c *call) func() error {
		c.ledgerFlags()
		seq := c.fs.Uint64("seq", 0, "inclusion: the event's seq")
		size := c.fs.Uint64("size", 0, "inclusion: the tree size (default: the head)")
		old := c.fs.Uint64("old", 0, "consistency: the old tree size")
		newSize := c.fs.Uint64("new", 0, "consistency: the new tree size (default: the head)")
		out := c.fs.String("out", "", "write the proof to this file (default: stdout)")
		return func() error {
			inclusion := kind == audit.ProofInclusion
			switch {
			case inclusion && (c.isSet("old") || c.isSet("new")):
				return usageErr("prove inclusion: --old/--new are for consistency proofs")
			case !inclusion && (c.isSet("seq") || c.isSet("size")):
				return usageErr("prove consistency: --seq/--size are for inclusion proofs")
			case inclusion && *seq == 0:
				return usageErr("prove inclusion: --seq is required (seqs start at 1)")
			case !inclusion && *old == 0:
				return usageErr("prove consistency: --old is required (at least 1)")
			}
			if *out != "" {
				if err := checkPath("--out", *out, false); err != nil {
					return err
				}
			}
			var p *audit.Proof
			err := c.view(func(tx *boltstore.Tx) (err error) {
				head, n := tx.Head().Seq, tx.Head().Seq
				if c.isSet("size") || c.isSet("new") {
					n = max(*size, *newSize)
				}
				switch {
				case n > head:
					return usageErr("prove: tree size %d is beyond the head %d", n, head)
				case inclusion && *seq > n:
					return usageErr("prove inclusion: --seq %d is beyond the tree size %d", *seq, n)
				case !inclusion && *old > n:
					return usageErr("prove consistency: --old %d is beyond the new size %d", *old, n)
				}
				p, err = boltaudit.Prove(tx, kind, max(*seq, *old), n)
				return err
			})
			if err != nil {
				return err
			}
			b, err := p.Encode()
			if err != nil || *out == "" {
				if err == nil {
					_, err = c.stdout.Write(b)
				}
				return err
			}
			if err := os.WriteFile(*out, b, 0o644); err != nil {
				return usageErr("prove: %v", err)
			}
			return nil
		}
	}
}

func checkProof(c *call) func() error {
	rootHex := c.fs.String("root", "", "trusted root (hex) of the tree the proof is for (the new tree, for consistency)")
	size := c.fs.Uint64("size", 0, "trusted size of that tree")
	oldRootHex := c.fs.String("old-root", "", "consistency: trusted old root (default: the proof's, reported as such)")
	oldSize := c.fs.Uint64("old-size", 0, "consistency: trusted old size")
	cpPath := c.fs.String("checkpoint", "", "take the trusted root and size from this signed checkpoint")
	vkeyPath := c.fs.String("vkey", "", "verifier key of the checkpoint's signer")
	c.jsonFlag("print JSON")
	return func() error {
		t := audit.Trusted{OldSize: *oldSize, OldSizeKnown: c.isSet("old-size")}
		var err error
		switch file := c.arg(); {
		case file == "":
			return usageErr("check-proof: want a proof file (or - for stdin)")
		case *cpPath != "" && (*rootHex != "" || c.isSet("size")):
			return usageErr("check-proof: --checkpoint and --root/--size exclude each other")
		case *cpPath != "":
			cp, err := openCheckpoint("check-proof", *cpPath, *vkeyPath)
			if err != nil {
				return err
			}
			t.Root, t.Size, t.SizeKnown = cp.Root, cp.Size, true
		case *rootHex == "":
			return usageErr("check-proof: --root (or --checkpoint) is required: a proof is only as good as the root it is checked against")
		default:
			if t.Root, err = ledger.ParseHash(*rootHex); err != nil {
				return usageErr("check-proof: --root: %v", err)
			}
			t.Size, t.SizeKnown = *size, c.isSet("size")
		}
		if t.OldRootKnown = *oldRootHex != ""; t.OldRootKnown {
			if t.OldRoot, err = ledger.ParseHash(*oldRootHex); err != nil {
				return usageErr("check-proof: --old-root: %v", err)
			}
		}
		var raw []byte
		if file := c.arg(); file == "-" {
			raw, err = io.ReadAll(c.stdin)
		} else if err = checkPath("proof file", file, true); err != nil {
			return err
		} else {
			raw, err = os.ReadFile(file)
		}
		if err != nil {
			return usageErr("check-proof: %v", err)
		}
		res, err := audit.CheckProof(raw, t)
		switch {
		case errors.Is(err, audit.ErrOldForInclusion):
			return usageErr("check-proof: --old-root/--old-size are for consistency proofs")
		case err != nil:
			c.print(res, func() error { _, werr := fmt.Fprintf(c.stdout, "INVALID: %v\n", err); return werr })
			return integrityErr(fmt.Errorf("check-proof: %w", err))
		}
		return c.print(res, func() error {
			fmt.Fprintf(c.stdout, "ok: %s\n", res.Statement)
			if !t.SizeKnown {
				fmt.Fprintln(c.stdout, "note: the tree size is the proof's own; pass --size or --checkpoint to bind it")
			}
			return nil
		})
	}
}

func keygen(c *call) func() error {
	name := c.fs.String("name", "logbook", "key name: usually the log's origin, e.g. example.com/logbook (no spaces or '+')")
	skey := c.fs.String("skey", "logbook.skey", "signer (private) key file to create")
	vkey := c.fs.String("vkey", "logbook.vkey", "verifier (public) key file to create")
	return func() error {
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
		fmt.Fprintf(c.stdout, "signer key:   %s (keep it secret)\nverifier key: %s\n%s\n", *skey, *vkey, keys.Verifier)
		return nil
	}
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

func checkpoint(c *call) func() error {
	c.ledgerFlags()
	key := c.fs.String("key", "", "signer key file from logbook keygen (required)")
	origin := c.fs.String("origin", "", "origin line: the log's name (default: the key's name)")
	size := c.fs.Uint64("size", 0, "sign the ledger as of this size (default: its head)")
	out := c.fs.String("out", "", "write the checkpoint to this file (default: stdout)")
	c.jsonFlag("print a JSON object instead of the checkpoint text")
	return func() error {
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
		cp := audit.Checkpoint{Origin: *origin}
		err = c.view(func(tx *boltstore.Tx) (err error) {
			if cp.Size = tx.Head().Seq; *size > cp.Size {
				return usageErr("checkpoint: --size %d is beyond the ledger's head %d", *size, cp.Size)
			} else if *size > 0 {
				cp.Size = *size
			}
			cp.Root, err = tx.Root(cp.Size)
			return err
		})
		if err != nil {
			return err
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
		return c.print(checkpointJSON{Origin: cp.Origin, Size: cp.Size, Root: cp.Root, KeyName: signer.Name(), Out: *out, Checkpoint: string(signed)}, func() error {
			if *out == "" {
				_, err := c.stdout.Write(signed)
				return err
			}
			_, err := fmt.Fprintf(c.stdout, "checkpoint of %d events (root %s) signed by %s, written to %s\n", cp.Size, cp.Root, signer.Name(), *out)
			return err
		})
	}
}

// openCheckpoint reads a signed checkpoint and checks its signature with the
// verifier key file. An unreadable file or key is an exit-2 error; a
// signature that does not verify, or a malformed body, is exit 1.
func openCheckpoint(cmd, cpPath, vkeyPath string) (audit.Checkpoint, error) {
	if err := checkPath("--checkpoint", cpPath, true); err != nil {
		return audit.Checkpoint{}, err
	}
	if vkeyPath == "" {
		return audit.Checkpoint{}, usageErr("%s: --checkpoint needs --vkey, the verifier key of its signer", cmd)
	}
	if err := checkPath("--vkey", vkeyPath, true); err != nil {
		return audit.Checkpoint{}, err
	}
	c, err := audit.ReadCheckpoint(cpPath, vkeyPath)
	var p *audit.Problem
	var pe *fs.PathError
	switch {
	case errors.As(err, &p):
		return c, integrityErr(fmt.Errorf("%s: checkpoint %s: %w", cmd, cpPath, err))
	case errors.As(err, &pe):
		return c, usageErr("%s: %v", cmd, err)
	case err != nil:
		return c, usageErr("%s: --vkey %v", cmd, err)
	}
	return c, nil
}

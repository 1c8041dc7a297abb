package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
	decimalVar(c.fs, &opts.Chunk, "chunk", 1<<12, "events per read transaction (and per commit of the refold); larger chunks hold more in memory under verify's 64 MiB heap limit (8192 took about 1.2x the CPU when measured, under the earlier 48 MiB limit)")
	return func() error {
		switch {
		case opts.Chunk == 0:
			return errors.New("--chunk must be positive")
		case *vkeyPath != "" && *cpPath == "":
			return errors.New("--vkey without --checkpoint")
		case *cpPath != "":
			cp, err := openCheckpoint(*cpPath, *vkeyPath)
			if err != nil {
				return c.failed(err)
			}
			opts.Checkpoint = &cp
		}
		if opts.ScratchDir != "" {
			switch fi, err := os.Stat(opts.ScratchDir); {
			case os.IsNotExist(err):
				return fmt.Errorf("--scratch %s does not exist", opts.ScratchDir)
			case err != nil:
				return fmt.Errorf("--scratch: %v", err)
			case !fi.IsDir():
				return fmt.Errorf("--scratch %s is not a directory", opts.ScratchDir)
			}
		}
		opts.Projections = !*noProj
		reported := false
		err := c.with(true, func(l *boltstore.Store) error {
			boundMemory(refoldHeapLimit)
			l.ReadAhead()
			out, err := boltaudit.Verify(c.ctx, l, opts)
			if err != nil {
				return err
			}
			reported = true
			if err := c.print(out, func() error { views.VerifyReport(c.stdout, out); return nil }); err != nil || out.OK {
				return err
			}
			return out.Problem
		})
		if !reported {
			return c.failed(err)
		}
		return err
	}
}

// failed is err, printed first with --json as {"ok":false,"error":...}
// when it is an integrity outcome (exit 1) that no report said: a
// checkpoint that does not hold, a ledger file that cannot be read as
// one. The problem's kind is audit's (audit.FileDamaged for the file).
func (c *call) failed(err error) error {
	if c.json == nil || !*c.json || exitCode(err) != exitIntegrity {
		return err
	}
	p := audit.AsProblem(err)
	if p == nil {
		p = &audit.Problem{Kind: audit.FileDamaged, Detail: err.Error()}
	}
	if werr := writeJSON(c.stdout, struct {
		OK      bool           `json:"ok"`
		Problem *audit.Problem `json:"error"`
	}{false, p}); werr != nil {
		return werr
	}
	return err
}

func replay(c *call) func() error {
	c.ledgerFlags()
	var o boltaudit.ReplayOptions
	decimalVar(c.fs, &o.From, "from", 1, "first seq")
	decimalVar(c.fs, &o.To, "to", 0, "last seq, inclusive (default: the head; with --follow, no end)")
	types := c.fs.String("type", "", "only these event types, comma-separated (e.g. task.created,thought.recorded)")
	c.fs.StringVar(&o.Filter.Task, "task", "", "only events concerning this task id (e.g. T-0001)")
	c.fs.StringVar(&o.Filter.Session, "session", "", "only events concerning this audit session id (e.g. A-0001)")
	c.fs.StringVar(&o.Filter.Actor, "actor", "", "only events of this actor")
	c.fs.BoolVar(&o.Follow, "follow", false, "keep printing new events as they are appended")
	c.fs.DurationVar(&o.Interval, "interval", 200*time.Millisecond, "with --follow, how often to look for new events")
	decimalVar(c.fs, &o.Chunk, "chunk", 4096, "events per read transaction")
	return func() error {
		if *types != "" {
			o.Filter.Types = commaList(*types)
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return c.with(true, func(l *boltstore.Store) error {
			err := boltaudit.Replay(c.ctx, l, c.stdout, o)
			if exitCode(err) == exitIntegrity {
				return fmt.Errorf("%w (run logbook verify)", err)
			}
			return err
		})
	}
}

func root(c *call) func() error {
	c.ledgerFlags()
	var o boltaudit.RootOptions
	decimalVar(c.fs, &o.Size, "size", 0, "root of the first N events (default: the head)")
	decimalVar(c.fs, &o.From, "from", 0, "first seq of a range")
	decimalVar(c.fs, &o.To, "to", 0, "last seq of a range, inclusive")
	c.jsonFlag("print JSON")
	return func() error {
		o.SizeKnown, o.Range = c.isSet("size"), c.isSet("from") || c.isSet("to")
		// One bound alone is said missing, not of the wrong value: its
		// default, 0, was never given.
		for _, bound := range []string{"from", "to"} {
			if o.Range && !o.SizeKnown && !c.isSet(bound) {
				return audit.BadOption(bound, "is required: a range is 1 <= from <= to, both given")
			}
		}
		var out boltaudit.TreeRoot
		err := c.view(func(tx *boltstore.Tx) (err error) {
			out, err = boltaudit.Root(tx, o)
			return err
		})
		if err != nil {
			return err
		}
		return c.print(out, func() error {
			if o.Range {
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
		return errors.New("prove: want inclusion or consistency")
	}
	kind := args[0]
	if isHelp(kind) {
		return e.exec(ctx, subcommand{name: "prove", use: "prove inclusion|consistency", help: proveHelp, setup: proveKind("")}, args)
	}
	switch {
	case strings.HasPrefix(kind, "-"):
		return fmt.Errorf("prove: the kind of proof comes first, before %s: logbook prove inclusion|consistency [flags]", kind)
	case kind != audit.ProofInclusion && kind != audit.ProofConsistency:
		return fmt.Errorf("prove: unknown proof %q: want inclusion or consistency", kind)
	}
	return e.exec(ctx, subcommand{name: "prove " + kind, help: proveHelp, setup: proveKind(kind)}, args[1:])
}

func proveKind(kind string) func(c *call) func() error {
	return func(c *call) func() error {
		c.ledgerFlags()
		req := boltaudit.ProofRequest{Kind: kind}
		decimalVar(c.fs, &req.Seq, "seq", 0, "inclusion: the event's seq")
		size := decimalFlag[uint64](c.fs, "size", 0, "inclusion: the tree size (default: the head)")
		decimalVar(c.fs, &req.Old, "old", 0, "consistency: the old tree size")
		newSize := decimalFlag[uint64](c.fs, "new", 0, "consistency: the new tree size (default: the head)")
		out := c.fs.String("out", "", "write the proof to this new file (default: stdout); an existing one is never replaced")
		return func() error {
			// prove --help lists the flags of both proofs; each takes its own.
			for _, f := range map[string][]string{audit.ProofInclusion: {"old", "new"}, audit.ProofConsistency: {"seq", "size"}}[kind] {
				if c.isSet(f) {
					return fmt.Errorf("--%s is not for %s proofs", f, kind)
				}
			}
			req.Size, req.SizeKnown = max(*size, *newSize), c.isSet("size") || c.isSet("new")
			var p *audit.Proof
			err := c.view(func(tx *boltstore.Tx) (err error) {
				p, err = boltaudit.Prove(tx, req)
				return err
			})
			var b []byte
			if err == nil {
				b, err = p.Encode()
			}
			switch {
			case err != nil:
				return err
			case *out == "":
				_, err = c.stdout.Write(b)
				return err
			}
			return writeNew("--out", *out, b)
		}
	}
}

func checkProof(c *call) func() error {
	rootHex := c.fs.String("root", "", "trusted root (hex) of the tree the proof is for (the new tree, for consistency)")
	size := decimalFlag[uint64](c.fs, "size", 0, "trusted size of that tree")
	oldRootHex := c.fs.String("old-root", "", "consistency: trusted old root (default: the proof's, reported as such)")
	oldSize := decimalFlag[uint64](c.fs, "old-size", 0, "consistency: trusted old size")
	cpPath := c.fs.String("checkpoint", "", "take the trusted root and size from this signed checkpoint")
	vkeyPath := c.fs.String("vkey", "", "verifier key of the checkpoint's signer")
	c.jsonFlag("print JSON")
	return func() error {
		t := audit.Trusted{OldSize: *oldSize, OldSizeKnown: c.isSet("old-size")}
		var err error
		switch {
		case c.arg() == "":
			return errors.New("want a proof file (or - for stdin)")
		// No tree of no events has a proof: 0 is a mistake in the
		// options, not an invalid proof (it was exit 1, INVALID).
		case c.isSet("size") && *size == 0:
			return audit.BadOption("size", "must be at least 1: no proof is of a tree of no events")
		case c.isSet("old-size") && *oldSize == 0:
			return audit.BadOption("old-size", "must be at least 1: no proof is of a tree of no events")
		case *cpPath != "" && (*rootHex != "" || c.isSet("size")):
			return errors.New("--checkpoint and --root/--size exclude each other")
		case *cpPath != "":
			cp, err := openCheckpoint(*cpPath, *vkeyPath)
			if err != nil {
				if p := audit.AsProblem(err); p != nil && *c.json {
					writeJSON(c.stdout, audit.ProofCheck{Error: err.Error(), Problem: p.Kind})
				}
				return err
			}
			t.Root, t.Size, t.SizeKnown = cp.Root, cp.Size, true
		case *rootHex == "":
			return errors.New("--root (or --checkpoint) is required: a proof is only as good as the root it is checked against")
		default:
			if t.Root, err = ledger.ParseHash(*rootHex); err != nil {
				return fmt.Errorf("--root: %v", err)
			}
			t.Size, t.SizeKnown = *size, c.isSet("size")
		}
		if t.OldRootKnown = *oldRootHex != ""; t.OldRootKnown {
			if t.OldRoot, err = ledger.ParseHash(*oldRootHex); err != nil {
				return fmt.Errorf("--old-root: %v", err)
			}
		}
		var raw []byte
		if c.arg() == "-" {
			raw, err = audit.ReadAtMost(c.stdin, audit.MaxProofBytes, "stdin", "a proof file")
		} else {
			raw, err = audit.ReadFile(c.arg(), audit.MaxProofBytes, "a proof file")
		}
		if err != nil {
			return err
		}
		res, err := audit.CheckProof(raw, t)
		switch {
		case errors.Is(err, audit.ErrOldForInclusion):
			return errors.New("--old-root/--old-size are for consistency proofs")
		case err != nil:
			c.print(res, func() error { _, werr := fmt.Fprintf(c.stdout, "INVALID: %v\n", err); return werr })
			return err
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
	name := c.fs.String("name", "logbook", "key name: usually the log's origin, e.g. example.com/logbook (no spaces, control characters or '+')")
	skey := c.fs.String("skey", "logbook.skey", "signer (private) key file to create")
	vkey := c.fs.String("vkey", "logbook.vkey", "verifier (public) key file to create")
	return func() error {
		for flag, path := range map[string]string{"--skey": *skey, "--vkey": *vkey} {
			if err := checkPath(flag, path, false); err != nil {
				return err
			}
		}
		keys, err := audit.NewKeys(*name)
		if err == nil {
			err = keys.Write(*skey, *vkey)
		}
		if err != nil {
			return err
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
	size := decimalFlag[uint64](c.fs, "size", 0, "sign the ledger as of this size (default: its head)")
	out := c.fs.String("out", "", "write the checkpoint to this new file (default: stdout); an existing one is never replaced")
	c.jsonFlag("print a JSON object instead of the checkpoint text")
	return func() error {
		if *key == "" {
			return errors.New("--key is required")
		}
		signer, err := audit.ReadSigner(*key)
		if err != nil {
			return fmt.Errorf("--key: %w", err)
		}
		cp := audit.Checkpoint{Origin: cmp.Or(*origin, signer.Name())}
		err = c.view(func(tx *boltstore.Tx) error {
			r, err := boltaudit.Root(tx, boltaudit.RootOptions{Size: *size, SizeKnown: c.isSet("size")})
			cp.Size, cp.Root = r.Size, r.Root
			return err
		})
		var signed []byte
		if err == nil {
			signed, err = cp.Sign(signer)
		}
		if err == nil && *out != "" {
			err = writeNew("--out", *out, signed)
		}
		if err != nil {
			return err
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

// writeNew creates the file path holding data (audit.WriteNew: never over
// anything there, a link included), its errors naming flag.
func writeNew(flag, path string, data []byte) error {
	if err := checkPath(flag, path, false); err != nil {
		return err
	}
	err := audit.WriteNew(path, data, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s %s exists; refusing to overwrite it", flag, path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// openCheckpoint reads a signed checkpoint and checks its signature with the
// verifier key file (audit.ReadCheckpoint: a signature that does not
// verify, or a malformed body, is an *audit.Problem: exit 1).
func openCheckpoint(cpPath, vkeyPath string) (audit.Checkpoint, error) {
	if vkeyPath == "" {
		return audit.Checkpoint{}, errors.New("--checkpoint needs --vkey, the verifier key of its signer")
	}
	cp, err := audit.ReadCheckpoint(cpPath, vkeyPath)
	if err != nil {
		return cp, fmt.Errorf("checkpoint %s: %w", cpPath, err)
	}
	return cp, nil
}

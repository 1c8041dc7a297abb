package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

func init() {
	register("root", "print the RFC 9162 Merkle root of the ledger, a prefix or a range of it", root)
	register("prove", "write an inclusion or consistency proof as JSON", prove)
	register("check-proof", "verify a proof file offline, against a trusted root", checkProof)
}

// rootJSON is root's output.
type rootJSON struct {
	Size      uint64      `json:"size,omitempty"` // the first size events (no range)
	From      uint64      `json:"from,omitempty"` // the range from..to, inclusive
	To        uint64      `json:"to,omitempty"`
	LeafCount uint64      `json:"leaf_count"`
	Root      ledger.Hash `json:"root"`
}

func root(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "root", `Print the RFC 9162 Merkle root of the first --size events (default: all), or of the
events --from A --to B (inclusive) as a tree of their own (the root an audit session over
exactly those events has). Leaves are SHA-256(0x00 || stored event bytes).`)
	lf := addLedgerFlags(e, fs)
	size := fs.Uint64("size", 0, "root of the first N events (default: the head)")
	from := fs.Uint64("from", 0, "first seq of a range")
	to := fs.Uint64("to", 0, "last seq of a range, inclusive")
	asJSON := fs.Bool("json", false, "print JSON")
	if done, err := parse(e, fs, args); done {
		return err
	}
	ranged := isSet(fs, "from") || isSet(fs, "to")
	switch {
	case ranged && isSet(fs, "size"):
		return usageErr("root: --size and --from/--to exclude each other")
	case ranged && (*from < 1 || *to < *from):
		return usageErr("root: want 1 <= --from <= --to (both given)")
	case isSet(fs, "size") && *size == 0:
		return usageErr("root: --size must be at least 1 (the empty tree's root is SHA-256 of nothing)")
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()
	var out rootJSON
	err = l.View(func(tx *boltstore.Tx) error {
		head := tx.Head().Seq
		var err error
		switch {
		case ranged:
			if *to > head {
				return usageErr("root: --to %d is beyond the head %d", *to, head)
			}
			out.From, out.To, out.LeafCount = *from, *to, *to-*from+1
			out.Root, err = tx.RangeRoot(*from, *to+1)
		default:
			out.Size = head
			if isSet(fs, "size") {
				if *size > head {
					return usageErr("root: --size %d is beyond the head %d", *size, head)
				}
				out.Size = *size
			}
			out.LeafCount = out.Size
			out.Root, err = tx.Root(out.Size)
		}
		return err
	})
	if err != nil {
		return passExit("root", err)
	}
	if *asJSON {
		return writeJSON(e.stdout, out)
	}
	if ranged {
		fmt.Fprintf(e.stdout, "events %d..%d (%d leaves) root %s\n", out.From, out.To, out.LeafCount, out.Root)
	} else {
		fmt.Fprintf(e.stdout, "size %d root %s\n", out.Size, out.Root)
	}
	return nil
}

// proveArgs are prove's flags.
type proveArgs struct {
	seq, size, old, newSize *uint64
	out                     *string
}

func proveFlags(e *env, name, summary string) (*flag.FlagSet, *ledgerFlags, proveArgs) {
	fs := newFlags(e, name, summary)
	lf := addLedgerFlags(e, fs)
	lf.name = "prove"
	return fs, lf, proveArgs{
		seq:     fs.Uint64("seq", 0, "inclusion: the event's seq"),
		size:    fs.Uint64("size", 0, "inclusion: the tree size (default: the head)"),
		old:     fs.Uint64("old", 0, "consistency: the old tree size"),
		newSize: fs.Uint64("new", 0, "consistency: the new tree size (default: the head)"),
		out:     fs.String("out", "", "write the proof to this file (default: stdout)"),
	}
}

func prove(ctx context.Context, e *env, args []string) error {
	const summary = `Write an RFC 9162 proof as JSON (to --out, or stdout):
  logbook prove inclusion --seq S [--size N]     event S is in the log of the first N events
  logbook prove consistency --old M [--new N]    the log of M events is a prefix of the log of N
N defaults to the head. Check it with logbook check-proof, with no database.`
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) == 0 {
			fmt.Fprintln(e.stderr, summary)
			return usageErr("prove: want inclusion or consistency")
		}
		fs, _, _ := proveFlags(e, "prove inclusion|consistency", summary)
		fs.SetOutput(e.stdout)
		fs.Usage()
		return nil
	}
	kind, args := args[0], args[1:]
	if kind != audit.ProofInclusion && kind != audit.ProofConsistency {
		return usageErr("prove: unknown proof %q: want inclusion or consistency", kind)
	}
	fs, lf, pf := proveFlags(e, "prove "+kind, summary)
	seq, size, old, newSize, out := pf.seq, pf.size, pf.old, pf.newSize, pf.out
	if done, err := parse(e, fs, args); done {
		return err
	}
	switch {
	case kind == audit.ProofInclusion && (isSet(fs, "old") || isSet(fs, "new")):
		return usageErr("prove inclusion: --old/--new are for consistency proofs")
	case kind == audit.ProofConsistency && (isSet(fs, "seq") || isSet(fs, "size")):
		return usageErr("prove consistency: --seq/--size are for inclusion proofs")
	case kind == audit.ProofInclusion && *seq == 0:
		return usageErr("prove inclusion: --seq is required (seqs start at 1)")
	case kind == audit.ProofConsistency && *old == 0:
		return usageErr("prove consistency: --old is required (at least 1)")
	}
	if *out != "" {
		if err := checkPath("--out", *out, false); err != nil {
			return err
		}
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()
	var p *audit.Proof
	err = l.View(func(tx *boltstore.Tx) error {
		head := tx.Head().Seq
		n := head
		if isSet(fs, "size") || isSet(fs, "new") {
			n = max(*size, *newSize)
		}
		if n > head {
			return usageErr("prove: tree size %d is beyond the head %d", n, head)
		}
		var err error
		if kind == audit.ProofInclusion {
			if *seq > n {
				return usageErr("prove inclusion: --seq %d is beyond the tree size %d", *seq, n)
			}
			p, err = boltaudit.ProveInclusion(tx, *seq, n)
		} else {
			if *old > n {
				return usageErr("prove consistency: --old %d is beyond the new size %d", *old, n)
			}
			p, err = boltaudit.ProveConsistency(tx, *old, n)
		}
		return err
	})
	if err != nil {
		return passExit("prove", err)
	}
	b, err := p.Encode()
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = e.stdout.Write(b)
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return usageErr("prove: %v", err)
	}
	return nil
}

// checkJSON is check-proof's --json output.
type checkJSON struct {
	OK        bool   `json:"ok"`
	Type      string `json:"type,omitempty"`
	Statement string `json:"statement,omitempty"` // what the proof proved
	SizeBound bool   `json:"size_bound"`          // the tree size came from a trusted source, not the proof
	Error     string `json:"error,omitempty"`
}

func checkProof(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "check-proof FILE", `Verify a proof written by logbook prove, offline (no ledger needed), by RFC 9162 §2.1.3.2
and §2.1.4.2. The trusted root comes from --root (a root you obtained independently, e.g.
from a published checkpoint), or from --checkpoint with --vkey. RFC 9162 proofs bind a tree
size only through the tree's shape: pass --size (or a checkpoint) to bind it too.
FILE "-" reads stdin. Exit 0 valid, 1 invalid or malformed proof, 2 usage or I/O error.`)
	rootHex := fs.String("root", "", "trusted root (hex) of the tree the proof is for (the new tree, for consistency)")
	size := fs.Uint64("size", 0, "trusted size of that tree")
	oldRootHex := fs.String("old-root", "", "consistency: trusted old root (default: the proof's, reported as such)")
	oldSize := fs.Uint64("old-size", 0, "consistency: trusted old size")
	cpPath := fs.String("checkpoint", "", "take the trusted root and size from this signed checkpoint")
	vkeyPath := fs.String("vkey", "", "verifier key of the checkpoint's signer")
	asJSON := fs.Bool("json", false, "print JSON")
	// The proof file comes first or last; flags may come on either side.
	rest, done, err := parseArgs(e, fs, args, 1)
	if done {
		return err
	}
	var file string
	if len(rest) == 1 {
		file = rest[0]
	}
	if file == "" {
		return usageErr("check-proof: want a proof file (or - for stdin)")
	}
	var trusted audit.Trusted
	switch {
	case *cpPath != "" && (*rootHex != "" || isSet(fs, "size")):
		return usageErr("check-proof: --checkpoint and --root/--size exclude each other")
	case *cpPath != "":
		cp, err := openCheckpoint("check-proof", *cpPath, *vkeyPath)
		if err != nil {
			return err
		}
		trusted.Root, trusted.Size, trusted.SizeKnown = cp.Root, cp.Size, true
	case *rootHex == "":
		return usageErr("check-proof: --root (or --checkpoint) is required: a proof is only as good as the root it is checked against")
	default:
		h, err := ledger.ParseHash(*rootHex)
		if err != nil {
			return usageErr("check-proof: --root: %v", err)
		}
		trusted.Root = h
		trusted.Size, trusted.SizeKnown = *size, isSet(fs, "size")
	}
	if *oldRootHex != "" {
		h, err := ledger.ParseHash(*oldRootHex)
		if err != nil {
			return usageErr("check-proof: --old-root: %v", err)
		}
		trusted.OldRoot, trusted.OldRootKnown = h, true
	}
	trusted.OldSize, trusted.OldSizeKnown = *oldSize, isSet(fs, "old-size")
	var raw []byte
	if file == "-" {
		raw, err = io.ReadAll(e.stdin)
	} else {
		if err := checkPath("proof file", file, true); err != nil {
			return err
		}
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return usageErr("check-proof: %v", err)
	}

	res := checkJSON{SizeBound: trusted.SizeKnown}
	p, err := audit.DecodeProof(raw)
	if err == nil {
		res.Type = p.Type
		res.Statement, err = p.Check(trusted)
	}
	if errors.Is(err, audit.ErrOldForInclusion) {
		return usageErr("check-proof: --old-root/--old-size are for consistency proofs")
	}
	if err != nil {
		res.Error = err.Error()
		if *asJSON {
			writeJSON(e.stdout, res)
		} else {
			fmt.Fprintf(e.stdout, "INVALID: %v\n", err)
		}
		return integrityErr(fmt.Errorf("check-proof: %w", err))
	}
	res.OK = true
	if *asJSON {
		return writeJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", res.Statement)
	if !trusted.SizeKnown {
		fmt.Fprintln(e.stdout, "note: the tree size is the proof's own; pass --size or --checkpoint to bind it")
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/audit/boltaudit"
)

func init() {
	register("verify", "check every event hash and link, Merkle node and projection (and a signed checkpoint)", verify)
}

func verify(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "verify", `Verify a ledger without trusting the server that wrote it:
  1. every event's hash against its stored Merkle leaf, every prev link, the head;
  2. every stored Merkle node against its children;
  3. the projections: refolded from the log in a scratch file and compared key by key;
  4. with --checkpoint: that the ledger extends the signed checkpoint (same root over its
     first events, recomputed from the events, and a valid RFC 9162 consistency proof).
Reads in short transactions, so agents keep writing. Exit 0 ok, 1 integrity failure
(the first bad seq and the problem are reported), 2 usage or I/O error.`)
	lf := addLedgerFlags(e, fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cpPath := fs.String("checkpoint", "", "signed checkpoint the ledger must extend")
	vkeyPath := fs.String("vkey", "", "verifier key of the checkpoint's signer (with --checkpoint)")
	noProj := fs.Bool("no-projections", false, "skip the projection check")
	scratch := fs.String("scratch", "", "directory for the scratch projections (default: the system temp dir)")
	chunk := fs.Uint64("chunk", 1<<12, "events per read transaction (and per commit of the refold)")
	if done, err := parse(e, fs, args); done {
		return err
	}
	if *chunk == 0 {
		return usageErr("verify: --chunk must be positive")
	}
	if *vkeyPath != "" && *cpPath == "" {
		return usageErr("verify: --vkey without --checkpoint")
	}
	opts := boltaudit.Options{Chunk: *chunk, Projections: !*noProj, ScratchDir: *scratch}
	if *cpPath != "" {
		c, err := openCheckpoint("verify", *cpPath, *vkeyPath)
		if err != nil {
			return err
		}
		opts.Checkpoint = &c
	}
	if *scratch != "" {
		if fi, err := os.Stat(*scratch); err != nil || !fi.IsDir() {
			return usageErr("verify: --scratch %s is not a directory", *scratch)
		}
	}
	l, err := lf.open(true)
	if err != nil {
		return err
	}
	defer l.Close()
	boundMemory()

	opts.Progress = newProgress(e.stderr, "verify").report
	out, err := boltaudit.Verify(ctx, l, opts)
	if err != nil {
		return ioErr("verify", err)
	}
	if *asJSON {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		printVerify(e.stdout, out)
	}
	if !out.OK {
		return integrityErr(fmt.Errorf("verify: %w", out.Problem))
	}
	return nil
}

func printVerify(w io.Writer, out *audit.Report) {
	if p := out.Problem; !out.OK {
		fmt.Fprintf(w, "FAIL %v\n", p)
		if p.Want != nil && p.Got != nil {
			fmt.Fprintf(w, "  want %s\n  got  %s\n", p.Want, p.Got)
		}
		return
	}
	fmt.Fprintf(w, "ok: %d events, head %s, root %s, %d Merkle nodes (%.0f events/s)\n",
		out.Size, out.Head, out.Root, out.Nodes, out.Timing.ChainEventsPerS)
	if p := out.Projections; p != nil {
		if p.Checked {
			fmt.Fprintf(w, "projections: match a refold of the log (%d keys, at seq %d, fingerprint %s)\n", p.ComparedKeys, p.AppliedSeq, p.Fingerprint)
		} else {
			fmt.Fprintf(w, "projections: not compared: %s\n", p.Note)
		}
	}
	if c := out.Checkpoint; c != nil {
		fmt.Fprintf(w, "checkpoint: %s size %d root %s: the ledger extends it\n", c.Origin, c.Size, c.Root)
	}
}

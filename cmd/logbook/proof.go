package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

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

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// passExit keeps an exit error raised inside a transaction, and makes any
// other error an I/O error.
func passExit(cmd string, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return ioErr(cmd, err)
}

// proofFile is a proof as prove writes it and check-proof reads it. Hashes
// are lower-case hex, the event is its stored bytes in base64. The file is
// canonical: exactly the indented JSON of this struct and a newline, so any
// edit that is not a valid proof fails to read.
type proofFile struct {
	Type string `json:"type"` // "inclusion" or "consistency"

	// inclusion: the event seq (leaf index seq-1) in the tree of tree_size
	// leaves with root root.
	Seq       uint64 `json:"seq,omitempty"`
	LeafIndex uint64 `json:"leaf_index,omitempty"`
	LeafHash  string `json:"leaf_hash,omitempty"`
	Event     []byte `json:"event,omitempty"`

	// consistency: the tree of old_size leaves with root old_root is a prefix
	// of the tree of tree_size leaves with root root.
	OldSize uint64 `json:"old_size,omitempty"`
	OldRoot string `json:"old_root,omitempty"`

	TreeSize uint64   `json:"tree_size"`
	Root     string   `json:"root"`
	Path     []string `json:"path"` // RFC 9162 audit path or consistency proof, in order
}

const (
	proofInclusion   = "inclusion"
	proofConsistency = "consistency"
)

func (p *proofFile) encode() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	return append(b, '\n'), err
}

func hexHashes(hs []ledger.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
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
	if kind != proofInclusion && kind != proofConsistency {
		return usageErr("prove: unknown proof %q: want inclusion or consistency", kind)
	}
	fs, lf, pf := proveFlags(e, "prove "+kind, summary)
	seq, size, old, newSize, out := pf.seq, pf.size, pf.old, pf.newSize, pf.out
	if done, err := parse(e, fs, args); done {
		return err
	}
	switch {
	case kind == proofInclusion && (isSet(fs, "old") || isSet(fs, "new")):
		return usageErr("prove inclusion: --old/--new are for consistency proofs")
	case kind == proofConsistency && (isSet(fs, "seq") || isSet(fs, "size")):
		return usageErr("prove consistency: --seq/--size are for inclusion proofs")
	case kind == proofInclusion && *seq == 0:
		return usageErr("prove inclusion: --seq is required (seqs start at 1)")
	case kind == proofConsistency && *old == 0:
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
	p := proofFile{Type: kind}
	err = l.View(func(tx *boltstore.Tx) error {
		head := tx.Head().Seq
		n := head
		if isSet(fs, "size") || isSet(fs, "new") {
			n = max(*size, *newSize)
		}
		if n > head {
			return usageErr("prove: tree size %d is beyond the head %d", n, head)
		}
		root, err := tx.Root(n)
		if err != nil {
			return err
		}
		p.TreeSize, p.Root = n, root.String()
		var path []ledger.Hash
		if kind == proofInclusion {
			if *seq > n {
				return usageErr("prove inclusion: --seq %d is beyond the tree size %d", *seq, n)
			}
			r, err := tx.Event(*seq)
			if err != nil {
				return err
			}
			p.Seq, p.LeafIndex, p.LeafHash = *seq, *seq-1, r.Hash.String()
			p.Event = append([]byte(nil), r.Raw...)
			path, err = tx.InclusionProof(*seq, n)
			if err != nil {
				return err
			}
		} else {
			if *old > n {
				return usageErr("prove consistency: --old %d is beyond the new size %d", *old, n)
			}
			oldRoot, err := tx.Root(*old)
			if err != nil {
				return err
			}
			p.OldSize, p.OldRoot = *old, oldRoot.String()
			if path, err = tx.ConsistencyProof(*old, n); err != nil {
				return err
			}
		}
		p.Path = hexHashes(path)
		return nil
	})
	if err != nil {
		return passExit("prove", err)
	}
	b, err := p.encode()
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
	var trusted struct {
		root, oldRoot   ledger.Hash
		size, oldSize   uint64
		haveOld, sizeOK bool
	}
	switch {
	case *cpPath != "" && (*rootHex != "" || isSet(fs, "size")):
		return usageErr("check-proof: --checkpoint and --root/--size exclude each other")
	case *cpPath != "":
		cp, err := openCheckpoint("check-proof", *cpPath, *vkeyPath)
		if err != nil {
			return err
		}
		trusted.root, trusted.size, trusted.sizeOK = cp.Root, cp.Size, true
	case *rootHex == "":
		return usageErr("check-proof: --root (or --checkpoint) is required: a proof is only as good as the root it is checked against")
	default:
		h, err := ledger.ParseHash(*rootHex)
		if err != nil {
			return usageErr("check-proof: --root: %v", err)
		}
		trusted.root = h
		if isSet(fs, "size") {
			trusted.size, trusted.sizeOK = *size, true
		}
	}
	if *oldRootHex != "" {
		h, err := ledger.ParseHash(*oldRootHex)
		if err != nil {
			return usageErr("check-proof: --old-root: %v", err)
		}
		trusted.oldRoot, trusted.haveOld = h, true
	}
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

	res := checkJSON{SizeBound: trusted.sizeOK}
	fail := func(err error) error {
		res.OK, res.Error = false, err.Error()
		if *asJSON {
			writeJSON(e.stdout, res)
		} else {
			fmt.Fprintf(e.stdout, "INVALID: %v\n", err)
		}
		return integrityErr(fmt.Errorf("check-proof: %w", err))
	}
	p, err := readProof(raw)
	if err != nil {
		return fail(err)
	}
	res.Type = p.Type
	if trusted.sizeOK && p.TreeSize != trusted.size {
		return fail(fmt.Errorf("the proof is for a tree of %d events, the trusted root is of %d", p.TreeSize, trusted.size))
	}
	if p.Root != trusted.root.String() {
		return fail(fmt.Errorf("the proof is for root %s, not the trusted root %s", p.Root, trusted.root))
	}
	switch p.Type {
	case proofInclusion:
		if isSet(fs, "old-size") || trusted.haveOld {
			return usageErr("check-proof: --old-root/--old-size are for consistency proofs")
		}
		leaf, _ := ledger.ParseHash(p.LeafHash)
		if err := checkEvent(p, leaf); err != nil {
			return fail(err)
		}
		if err := ledger.VerifyInclusion(leaf, p.LeafIndex, p.TreeSize, mustHashes(p.Path), trusted.root); err != nil {
			return fail(err)
		}
		res.Statement = fmt.Sprintf("event seq %d (hash %s) is in the log of %d events with root %s", p.Seq, p.LeafHash, p.TreeSize, p.Root)
	case proofConsistency:
		oldRoot, _ := ledger.ParseHash(p.OldRoot)
		if trusted.haveOld && oldRoot != trusted.oldRoot {
			return fail(fmt.Errorf("the proof starts from root %s, not the trusted old root %s", oldRoot, trusted.oldRoot))
		}
		if isSet(fs, "old-size") && p.OldSize != *oldSize {
			return fail(fmt.Errorf("the proof starts from a tree of %d events, the trusted old size is %d", p.OldSize, *oldSize))
		}
		if err := ledger.VerifyConsistency(p.OldSize, p.TreeSize, oldRoot, trusted.root, mustHashes(p.Path)); err != nil {
			return fail(err)
		}
		from := "as stated by the proof"
		if trusted.haveOld {
			from = "trusted"
		}
		res.Statement = fmt.Sprintf("the log of %d events with root %s (%s) is a prefix of the log of %d events with root %s", p.OldSize, p.OldRoot, from, p.TreeSize, p.Root)
	}
	res.OK = true
	if *asJSON {
		return writeJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", res.Statement)
	if !trusted.sizeOK {
		fmt.Fprintln(e.stdout, "note: the tree size is the proof's own; pass --size or --checkpoint to bind it")
	}
	return nil
}

// readProof parses a proof file strictly: known fields only, hashes in
// lower-case hex, fields consistent with the type, and the canonical
// encoding byte for byte.
func readProof(raw []byte) (*proofFile, error) {
	var p proofFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("malformed proof: %v", err)
	}
	if canon, err := p.encode(); err != nil || !bytes.Equal(canon, raw) {
		return nil, errors.New("malformed proof: not the canonical encoding logbook prove writes (was it edited?)")
	}
	hashes := append([]string{p.Root}, p.Path...)
	switch p.Type {
	case proofInclusion:
		if p.Seq == 0 || p.LeafIndex != p.Seq-1 || p.OldSize != 0 || p.OldRoot != "" || len(p.Event) == 0 {
			return nil, errors.New("malformed proof: an inclusion proof needs seq >= 1, leaf_index = seq-1 and the event, and no old_size/old_root")
		}
		hashes = append(hashes, p.LeafHash)
	case proofConsistency:
		if p.OldSize == 0 || p.Seq != 0 || p.LeafIndex != 0 || p.LeafHash != "" || p.Event != nil {
			return nil, errors.New("malformed proof: a consistency proof needs old_size >= 1, and no seq/leaf/event")
		}
		hashes = append(hashes, p.OldRoot)
	default:
		return nil, fmt.Errorf("malformed proof: unknown type %q", p.Type)
	}
	for _, h := range hashes {
		if v, err := ledger.ParseHash(h); err != nil || v.String() != h {
			return nil, fmt.Errorf("malformed proof: %q is not a lower-case hex SHA-256", h)
		}
	}
	return &p, nil
}

// checkEvent checks that the proof's event bytes are the leaf and the
// event at the proof's seq.
func checkEvent(p *proofFile, leaf ledger.Hash) error {
	if got := ledger.LeafHash(p.Event); got != leaf {
		return fmt.Errorf("the event's bytes hash to %s, not the proof's leaf %s", got, leaf)
	}
	ev, err := ledger.DecodeEvent(p.Event)
	if err != nil {
		return fmt.Errorf("the proof's event: %w", err)
	}
	if ev.Seq != p.Seq {
		return fmt.Errorf("the proof's event is seq %d, not %d", ev.Seq, p.Seq)
	}
	return nil
}

// mustHashes parses hashes readProof already checked.
func mustHashes(hs []string) []ledger.Hash {
	out := make([]ledger.Hash, len(hs))
	for i, h := range hs {
		out[i], _ = ledger.ParseHash(h)
	}
	return out
}

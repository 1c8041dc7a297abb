package main

import (
	"context"
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/ledger/jetstream"
)

func init() {
	register("migrate", "copy a file ledger into a new JetStream stream, checking chain and root", migrate)
}

// migrateJSON is migrate's --json output.
type migrateJSON struct {
	Stream string      `json:"stream"`
	Size   uint64      `json:"size"`
	Head   ledger.Hash `json:"head"`
	Root   ledger.Hash `json:"root"`
}

// migrateBatch is how many events one append to the stream carries.
const migrateBatch = 256

func migrate(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "migrate", `Copy every event of a file ledger, byte for byte, into a new, empty JetStream stream
(created file-backed, replicated, deny-delete, deny-purge, without limits), then read the
whole stream back and check it is one unbroken chain whose head and Merkle root equal the
file's. Stop writers to the file first: events appended after the copy starts are not copied.
The servers must run with jetstream { sync_interval: always }.`)
	from := fs.String("from", "", "the ledger file to copy (required)")
	to := fs.String("to", "", "NATS servers: nats://HOST:PORT[,nats://HOST:PORT…] (required)")
	nf := addNATSFlags(e, fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if done, err := parse(e, fs, args); done {
		return err
	}
	if *from == "" || !isNATS(*to) {
		return usageErr("migrate: --from FILE and --to nats://HOST:PORT are required")
	}
	if err := checkPath("--from", *from, true); err != nil {
		return err
	}
	src, err := boltstore.Open(*from, boltstore.Options{ReadOnly: true})
	if err != nil {
		return ioErr("migrate", err)
	}
	defer src.Close()
	rep, closeRep, err := nf.openReplica(ctx, "migrate", *to, e.stderr)
	if err != nil {
		return err
	}
	defer closeRep()
	info, err := rep.Info(ctx)
	if err != nil {
		return ioErr("migrate", err)
	}
	if info.State.LastSeq != 0 {
		return usageErr("migrate: stream %s already holds %d events; migrate copies into a new, empty stream", *nf.stream, info.State.LastSeq)
	}
	var head ledger.Head
	var root ledger.Hash
	if err := src.View(func(tx *boltstore.Tx) error {
		head = tx.Head()
		if head.Seq == 0 {
			return nil
		}
		root, err = tx.Root(head.Seq)
		return err
	}); err != nil {
		return ioErr("migrate", err)
	}
	progress := newProgress(e.stderr, "migrate: copy")
	for seq := uint64(1); seq <= head.Seq; {
		end := min(seq+migrateBatch, head.Seq+1)
		var batch [][]byte
		if err := src.View(func(tx *boltstore.Tx) error {
			return tx.Scan(seq, end, func(r ledger.Record) error {
				batch = append(batch, append([]byte(nil), r.Raw...))
				return nil
			})
		}); err != nil {
			return ioErr("migrate", err)
		}
		if uint64(len(batch)) != end-seq {
			return integrityErr(fmt.Errorf("migrate: the file holds %d of events %d..%d", len(batch), seq, end-1))
		}
		// Appending at seq-1 only: nothing else may have written the stream.
		if err := rep.Append(ledger.Head{Seq: seq - 1}, batch); err != nil {
			return ioErr("migrate", fmt.Errorf("append events %d..%d: %w", seq, end-1, err))
		}
		progress.report(end-1, head.Seq)
		seq = end
	}
	res, err := checkStream(rep, head.Seq)
	if err != nil {
		return err
	}
	res.Stream = *nf.stream
	if res.Head != head.Hash || res.Root != root {
		return integrityErr(fmt.Errorf("migrate: stream %s's head %v and root %v differ from the file's %v and %v", res.Stream, res.Head, res.Root, head.Hash, root))
	}
	if *asJSON {
		return writeJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "migrated %d events into stream %s\nhead %v\nroot %v (identical to the file's)\n", res.Size, res.Stream, res.Head, res.Root)
	return nil
}

// checkStream reads the whole stream back, independently of the copy:
// events 1..size in order, each linking to the one before, and computes
// the head and the RFC 9162 root of the log it holds.
func checkStream(rep *jetstream.Replica, size uint64) (migrateJSON, error) {
	var res migrateJSON
	var tree ledger.Frontier
	err := rep.Scan(1, func(seq uint64, raw []byte) error {
		r, err := ledger.DecodeRecord(raw)
		switch {
		case err != nil:
			return &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemMalformed, Detail: err.Error()}
		case r.Seq != seq:
			return &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemSeq, Detail: fmt.Sprintf("the event claims seq %d", r.Seq)}
		case r.Prev != res.Head:
			return &ledger.IntegrityError{Seq: seq, Problem: ledger.ProblemLink, Want: res.Head, Got: r.Prev}
		}
		res.Head = ledger.LeafHash(raw)
		res.Size = seq
		tree.Append(res.Head)
		return nil
	})
	if err != nil {
		return res, ioErr("migrate: check the stream", err)
	}
	if res.Size != size {
		return res, integrityErr(fmt.Errorf("migrate: the stream holds %d events, the file %d", res.Size, size))
	}
	if size > 0 {
		res.Root = tree.Root()
	}
	return res, nil
}

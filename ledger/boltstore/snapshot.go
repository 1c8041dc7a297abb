package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// SnapshotOptions tune Store.Snapshot.
type SnapshotOptions struct {
	Chunk    uint64                   // events per read transaction; default 16384
	Progress func(done, total uint64) // called after each chunk, if set
}

// SnapshotReport is what Snapshot copied.
type SnapshotReport struct {
	Size uint64      // events in the copy: seq 1..Size
	Head ledger.Hash // hash of event Size
	// Locked is how long the final read transaction held the source file:
	// the longest any writer waited for the snapshot.
	Locked time.Duration
}

// Snapshot writes a copy of the log, as it stands at some moment during the
// call, to the new file dst (which must not exist), without stopping writers
// for long. Events and Merkle nodes never change once written, so they are
// copied in chunks of short read transactions, each reading what the log
// holds by then; one last read transaction copies what was appended
// meanwhile and the head, so the copy is a consistent log. Spaces are not
// copied: they change all the time and can be large, so copying them would
// hold every writer for as long as that takes; they are state derived from
// the log, which the copy's owner derives again. The copy is in the source's
// file format (the same stored nodes). The file appears at dst only
// once it is complete and synced. Errors are I/O (ErrDiskFull when there
// was no room for the copy), or ErrDamaged for an event or node the
// source's head covers that it does not hold; the source is never written.
func (l *Store) Snapshot(ctx context.Context, dst string, opts SnapshotOptions) (rep SnapshotReport, err error) {
	// No room for the copy (its file system full, or the file may grow no
	// more) is ErrDiskFull, as it is for a commit.
	defer func() { err = diskFull(err) }()
	if opts.Chunk == 0 {
		opts.Chunk = 1 << 14
	}
	opts.Chunk = min(opts.Chunk, maxSeq) // as Verify's: no wrapping around

	if _, err := os.Lstat(dst); err == nil {
		return rep, fmt.Errorf("snapshot to %s: %w", dst, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("snapshot to %s: %w", dst, err)
	}
	// The copy is in the source's format: the same nodes, never converted.
	var format uint64
	if err := l.View(func(tx *Tx) error { format = tx.Format(); return nil }); err != nil {
		return rep, fmt.Errorf("snapshot: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), tempPrefix(dst)+"*")
	if err != nil {
		return rep, fmt.Errorf("snapshot: %w", err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmpPath)
		}
	}()
	db, err := bolt.Open(tmpPath, 0o600, &bolt.Options{NoSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return rep, fmt.Errorf("snapshot: open copy: %w", err)
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	if err := db.Update(initFile(format)); err != nil {
		return rep, fmt.Errorf("snapshot: init copy: %w", err)
	}

	c := &snapshotCopier{format: format}
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		var head uint64
		var chunk []ledger.Node
		var events [][]byte
		err := l.View(func(tx *Tx) error {
			head = tx.Head().Seq
			var err error
			events, chunk, err = c.read(tx, min(c.copied+opts.Chunk, head))
			return err
		})
		if err != nil {
			return rep, fmt.Errorf("snapshot: read: %w", err)
		}
		if err := db.Update(func(btx *bolt.Tx) error { return c.write(btx, events, chunk) }); err != nil {
			return rep, fmt.Errorf("snapshot: write: %w", err)
		}
		if opts.Progress != nil {
			opts.Progress(c.copied, head)
		}
		if head-c.copied <= opts.Chunk {
			break
		}
	}

	// The rest and the head in one read transaction. The copy is written
	// inside it because bbolt keeps the source's bytes by reference until the
	// copy commits; the copy is not synced until later.
	err = l.View(func(tx *Tx) error {
		start := time.Now()
		defer func() { rep.Locked = time.Since(start) }()
		head := tx.Head()
		events, nodes, err := c.read(tx, head.Seq)
		if err != nil {
			return err
		}
		rep.Size, rep.Head = head.Seq, head.Hash
		return db.Update(func(btx *bolt.Tx) error {
			if err := c.write(btx, events, nodes); err != nil {
				return err
			}
			if err := copyBucket(btx.Bucket(bucketMeta), tx.btx.Bucket(bucketMeta)); err != nil {
				return fmt.Errorf("meta: %w", err)
			}
			return nil
		})
	})
	if err != nil {
		return rep, fmt.Errorf("snapshot: %w", err)
	}
	if opts.Progress != nil {
		opts.Progress(rep.Size, rep.Size)
	}
	if err := db.Sync(); err != nil {
		return rep, fmt.Errorf("snapshot: sync: %w", err)
	}
	err = db.Close()
	db = nil
	if err != nil {
		return rep, fmt.Errorf("snapshot: close: %w", err)
	}
	if err := os.Rename(tmpPath, dst); err != nil {
		return rep, fmt.Errorf("snapshot: %w", err)
	}
	ok = true
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		d.Sync()
		d.Close()
	}
	return rep, nil
}

// snapshotCopier remembers how much of the log and of each level of the
// Merkle tree is in the copy.
type snapshotCopier struct {
	format uint64   // the source's, and so the copy's
	copied uint64   // events 1..copied are in the copy
	next   []uint64 // next[level]: the first node index at level not yet copied (formats 1 and 2)
}

// read returns copies of the events (c.copied, end] and of the Merkle nodes
// they complete.
func (c *snapshotCopier) read(tx *Tx, end uint64) ([][]byte, []ledger.Node, error) {
	if end <= c.copied {
		return nil, nil, nil
	}
	events := make([][]byte, 0, end-c.copied)
	cur := tx.events.Cursor()
	seq := c.copied + 1
	for k, v := cur.Seek(u64(seq)); seq <= end; k, v = cur.Next() {
		if !keyIs(k, seq) {
			return nil, nil, tx.missing(seq)
		}
		events = append(events, append([]byte(nil), v...))
		seq++
	}
	if tx.nodes != nil {
		nodes, err := c.readNodes(tx, end)
		return events, nodes, err
	}
	var nodes []ledger.Node
	for level := tx.base; end>>level > 0; level++ {
		for uint(len(c.next)) <= level {
			c.next = append(c.next, 0)
		}
		b, err := tx.level(level, false)
		if err != nil {
			return nil, nil, err
		}
		cur := b.Cursor()
		i := c.next[level]
		for k, v := cur.Seek(u64(i)); i < end>>level; k, v = cur.Next() {
			if !keyIs(k, i) || len(v) != len(ledger.Hash{}) {
				return nil, nil, fmt.Errorf("%w: merkle node %d/%d is missing or not 32 bytes", ErrDamaged, level, i)
			}
			var h ledger.Hash
			copy(h[:], v)
			nodes = append(nodes, ledger.Node{Level: level, Index: i, Hash: h})
			i++
		}
	}
	return events, nodes, nil
}

// readNodes returns copies of the nodes that the events (c.copied, end]
// complete, from a format-3 file: one run of keys, in the order they were
// completed, each checked to be the one expected there.
func (c *snapshotCopier) readNodes(tx *Tx, end uint64) ([]ledger.Node, error) {
	var nodes []ledger.Node
	cur := tx.nodes.Cursor()
	group := uint64(1) << tx.base
	first := (c.copied/group + 1) * group // the first seq past copied that completes a node
	if first > end {
		return nil, nil
	}
	k, v := cur.Seek(u64(first))
	for seq := first; seq <= end; seq += group {
		// seq completes the node ending there at each level whose size
		// divides it.
		for level := tx.base; seq&(1<<level-1) == 0; level++ {
			index := seq>>level - 1
			if l, i, ok := nodeOfKey(k); !ok || l != level || i != index || len(v) != len(ledger.Hash{}) {
				return nil, fmt.Errorf("%w: merkle node %d/%d is missing or out of place", ErrDamaged, level, index)
			}
			var h ledger.Hash
			copy(h[:], v)
			nodes = append(nodes, ledger.Node{Level: level, Index: index, Hash: h})
			k, v = cur.Next()
		}
	}
	return nodes, nil
}

// write stores what read returned and advances the copier.
func (c *snapshotCopier) write(btx *bolt.Tx, events [][]byte, nodes []ledger.Node) error {
	eb := btx.Bucket(bucketEvents)
	eb.FillPercent = 1
	for i, raw := range events {
		if err := eb.Put(u64(c.copied+1+uint64(i)), raw); err != nil {
			return err
		}
	}
	merkle := btx.Bucket(bucketMerkle)
	if c.format >= 3 {
		// In the order read returned them: the order of their keys.
		merkle.FillPercent = 1
		for _, n := range nodes {
			k, ok := nodeKey(n.Level, n.Index)
			if !ok {
				return fmt.Errorf("merkle node %d/%d: no such node", n.Level, n.Index)
			}
			if err := merkle.Put(k, append([]byte(nil), n.Hash[:]...)); err != nil {
				return err
			}
		}
		c.copied += uint64(len(events))
		return nil
	}
	for _, n := range nodes {
		b, err := merkle.CreateBucketIfNotExists([]byte{byte(n.Level)})
		if err != nil {
			return err
		}
		b.FillPercent = 1
		if err := b.Put(u64(n.Index), append([]byte(nil), n.Hash[:]...)); err != nil {
			return err
		}
		c.next[n.Level] = n.Index + 1
	}
	c.copied += uint64(len(events))
	return nil
}

// copyBucket copies every key and nested bucket of src into dst, replacing
// what dst holds under the same keys.
func copyBucket(dst, src *bolt.Bucket) error {
	if src == nil {
		return nil
	}
	dst.FillPercent = 1
	return src.ForEach(func(k, v []byte) error {
		if v != nil {
			return dst.Put(k, v)
		}
		child, err := dst.CreateBucketIfNotExists(k)
		if err != nil {
			return err
		}
		return copyBucket(child, src.Bucket(k))
	})
}

// tempPrefix names the hidden files a snapshot to dst is built in. The
// binary's dst is always a temporary name of server.Snapshot's, unique per
// run and carrying its process's pid, so a copy a killed run left is
// removed there (RemoveDeadTemps), not here.
func tempPrefix(dst string) string { return "." + filepath.Base(dst) + ".tmp-" }

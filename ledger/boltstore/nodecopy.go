package boltstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Store with a Replica keeps a copy of a replicated log that other nodes
// append to: written by a Store without it, the file would take events the
// log never gets, acknowledged to their callers, and fork from it (the
// next node start refuses the copy, and what was acknowledged meanwhile is
// in no one's ledger). So a node marks its file, durably and before its
// first commit, with a file beside it (<file>.stream) naming the log
// (Replica.Name); Open, and every writer each time it takes the file's
// lock (lockedNodeCopy), refuses to write a marked file without a Replica
// (ErrNodeCopy) — readers, and a Store that appends nothing
// (Options.NoAppend, a rebuild of the projections), are unaffected — and
// refuses a node whose Replica names another log than the marker. The
// marker is never removed by a logbook: a snapshot of the file is a plain
// ledger, to use alone. (It is beside the file, not in it: the format is
// unchanged, and a logbook older than the marker does not know it.)

// streamSuffix names the marker of a replicated log's local copy.
const streamSuffix = ".stream"

// streamMarker is the marker path of the ledger file at path (Beside:
// every name of the file shares it).
func streamMarker(path string) string { return Beside(path, streamSuffix) }

// ErrNodeCopy: the file is a replicated log's local copy (a node's,
// marked <file>.stream), and Open was asked to write it without that
// log's Replica: it would fork from the log. Nothing was written.
var ErrNodeCopy = errors.New("the ledger file is a node's local copy of a replicated log")

// ErrNoAppend: Tx.Append or Tx.Ingest on a Store opened with
// Options.NoAppend. The commit is rolled back.
var ErrNoAppend = errors.New("this ledger was opened to append no events (Options.NoAppend)")

// nodeCopyOf is the name of the replicated log whose copy the file at path
// is, from its marker; ok is false if it has none.
func nodeCopyOf(path string) (name string, ok bool, err error) {
	f, err := openBeside(streamMarker(path), os.O_RDONLY)
	if err != nil || f == nil {
		return "", false, err
	}
	defer f.Close()
	// A name is a few dozen bytes: what is past 4 KiB is not one.
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", true, err
	}
	return strings.TrimSpace(string(b)), true, nil
}

// checkNodeCopy refuses to open the file at path as opts ask if that could
// fork a node's copy from its log: written without a Replica, or as the
// copy of another log than its marker names. It writes nothing.
func checkNodeCopy(path string, opts Options) error {
	switch {
	case opts.ReadOnly || (opts.Replica == nil && opts.NoAppend):
		return nil
	case opts.Replica != nil:
		return CheckNodeCopy(path, opts.Replica.Name())
	}
	return CheckNodeCopy(path, "")
}

// CheckNodeCopy is Open's check of the file at path for a writer: as the
// local copy of the replicated log named stream, or alone if stream is "".
// A node calls it before it connects to the log (which may make it), so
// that nothing is changed anywhere for a copy refused. It writes nothing.
func CheckNodeCopy(path, stream string) error {
	name, ok, err := nodeCopyOf(path)
	switch {
	case err != nil:
		return fmt.Errorf("%w: its marker: %v", ErrNodeCopy, err)
	case !ok:
		return nil
	case stream == "":
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s was the local copy of stream %s (a logbook server --store node's; %s says so) and is gone: "+
				"a ledger written alone there would be taken for it; if no node uses it any more, remove %s", ErrNodeCopy, path, quoted(name), streamMarker(path), streamMarker(path))
		}
		return fmt.Errorf("%w: %s is the local copy of stream %s (a logbook server --store node's; %s says so): written alone it would fork from the stream; "+
			"start it with --store … --stream %s, or take a copy to use alone: logbook snapshot --db %s --out NEW", ErrNodeCopy, path, quoted(name), streamMarker(path), quoted(name), path)
	case name != stream:
		return fmt.Errorf("%w: %s is the local copy of stream %s (%s says so), not of stream %s: nothing was changed; start it with --stream %s, "+
			"or, if stream %s holds its log (logbook migrate), take a copy for it: logbook snapshot --db %s --out NEW, and start the node on NEW",
			ErrNodeCopy, path, quoted(name), streamMarker(path), quoted(stream), quoted(name), quoted(stream), path)
	}
	return nil
}

// quoted is a stream name as said in a message: as it is if it is one a
// stream may have (letters, digits, '-', '_'), else quoted.
func quoted(name string) string {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return strconv.Quote(name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}

// lockedNodeCopy is what a writer does about the marker once it holds the
// file's lock, every time it takes it: a node marks the file, durably and
// before it commits anything (unless it is marked already, as its log's
// copy: another log's is refused); any other writer but a NoAppend one is
// refused a marked file. Checked at Open only, a marker made afterwards
// went unseen: a logbook serve (which takes the lock for each commit)
// started on a plain ledger that a node then made its copy went on
// writing it alone once the node stopped, acknowledging calls the stream
// never got (the node's next start refused the forked copy). Under the
// lock, a node and another writer cannot both decide from a file that
// neither has marked yet.
func (l *Store) lockedNodeCopy() error {
	name := ""
	switch {
	case l.opts.Replica != nil:
		name = l.opts.Replica.Name()
	case l.opts.NoAppend:
		return nil
	}
	if err := CheckNodeCopy(l.path, name); err != nil || name == "" {
		return err
	}
	return l.markNodeCopy(name)
}

// markNodeCopy durably marks the Store's file as the local copy of the
// replicated log named name, unless it is already, and remembers whether
// it made the marker (UnmarkForked).
func (l *Store) markNodeCopy(name string) error {
	if _, ok, err := nodeCopyOf(l.path); ok || err != nil {
		return err // lockedNodeCopy, or Open, checked the name
	}
	if err := writeMarker(streamMarker(l.path), []byte(name+"\n")); err != nil {
		return err
	}
	l.markMade.Store(true)
	return nil
}

// UnmarkForked removes the marker this Store made (none: it does
// nothing), for a node whose first catch-up found the file and its log
// disagree, before any commit of the Store (the caller's to know:
// server.Serve's first Update failed on an IntegrityError, rolled back):
// the file is then left as the node found it. A plain ledger given to a
// node by mistake (logbook server --store … --db on an operator's own
// file, and a stream that is not its log) was marked for ever, and
// refused to every writer but a node, by a start that changed nothing
// else. The lock is still held (Hold): no writer sees the file between.
func (l *Store) UnmarkForked() error {
	if !l.markMade.Load() {
		return nil
	}
	if err := os.Remove(streamMarker(l.path)); err != nil {
		return err
	}
	l.markMade.Store(false)
	return syncDir(filepath.Dir(streamMarker(l.path)))
}

package boltstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// namedLog is a memLog under another name: another stream.
type namedLog struct {
	*memLog
	name string
}

func (n namedLog) Name() string { return n.name }

// nodeCopy makes a node's copy at path holding n events of log, and
// closes it.
func nodeCopy(t *testing.T, path string, log Replica, n int) {
	t.Helper()
	l, err := Open(path, Options{Create: true, Hold: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, n)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNodeCopyMarkedBeforeFirstCommit: a Store with a Replica marks its
// file (<file>.stream, naming the log) before its first commit: a marker
// that cannot be written fails the open, and no file is created, nor is an
// existing one written.
func TestNodeCopyMarkedBeforeFirstCommit(t *testing.T) {
	dir := t.TempDir()
	log := &memLog{}
	path := filepath.Join(dir, "node.db")
	// The marker's temporary file cannot be made: a directory is there.
	if err := os.Mkdir(streamMarker(path)+".tmp", 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{Create: true, Hold: true, Replica: log}); err == nil {
		t.Fatal("a node's copy was opened without its marker")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the copy was created before its marker: %v", err)
	}
	// An existing plain ledger taken as a node's copy: not written either.
	plain, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, plain, 2)
	plain.Close()
	before, _ := os.ReadFile(path)
	if _, err := Open(path, Options{Hold: true, Replica: log}); err == nil {
		t.Fatal("a node's copy was opened without its marker")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the file was written before its marker")
	}
	if err := os.Remove(streamMarker(path) + ".tmp"); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	nodeCopy(t, path, log, 3)
	if b, err := os.ReadFile(path + ".stream"); err != nil || string(b) != "mem\n" {
		t.Errorf("marker %q, %v; want the log's name", b, err)
	}
	// Opened again as the same log's copy: it stays as it is.
	nodeCopy(t, path, log, 1)
	if b, err := os.ReadFile(path + ".stream"); err != nil || string(b) != "mem\n" {
		t.Errorf("marker %q, %v; want the log's name", b, err)
	}
}

// TestNodeCopyWrittenAloneRefused: a node's copy opened to write without
// its log's Replica (any writer: plain, held, creating) or with another
// log's is refused with ErrNodeCopy, saying what to do, and left as it
// was; a reader opens it, and so does a Store that appends no events
// (NoAppend, a rebuild of the projections), which writes projections
// but no event. A snapshot of it is a plain ledger, written alone.
func TestNodeCopyWrittenAloneRefused(t *testing.T) {
	dir := t.TempDir()
	log := &memLog{}
	path := filepath.Join(dir, "node.db")
	nodeCopy(t, path, log, 5)
	before, _ := os.ReadFile(path)
	for _, o := range []Options{{}, {Create: true}, {Hold: true}, {Create: true, Hold: true, MaxBatch: 1}} {
		_, err := Open(path, o)
		if !errors.Is(err, ErrNodeCopy) || !strings.Contains(err.Error(), "local copy of stream mem") ||
			!strings.Contains(err.Error(), "--stream mem") || !strings.Contains(err.Error(), "logbook snapshot --db "+path+" --out NEW") {
			t.Errorf("%+v: %v; want ErrNodeCopy saying what to do", o, err)
		}
	}
	_, err := Open(path, Options{Hold: true, Replica: namedLog{log, "other"}})
	if !errors.Is(err, ErrNodeCopy) || !strings.Contains(err.Error(), "not of stream other") || !strings.Contains(err.Error(), "--stream mem") {
		t.Errorf("opened as another log's copy: %v; want ErrNodeCopy", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a refused open changed the file")
	}
	if b, err := os.ReadFile(path + ".stream"); err != nil || string(b) != "mem\n" {
		t.Errorf("marker %q, %v; want it as it was", b, err)
	}

	r, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only: %v", err)
	}
	var head uint64
	r.View(func(tx *Tx) error { head = tx.Head().Seq; return nil })
	r.Close()
	if head != 5 {
		t.Errorf("read-only: head %d, want 5", head)
	}

	w, err := Open(path, Options{NoAppend: true})
	if err != nil {
		t.Fatalf("NoAppend: %v", err)
	}
	if err := w.Update(func(tx *Tx) error {
		sp, err := tx.Space("test")
		if err != nil {
			return err
		}
		return sp.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Errorf("NoAppend: a projection's write: %v", err)
	}
	err = w.Update(func(tx *Tx) error {
		_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "a", Payload: []byte{0x80}})
		return err
	})
	if !errors.Is(err, ErrNoAppend) {
		t.Errorf("NoAppend: an append: %v, want ErrNoAppend", err)
	}
	snap := filepath.Join(dir, "alone.db")
	if _, err := w.Snapshot(context.Background(), snap, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	w.View(func(tx *Tx) error { head = tx.Head().Seq; return nil })
	w.Close()
	if head != 5 {
		t.Errorf("NoAppend: head %d, want 5", head)
	}
	if _, err := Open(path, Options{NoAppend: true, Replica: log}); err == nil {
		t.Error("NoAppend with a Replica was accepted")
	}

	if _, err := os.Stat(snap + ".stream"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a snapshot of a node's copy is marked: %v", err)
	}
	alone, err := Open(snap, Options{})
	if err != nil {
		t.Fatalf("a snapshot of a node's copy, written alone: %v", err)
	}
	appendN(t, alone, 1)
	alone.Close()

	// The node goes on with its copy.
	nodeCopy(t, path, log, 1)
	if rep, err := func() (VerifyReport, error) {
		l, err := Open(path, Options{ReadOnly: true})
		if err != nil {
			return VerifyReport{}, err
		}
		defer l.Close()
		return l.Verify(context.Background(), VerifyOptions{})
	}(); err != nil || rep.Size != 6 {
		t.Errorf("the node's copy: %d events, %v; want 6, verified", rep.Size, err)
	}
}

// TestNodeCopyGoneStillMarked: a node's copy moved aside leaves its
// marker, and the path is still the node's: a ledger written alone there
// is refused (the node would later take it for its copy), a new copy made
// by the node is not.
func TestNodeCopyGoneStillMarked(t *testing.T) {
	dir := t.TempDir()
	log := &memLog{}
	path := filepath.Join(dir, "node.db")
	nodeCopy(t, path, log, 2)
	if err := os.Rename(path, path+".aside"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{Create: true})
	if !errors.Is(err, ErrNodeCopy) || !strings.Contains(err.Error(), "is gone") || !strings.Contains(err.Error(), "remove "+path+".stream") {
		t.Errorf("a ledger written alone where a node's copy was: %v; want ErrNodeCopy", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused open created the file: %v", err)
	}
	nodeCopy(t, path, log, 1)
}

// TestNodeCopyMarkerBesideLinkTarget: a node's copy named through a
// symbolic link is marked beside the file the link names, so a writer
// without the log is refused by either name.
func TestNodeCopyMarkerBesideLinkTarget(t *testing.T) {
	dir := t.TempDir()
	log := &memLog{}
	real := filepath.Join(dir, "real.db")
	plain, err := Open(real, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	plain.Close()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	nodeCopy(t, link, log, 1)
	if _, err := os.Lstat(link + ".stream"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("marker beside the link: %v", err)
	}
	if b, err := os.ReadFile(real + ".stream"); err != nil || string(b) != "mem\n" {
		t.Errorf("marker beside the file %q, %v", b, err)
	}
	for _, p := range []string{real, link} {
		if _, err := Open(p, Options{}); !errors.Is(err, ErrNodeCopy) {
			t.Errorf("%s written alone: %v; want ErrNodeCopy", p, err)
		}
	}
	// A marker that is not a regular file is refused, left as it is.
	other := filepath.Join(dir, "other.db")
	nodeCopy(t, other, log, 1)
	os.Remove(other + ".stream")
	if err := os.Symlink(real+".stream", other+".stream"); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {Replica: log}} {
		if _, err := Open(other, o); !errors.Is(err, ErrNodeCopy) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%+v, a linked marker: %v; want it refused", o, err)
		}
	}
}

// TestNodeCopyMarkedWhileOpenRefused: a plain Store opened before a node
// made the file its copy (a logbook serve, which takes the lock for each
// commit, left running while a node started on its file and stopped) is
// refused its next commit, ErrNodeCopy, and the file is left as the node
// left it; its reads go on. Fails before lockedNodeCopy: the marker was
// checked at Open only, and the plain Store appended alone to the copy.
func TestNodeCopyMarkedWhileOpenRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.db")
	plain, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	// A node takes the (still empty) file as its copy, appends, stops.
	log := &memLog{}
	nodeCopy(t, path, log, 1)
	before, _ := os.ReadFile(path)
	err = plain.Update(func(tx *Tx) error {
		_, err := tx.Append(ledger.Event{Type: "test.alone"})
		return err
	})
	if !errors.Is(err, ErrNodeCopy) || !strings.Contains(err.Error(), "--stream mem") {
		t.Fatalf("a plain Store committed to a node's copy marked since it was opened: %v; want ErrNodeCopy", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the refused commit changed the file")
	}
	if err := plain.View(func(tx *Tx) error { return nil }); err != nil {
		t.Errorf("a read of the copy: %v", err)
	}
	// A node opened on the file afterwards still finds it its log's.
	nodeCopy(t, path, log, 1)
}

// TestUnmarkForked: a node's Store takes back the marker it made (its
// file a plain ledger before), and only that one: a file marked before it
// was opened stays marked.
func TestUnmarkForked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.db")
	plain, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, plain, 2)
	plain.Close()
	log := &memLog{}
	l, err := Open(path, Options{Hold: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".stream"); err != nil {
		t.Fatalf("the node's open made no marker: %v", err)
	}
	if err := l.UnmarkForked(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := os.Stat(path + ".stream"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the marker this Store made was left: %v", err)
	}
	if _, err := Open(path, Options{}); err != nil {
		t.Errorf("the plain ledger, unmarked: %v", err)
	}
	// Marked before: left as it is.
	log = &memLog{}
	path = filepath.Join(t.TempDir(), "node.db")
	nodeCopy(t, path, log, 1)
	l, err = Open(path, Options{Hold: true, Replica: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.UnmarkForked(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if b, err := os.ReadFile(path + ".stream"); err != nil || string(b) != "mem\n" {
		t.Errorf("a marker made before the Store opened: %q, %v; want it kept", b, err)
	}
}

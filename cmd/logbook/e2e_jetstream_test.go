package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// TestServersShareAStream: two `logbook server` nodes, each with its own
// local file, keep one ledger in a JetStream stream. A token issued on one
// node is honoured by the other once it followed the stream; calls on
// both land in one chain, and both local copies end identical and verify.
func TestServersShareAStream(t *testing.T) {
	url := natsServer(t)
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	dir := t.TempDir()
	nats := []string{"--store", url, "--stream", "shared", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app"}
	dbA, dbB := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	a := startHTTPServer(t, dbA, nats...)
	b := startHTTPServer(t, dbB, append(nats, "--replica-fsync")...)
	token, _ := addToken(t, dbA, "--agent", "alice")
	csA, err := connectHTTP(t, a.url, token, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	// Node B learns the token from the stream (it follows every second).
	deadline := time.Now().Add(e2eTimeout) // a hang bound: it learns it within about a second
	var csB interface{ Close() error }
	for {
		cs, err := connectHTTP(t, b.url, token, "alice", "")
		if err == nil {
			csB = cs
			for i := range 5 {
				mustOK(t, cs, "task_create", map[string]any{"title": fmt.Sprintf("on b %d", i), "project": "shared"}, nil)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node b never accepted the token issued on node a: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer csB.Close()
	for i := range 5 {
		mustOK(t, csA, "task_create", map[string]any{"title": fmt.Sprintf("on a %d", i), "project": "shared"}, nil)
	}
	// A read on b answers from b's copy, which follows the stream: it
	// shows a's calls within about a second.
	csB2, err := connectHTTP(t, b.url, token, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(e2eTimeout); ; {
		var listed struct {
			Tasks []any `json:"tasks"`
		}
		mustOK(t, csB2, "task_list", map[string]any{"project": "shared"}, &listed)
		if len(listed.Tasks) == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node b lists %d tasks, want the 10 made on both nodes", len(listed.Tasks))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if a.stop() != 0 || b.stop() != 0 {
		t.Fatalf("servers exited %d, %d:\n%s\n%s", a.code, b.code, a.stderr.String(), b.stderr.String())
	}
	// Node a catches up on its next start; here both copies are read as
	// they are: b made the last call, a is at most behind, never different.
	roots := map[string]uint64{}
	var rootB, atA string
	for _, db := range []string{dbA, dbB} {
		l, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := l.Verify(context.Background(), boltstore.VerifyOptions{})
		l.Close()
		if err != nil {
			t.Fatalf("%s: %v", db, err)
		}
		roots[db] = rep.Size
		if db == dbB {
			rootB = rep.Root.String()
		}
	}
	l, _ := boltstore.Open(dbB, boltstore.Options{ReadOnly: true})
	l.View(func(tx *boltstore.Tx) error {
		h, err := tx.Root(roots[dbA])
		atA = h.String()
		return err
	})
	l.Close()
	la, _ := boltstore.Open(dbA, boltstore.Options{ReadOnly: true})
	la.View(func(tx *boltstore.Tx) error {
		h, _ := tx.Root(roots[dbA])
		if h.String() != atA {
			t.Errorf("node a's copy (%d events, root %v) differs from node b's at the same size (%s)", roots[dbA], h, atA)
		}
		return nil
	})
	la.Close()
	if roots[dbB] < roots[dbA] || rootB == "" {
		t.Errorf("node b holds %d events, node a %d", roots[dbB], roots[dbA])
	}
}

// TestServerRefusesCopyLongerThanStream: a node whose local copy holds
// events the stream no longer has (the stream deleted and made again, or
// cut) refuses to start, naming the gap, rather than start, say it is
// healthy, and answer ERR_STORAGE to every call after a wait; one whose
// stream is gone refuses to start without making it again.
func TestServerRefusesCopyLongerThanStream(t *testing.T) {
	url := natsServer(t)
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	db := filepath.Join(t.TempDir(), "node.db")
	args := []string{"--store", url, "--stream", "gone", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app"}
	s := startHTTPServer(t, db, args...)
	addToken(t, db, "--agent", "alice")
	if s.stop() != 0 {
		t.Fatalf("server exited %d:\n%s", s.code, s.stderr.String())
	}
	js := appJetStream(t, url)
	if err := js.DeleteStream(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	// The stream is gone: it is not made again for the copy (a new, empty
	// stream was, and then the copy refused as longer).
	start := append([]string{"server", "--db", db, "--listen", "127.0.0.1:0", "--skills", e2eSkills(t)}, args...)
	r := run(t, start...)
	if r.code != 2 || !strings.Contains(r.stderr, "the stream does not exist") || !strings.Contains(r.stderr, "up to seq 1:") {
		t.Errorf("want exit 2 saying the stream is gone, got %v", r)
	}
	if _, err := js.Stream(context.Background(), "gone"); !errors.Is(err, natsjs.ErrStreamNotFound) {
		t.Errorf("the stream was made again for a copy: %v", err)
	}
	// Made again (here by a node starting with no copy), empty: the copy
	// is refused as holding events the stream does not.
	// (It served before: the test then waited for an exit that never came.)
	fresh := startHTTPServer(t, filepath.Join(t.TempDir(), "fresh.db"), args...)
	if fresh.stop() != 0 {
		t.Fatalf("server exited %d:\n%s", fresh.code, fresh.stderr.String())
	}
	r = run(t, start...)
	if r.code != 2 || !strings.Contains(r.stderr, "and the stream disagree") || !strings.Contains(r.stderr, "the stream ends at seq 0") ||
		!strings.Contains(r.stderr, "move the copy aside") || !strings.Contains(r.stderr, "migrate --from it into a new stream") {
		t.Errorf("want exit 2 naming the gap, got %v", r)
	}
}

// TestServerCopyRefusedExitsTwo: a node whose local copy cannot be opened
// (here one written unsynced before a machine restart) exits 2 saying why,
// as every server failure does; reading the copy's head first (to tell
// whether its stream may be made) returned the error as it was, a damaged
// file's exit 1, which is an auditor's answer, not a server's.
func TestServerCopyRefusedExitsTwo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "node.db")
	w := newLedger(t, db, "alice")
	w.call("task_create", map[string]any{"title": "t", "project": "p"})
	w.l.Close()
	if err := os.WriteFile(db+".unsynced", []byte("another-boot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "server", "--db", db, "--listen", "127.0.0.1:0", "--store", "nats://127.0.0.1:1", "--stream", "s")
	if r.code != 2 || !strings.Contains(r.stderr, "restarted since") {
		t.Errorf("server --store on a copy written unsynced before a restart: %s, want exit 2 saying the machine restarted", r)
	}
}

// TestServerRefusesUnusableStreams: a node whose NATS user may not append
// to the stream, or whose stream is sealed, exits 2 at start naming what
// is wrong and what to do, its stdout empty, no password in what it says,
// no local copy made. (The first started, and every call waited 30 s to
// be answered ERR_STORAGE "may have been recorded"; the second started,
// and every call was refused "the ledger could not commit".)
func TestServerRefusesUnusableStreams(t *testing.T) {
	url := natsServer(t)
	dir := t.TempDir()
	denied := runEnv(t, []string{"LOGBOOK_NATS_PASSWORD=noappend"}, "server", "--db", filepath.Join(dir, "denied.db"), "--listen", "127.0.0.1:0",
		"--store", url, "--stream", "s", "--replicas", "1", "--allow-unreplicated", "--nats-user", "noappend")
	if strings.Contains(denied.stderr, "noappend") { // the user's password
		t.Errorf("a denied user's start: %s; want no password", denied)
	}
	js := appJetStream(t, url)
	ctx := context.Background()
	cfg := natsjs.StreamConfig{Name: "sealed", Subjects: []string{"logbook.sealed.events"}, Storage: natsjs.FileStorage, Replicas: 1,
		DenyDelete: true, DenyPurge: true, AllowDirect: true, AllowAtomicPublish: true}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Sealed = true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	sealed := run(t, "server", "--db", filepath.Join(dir, "sealed.db"), "--listen", "127.0.0.1:0",
		"--store", url, "--stream", "sealed", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app")
	for _, c := range []struct {
		what string
		r    result
		want []string
	}{
		{"a user denied the stream's subject", denied, []string{`"logbook.s.events"`, "allow its user to publish to logbook.s.events"}},
		{"a sealed stream", sealed, []string{"sealed", "logbook migrate"}},
	} {
		if c.r.code != 2 || c.r.stdout != "" {
			t.Errorf("%s: %s; want exit 2, nothing on stdout", c.what, c.r)
		}
		for _, w := range c.want {
			if !strings.Contains(c.r.stderr, w) {
				t.Errorf("%s: %s; want it to say %q", c.what, c.r, w)
			}
		}
	}
	for _, db := range []string{"denied.db", "sealed.db"} {
		if _, err := os.Stat(filepath.Join(dir, db)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v; want no local copy made", db, err)
		}
	}
}

// TestServerCopyCutShortIsCreated: a node whose local copy's creation was
// cut short (an empty file, as a kill -9 right after creating it leaves)
// starts as on no file: Open creates such a file. Reading the copy's head
// first, to tell whether its stream may be made, refused it as 'not a
// logbook ledger: … is empty', so the node could not start again.
func TestServerCopyCutShortIsCreated(t *testing.T) {
	url := natsServer(t)
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	db := filepath.Join(t.TempDir(), "node.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startHTTPServer(t, db, "--store", url, "--stream", "cut", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app")
	if code := s.stop(); code != 0 {
		t.Fatalf("server exited %d:\n%s", code, s.stderr.String())
	}
}

// TestNodeCopyNotWrittenAlone: a node's local copy, its node stopped, is
// refused (exit 2, saying what to do, the file unchanged) by every command
// that would write it without the stream — serve --db, server --db without
// --store, token add --db — since what they acknowledged would be in no
// one's ledger: the copy forks, and the next --store start refuses it.
// (Each served and wrote.) Readers read it, rebuild rewrites its
// projections, a snapshot of it is a plain ledger served alone, and the
// node starts again on it.
func TestNodeCopyNotWrittenAlone(t *testing.T) {
	url := natsServer(t)
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	dir := t.TempDir()
	db := filepath.Join(dir, "node.db")
	node := []string{"--store", url, "--stream", "team", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app"}
	s := startHTTPServer(t, db, node...)
	addToken(t, db, "--agent", "alice") // through the node's admin socket
	if s.stop() != 0 {
		t.Fatalf("server exited %d:\n%s", s.code, s.stderr.String())
	}
	head := func(path string) uint64 {
		t.Helper()
		l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var seq uint64
		l.View(func(tx *boltstore.Tx) error { seq = tx.Head().Seq; return nil })
		return seq
	}
	held := head(db)
	if held == 0 {
		t.Fatal("the node's copy holds no event")
	}
	for _, args := range [][]string{
		{"serve", "--db", db, "--agent", "bob", "--skills", e2eSkills(t)},
		{"server", "--db", db, "--listen", "127.0.0.1:0", "--skills", e2eSkills(t)},
		{"token", "add", "--db", db, "--agent", "bob", "--issuer", "test-operator"},
	} {
		r := run(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, db+" is the local copy of stream team") ||
			!strings.Contains(r.stderr, "written alone it would fork from the stream") || !strings.Contains(r.stderr, "--stream team") ||
			!strings.Contains(r.stderr, "logbook snapshot --db "+db+" --out NEW") || r.stdout != "" {
			t.Errorf("%s %s: %s; want exit 2 saying it is the stream's copy and what to do", args[0], args[1], r)
		}
		if got := head(db); got != held {
			t.Fatalf("%s %s: the copy's head went from %d to %d", args[0], args[1], held, got)
		}
	}
	wantExit(t, run(t, "verify", "--db", db), 0, "verify the node's copy")
	wantExit(t, run(t, "replay", "--db", db), 0, "replay the node's copy")
	wantExit(t, run(t, "rebuild", "--db", db), 0, "rebuild the node's copy's projections")
	if got := head(db); got != held {
		t.Fatalf("rebuild: the copy's head went from %d to %d", held, got)
	}
	alone := filepath.Join(dir, "alone.db")
	wantExit(t, run(t, "snapshot", "--db", db, "--out", alone), 0, "snapshot the node's copy")
	if _, err := os.Stat(alone + ".stream"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the snapshot is marked as a node's copy: %v", err)
	}
	wantExit(t, run(t, "token", "add", "--db", alone, "--agent", "bob", "--issuer", "test-operator"), 0, "token add on the snapshot")
	if got := head(alone); got <= held {
		t.Errorf("the snapshot, written alone, holds %d events, want more than %d", got, held)
	}
	// The node starts again on its copy: it and the stream agree.
	s = startHTTPServer(t, db, node...)
	addToken(t, db, "--agent", "carol")
	if s.stop() != 0 {
		t.Fatalf("server exited %d:\n%s", s.code, s.stderr.String())
	}
	wantExit(t, run(t, "verify", "--db", db), 0, "verify the node's copy")
	// Started as another stream's copy, it is refused, and that stream is
	// not made — for a copy holding no event yet either (the node made
	// it, then refused the copy).
	empty := filepath.Join(dir, "empty.db")
	l, err := boltstore.Open(empty, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := os.WriteFile(empty+".stream", []byte("team\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, copy := range []string{db, empty} {
		held = head(copy)
		r := run(t, "server", "--db", copy, "--listen", "127.0.0.1:0", "--skills", e2eSkills(t),
			"--store", url, "--stream", "other", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app")
		if r.code != 2 || !strings.Contains(r.stderr, "is the local copy of stream team") || !strings.Contains(r.stderr, "not of stream other") {
			t.Errorf("a node started on another stream: %s; want exit 2", r)
		}
		if got := head(copy); got != held {
			t.Errorf("a node started on another stream: the copy's head went from %d to %d", held, got)
		}
	}
	js := appJetStream(t, url)
	if _, err := js.Stream(context.Background(), "other"); !errors.Is(err, natsjs.ErrStreamNotFound) {
		t.Errorf("a stream was made for a copy refused: %v", err)
	}
}

// TestServerLeavesAPlainLedgerGivenByMistake: an operator's own ledger
// given to a node by mistake (logbook server --store … --db on it, with a
// stream that is not its log) is refused, the copy and the stream
// disagreeing, and left as it was: not marked as the stream's copy, so a
// plain writer still opens it. Before, the start marked it (<file>.stream)
// for ever while saying nothing was changed, and every writer but a node
// of that stream was refused it.
func TestServerLeavesAPlainLedgerGivenByMistake(t *testing.T) {
	url := natsServer(t)
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	args := []string{"--store", url, "--stream", "team", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app"}
	// The stream exists, here made by a node starting with no copy.
	node := startHTTPServer(t, filepath.Join(t.TempDir(), "node.db"), args...)
	if node.stop() != 0 {
		t.Fatalf("server exited %d:\n%s", node.code, node.stderr.String())
	}
	db := filepath.Join(t.TempDir(), "mine.db")
	w := newLedger(t, db, "alice")
	w.call("task_create", map[string]any{"title": "t", "project": "p"})
	w.l.Close()
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, append([]string{"server", "--db", db, "--listen", "127.0.0.1:0", "--skills", e2eSkills(t)}, args...)...)
	if r.code != 2 || !strings.Contains(r.stderr, "and the stream disagree") || !strings.Contains(r.stderr, "Nothing was changed") {
		t.Fatalf("want exit 2 saying the copy and stream disagree and nothing was changed, got %v", r)
	}
	if _, err := os.Stat(db + ".stream"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plain ledger was left marked as the stream's copy: %v", err)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Error("the refused start changed the ledger file")
	}
	l, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatalf("the plain ledger, opened to write after the refused start: %v", err)
	}
	l.Close()
}

// appJetStream is a JetStream client of natsServer's APP account at url,
// closed when the test ends.
func appJetStream(t *testing.T, url string) natsjs.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo("app", "app"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

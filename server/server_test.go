package server

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/projections"
)

func openStore(t *testing.T, opts boltstore.Options) (*boltstore.Store, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "l.db")
	opts.Create = true
	l, err := boltstore.Open(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if _, err := commands.Rebuild(l, projections.RebuildOptions{}); err != nil {
		t.Fatal(err)
	}
	return l, db
}

func TestIssueRevokeList(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{})
	for _, bad := range []Issue{
		{Agent: "", Issuer: "op"},
		{Agent: " a", Issuer: "op"},
		{Agent: "a\n", Issuer: "op"},
		{Agent: "alice\u200b", Issuer: "op"}, // looks like alice
		{Agent: "ali\u200dce", Issuer: "op"}, // a joiner joining nothing: alice too
		{Agent: "\u3164", Issuer: "op"},      // a Hangul filler: blank
		{Agent: "a", Issuer: "op\u202e"},
		{Agent: strings.Repeat("x", 129), Issuer: "op"},
		{Agent: "a", Issuer: ""},
		{Agent: "a", Issuer: "op", Tools: []string{"task_create", "rm_rf"}},
	} {
		if _, _, err := IssueToken(l, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("IssueToken(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	tokA1, recA1, err := IssueToken(l, Issue{Agent: "a", Issuer: "op", Tools: []string{"task_get", "server_ping", "task_get"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tokA1, TokenPrefix) || recA1.SHA256 != TokenSHA256(tokA1) || recA1.IssuedSeq != 1 ||
		!slices.Equal(recA1.Tools, []string{"server_ping", "task_get"}) || !recA1.ReadOnly || recA1.Issuer != "op" {
		t.Errorf("issued %q %+v", tokA1, recA1)
	}
	tokA2, _, _ := IssueToken(l, Issue{Agent: "a", Issuer: "op"})
	tokB, recB, _ := IssueToken(l, Issue{Agent: "b", Issuer: "op"})
	if tokA1 == tokA2 || tokA2 == tokB {
		t.Fatal("tokens repeat")
	}
	auth := authenticate(l)
	for _, tok := range []string{tokA1, tokA2, tokB} {
		if id, err := auth(context.Background(), tok); err != nil || id.Token != TokenSHA256(tok) {
			t.Errorf("authenticate valid token: %+v %v", id, err)
		}
	}
	id, _ := auth(context.Background(), tokA1)
	if id.Agent != "a" || !id.ReadOnly || !slices.Equal(id.Tools, []string{"server_ping", "task_get"}) {
		t.Errorf("identity %+v", id)
	}
	for _, bad := range []string{"", "lbk_", tokB + "x", strings.TrimPrefix(tokB, TokenPrefix)} {
		if _, err := auth(context.Background(), bad); !errors.Is(err, mcp.ErrUnauthenticated) {
			t.Errorf("authenticate(%q): %v", bad, err)
		}
	}

	if _, err := RevokeTokens(l, Revoke{Issuer: "op"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("revoke naming nothing: %v", err)
	}
	if _, err := RevokeTokens(l, Revoke{Agent: "a", SHA256: recB.SHA256, Issuer: "op"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("revoke naming both: %v", err)
	}
	if _, err := RevokeTokens(l, Revoke{SHA256: "abc", Issuer: "op"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("revoke a malformed hash: %v", err)
	}
	revoked, err := RevokeTokens(l, Revoke{Agent: "a", Issuer: "op2"})
	if err != nil || len(revoked) != 2 || revoked[0].RevokedSeq == 0 || revoked[0].RevokedSeq == revoked[1].RevokedSeq {
		t.Fatalf("revoke agent a: %+v %v", revoked, err)
	}
	if _, err := RevokeTokens(l, Revoke{Agent: "a", Issuer: "op"}); !errors.Is(err, ErrNoToken) {
		t.Errorf("revoke again: %v, want ErrNoToken", err)
	}
	for _, tok := range []string{tokA1, tokA2} {
		if _, err := auth(context.Background(), tok); !errors.Is(err, mcp.ErrUnauthenticated) {
			t.Errorf("revoked token authenticates: %v", err)
		}
	}
	if _, err := auth(context.Background(), tokB); err != nil {
		t.Errorf("b's token was revoked with a's: %v", err)
	}
	list, err := ListTokens(l)
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %+v %v", list, err)
	}
	valid := 0
	for _, tok := range list {
		if tok.RevokedSeq == 0 {
			valid++
		}
	}
	if valid != 1 {
		t.Errorf("%d valid tokens listed, want 1", valid)
	}
	// The projection is a fold of the log: rebuilt from empty, it is the same.
	var before, after uint64
	l.View(func(tx *boltstore.Tx) error { before, _ = projections.Fingerprint(tx); return nil })
	if _, err := commands.Rebuild(l, projections.RebuildOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	l.View(func(tx *boltstore.Tx) error { after, _ = projections.Fingerprint(tx); return nil })
	if before != after {
		t.Errorf("tokens projection differs after a rebuild from the log")
	}
}

// TestRunAdminSocketAndDrain: a running server's tokens are managed through
// its admin socket (0600) while it holds the file; cancelling Run drains
// and removes the socket.
func TestRunAdminSocketAndDrain(t *testing.T) {
	l, db := openStore(t, boltstore.Options{Hold: true})
	socket := AdminSocketPath(db)
	_, stop := startRun(t, l, Options{AdminSocket: socket})
	ctx := context.Background()
	fi, err := os.Stat(socket)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v %v", fi.Mode(), err)
	}
	// The file is held: only the socket reaches it.
	if _, err := OpenTokens(db, filepath.Join(t.TempDir(), "nobody.sock")); !errors.Is(err, ErrHeld) {
		t.Errorf("OpenTokens without the server's socket: %v, want ErrHeld", err)
	}
	m, err := OpenTokens(db, socket)
	if err != nil || !m.ViaServer() {
		t.Fatalf("OpenTokens: %v", err)
	}
	tok, rec, err := m.Issue(Issue{Agent: "remote", Issuer: "op"})
	if err != nil || rec.SHA256 != TokenSHA256(tok) {
		t.Fatalf("issue through the socket: %+v %v", rec, err)
	}
	if _, _, err := m.Issue(Issue{Agent: "", Issuer: "op"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid issue through the socket: %v", err)
	}
	if _, err := authenticate(l)(ctx, tok); err != nil {
		t.Errorf("a token issued through the socket does not authenticate: %v", err)
	}
	if _, err := m.Revoke(Revoke{Agent: "nobody", Issuer: "op"}); !errors.Is(err, ErrNoToken) {
		t.Errorf("revoke nothing through the socket: %v", err)
	}
	if list, err := m.List(); err != nil || len(list) != 1 {
		t.Errorf("list through the socket: %+v %v", list, err)
	}
	m.Close()
	snap := filepath.Join(t.TempDir(), "snap.db")
	rep, ok, err := SnapshotThroughServer(db, socket, snap)
	if !ok || err != nil || rep.Size != 1 {
		t.Errorf("snapshot through the socket: %+v %v %v", rep, ok, err)
	}
	if _, err := os.Stat(snap); err != nil {
		t.Errorf("no snapshot file: %v", err)
	}
	if _, _, err := SnapshotThroughServer(db, socket, "relative.db"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a relative snapshot path: %v", err)
	}
	if _, ok, _ := SnapshotThroughServer(db, filepath.Join(t.TempDir(), "none.sock"), snap); ok {
		t.Errorf("no server, yet ok")
	}
	// Snapshot goes through the socket of the server holding the file.
	if s, err := Snapshot(ctx, db, filepath.Join(t.TempDir(), "copy.db"), SnapshotOptions{}); err != nil || s.Size != 1 {
		t.Errorf("Snapshot of a held file: %+v %v", s, err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Errorf("admin socket left behind: %v", err)
	}
}

// TestSnapshot: a snapshot of a file no server holds is a verified copy
// with its projections refolded, appears only at out, and never replaces a
// file there.
func TestSnapshot(t *testing.T) {
	l, db := openStore(t, boltstore.Options{})
	if _, _, err := IssueToken(l, Issue{Agent: "a", Issuer: "op"}); err != nil {
		t.Fatal(err)
	}
	var root ledger.Hash
	var fp uint64
	l.View(func(tx *boltstore.Tx) (err error) {
		fp, _ = projections.Fingerprint(tx)
		root, err = tx.Root(tx.Head().Seq)
		return err
	})
	l.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "snap.db")
	var copied, folded bool
	s, err := Snapshot(context.Background(), db, out, SnapshotOptions{
		Copied: func(done, total uint64) { copied = true }, Folded: func(done, total uint64) { folded = true }})
	if err != nil || s.Size != 1 || s.Root != root || !copied || !folded {
		t.Fatalf("Snapshot: %+v %v (copied %v folded %v), want 1 event, root %v", s, err, copied, folded, root)
	}
	c, err := boltstore.Open(out, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var got uint64
	c.View(func(tx *boltstore.Tx) error { got, _ = projections.Fingerprint(tx); return nil })
	c.Close()
	if got != fp {
		t.Errorf("the snapshot's projections differ from the file's")
	}
	if _, err := Snapshot(context.Background(), db, out, SnapshotOptions{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("a snapshot over an existing file: %v, want os.ErrExist", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind in the snapshot's folder: %v", entries)
	}
}

// TestAdminSocketOfAnotherLedger: token management and snapshots act only
// on the ledger they name. A socket answered by a server holding another
// file (a shared --admin-socket, a mistyped one) refuses every request,
// and nothing is issued, revoked or copied from that other ledger: a
// revoke reported done there would leave the token valid where it was
// meant to be revoked.
func TestAdminSocketOfAnotherLedger(t *testing.T) {
	held, heldDB := openStore(t, boltstore.Options{Hold: true})
	_, otherDB := openStore(t, boltstore.Options{})
	if _, _, err := IssueToken(held, Issue{Agent: "ci", Issuer: "op"}); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(t.TempDir(), "shared.sock")
	_, stop := startRun(t, held, Options{AdminSocket: socket})
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	m, err := OpenTokens(otherDB, socket)
	if err != nil {
		t.Fatalf("OpenTokens: %v", err)
	}
	defer m.Close()
	if _, err := m.Revoke(Revoke{Agent: "ci", Issuer: "op"}); !errors.Is(err, ErrOtherLedger) {
		t.Errorf("revoke through the socket of another ledger: %v, want ErrOtherLedger", err)
	}
	if _, _, err := m.Issue(Issue{Agent: "eve", Issuer: "op"}); !errors.Is(err, ErrOtherLedger) {
		t.Errorf("issue through the socket of another ledger: %v, want ErrOtherLedger", err)
	}
	if _, err := m.List(); !errors.Is(err, ErrOtherLedger) {
		t.Errorf("list through the socket of another ledger: %v, want ErrOtherLedger", err)
	}
	list, err := ListTokens(held)
	if err != nil || len(list) != 1 || list[0].RevokedSeq != 0 {
		t.Errorf("the held ledger's tokens changed: %+v %v", list, err)
	}
	snap := filepath.Join(t.TempDir(), "snap.db")
	if _, ok, err := SnapshotThroughServer(otherDB, socket, snap); !ok || !errors.Is(err, ErrOtherLedger) {
		t.Errorf("snapshot through the socket of another ledger: %v %v, want ErrOtherLedger", ok, err)
	}
	if _, err := os.Lstat(snap); !os.IsNotExist(err) {
		t.Errorf("a snapshot of the other ledger was written: %v", err)
	}
	// Named through a symbolic link, the held file is the same ledger.
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(heldDB, link); err != nil {
		t.Fatal(err)
	}
	via, err := OpenTokens(link, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer via.Close()
	if list, err := via.List(); err != nil || len(list) != 1 {
		t.Errorf("list through a link to the held file: %+v %v", list, err)
	}
}

// TestAdminSocketOfAnotherUser: the token and snapshot commands send
// nothing to an admin socket answered by a process of another user (one
// put at the path in a folder others may write: it would have been sent the
// tokens to issue and revoke, and said a revoke was done that was not):
// they refuse it, saying so. (The server here is this process, its user
// told apart as another: adminUID, ledgerOwner.)
func TestAdminSocketOfAnotherUser(t *testing.T) {
	held, heldDB := openStore(t, boltstore.Options{Hold: true})
	socket := filepath.Join(t.TempDir(), "admin.sock")
	_, stop := startRun(t, held, Options{AdminSocket: socket})
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	defer func(f func() int, g func(string) (int, bool)) { adminUID, ledgerOwner = f, g }(adminUID, ledgerOwner)
	adminUID = func() int { return os.Geteuid() + 1 }
	ledgerOwner = func(string) (int, bool) { return os.Geteuid() + 2, true }
	if m, err := OpenTokens(heldDB, socket); !errors.Is(err, errForeignAdmin) {
		if m != nil {
			m.Close()
		}
		t.Errorf("OpenTokens through another user's socket: %v, want it refused", err)
	}
	snap := filepath.Join(t.TempDir(), "snap.db")
	if _, ok, err := SnapshotThroughServer(heldDB, socket, snap); !ok || !errors.Is(err, errForeignAdmin) {
		t.Errorf("snapshot through another user's socket: %v %v, want it refused", ok, err)
	}
	if _, err := os.Lstat(snap); !os.IsNotExist(err) {
		t.Errorf("a snapshot was written: %v", err)
	}
	// A server running as the ledger file's owner is one (root managing
	// the tokens of a server run as a service's user).
	ledgerOwner = func(string) (int, bool) { return os.Geteuid(), true }
	owned, err := OpenTokens(heldDB, socket)
	if err != nil {
		t.Fatalf("OpenTokens through the ledger owner's server: %v", err)
	}
	owned.Close()
	adminUID, ledgerOwner = os.Geteuid, fileOwner
	m, err := OpenTokens(heldDB, socket)
	if err != nil {
		t.Fatalf("OpenTokens through this user's server: %v", err)
	}
	defer m.Close()
	if _, err := m.List(); err != nil {
		t.Errorf("list through this user's server: %v", err)
	}
}

// TestAdminRequestsOnlyUnicode: a request through the admin socket that
// holds a string of invalid UTF-8 is refused before it is sent, as the
// file itself would refuse it. JSON carried it as U+FFFD (attack5): token
// revoke --agent $'a\xff' revoked the tokens of agent "a\uFFFD", token add
// issued one for that agent, snapshot --out wrote elsewhere.
func TestAdminRequestsOnlyUnicode(t *testing.T) {
	held, db := openStore(t, boltstore.Options{Hold: true})
	if _, _, err := IssueToken(held, Issue{Agent: "a\uFFFD", Issuer: "op"}); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(t.TempDir(), "admin.sock")
	_, stop := startRun(t, held, Options{AdminSocket: socket})
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	m, err := OpenTokens(db, socket)
	if err != nil || !m.ViaServer() {
		t.Fatalf("OpenTokens: %v (through the server: %v)", err, m != nil && m.ViaServer())
	}
	defer m.Close()
	for name, call := range map[string]func() error{
		"revoke by agent": func() error { _, err := m.Revoke(Revoke{Agent: "a\xff", Issuer: "op"}); return err },
		"revoke, issuer":  func() error { _, err := m.Revoke(Revoke{Agent: "a\uFFFD", Issuer: "op\xff"}); return err },
		"issue":           func() error { _, _, err := m.Issue(Issue{Agent: "a\xff", Issuer: "op"}); return err },
		"issue, a tool": func() error {
			_, _, err := m.Issue(Issue{Agent: "b", Tools: []string{"task_get\xff"}, Issuer: "op"})
			return err
		},
	} {
		if err := call(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Errorf("%s: %v, want ErrInvalid: not valid UTF-8", name, err)
		}
	}
	snap := filepath.Join(t.TempDir(), "snap\xff.db")
	if _, ok, err := SnapshotThroughServer(db, socket, snap); !ok || !errors.Is(err, ErrInvalid) {
		t.Errorf("snapshot at a path of invalid UTF-8: %v %v, want ErrInvalid", ok, err)
	}
	list, err := ListTokens(held)
	if err != nil || len(list) != 1 || list[0].RevokedSeq != 0 {
		t.Errorf("the tokens changed: %+v %v", list, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(snap)); len(entries) != 0 {
		t.Errorf("the snapshot's directory holds %v", entries)
	}
}

// TestAdminSocketInUse: a server given the admin socket another live
// server answers on refuses to start, rather than take it over (and
// remove it on exit); a socket left by a dead server is replaced.
func TestAdminSocketInUse(t *testing.T) {
	first, _ := openStore(t, boltstore.Options{Hold: true})
	second, _ := openStore(t, boltstore.Options{Hold: true})
	log := slog.New(slog.DiscardHandler)
	run := func(ctx context.Context, l *boltstore.Store, socket string, ready chan net.Addr) error {
		svc, err := commands.New(l, commands.Options{Logger: log})
		if err != nil {
			return err
		}
		return Run(ctx, Options{Store: l, MCP: mcp.New(svc, mcp.Options{Logger: log}), Listen: "127.0.0.1:0",
			AdminSocket: socket, Logger: log, Ready: func(a net.Addr) { ready <- a }})
	}
	socket := filepath.Join(t.TempDir(), "admin.sock")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, first, socket, ready) }()
	<-ready
	// (Taken over, it would serve until this timeout and return nil. A
	// bound, not a measure: a second server on a loaded machine may take
	// seconds to start and be refused.)
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if err := run(sctx, second, socket, make(chan net.Addr, 1)); err == nil || !strings.Contains(err.Error(), "another process answers") {
		t.Errorf("a second server on a live admin socket: %v, want a refusal", err)
	}
	if _, err := os.Lstat(socket); err != nil {
		t.Fatalf("the first server's socket is gone: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// A socket file nobody answers on (a server killed) is replaced.
	listenUnixAt(t, socket).Close()
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- run(ctx, second, socket, ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// startRun runs Run on l with opts (Store, MCP, Listen, Logger and Ready
// filled in: a service of l, a port of its own) and returns the address
// it listens on and stop, which cancels it and returns what Run returned.
func startRun(t *testing.T, l *boltstore.Store, opts Options) (addr string, stop func() error) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	svc, err := commands.New(l, commands.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	opts.Store, opts.MCP, opts.Listen, opts.Logger = l, mcp.New(svc, mcp.Options{Logger: log}), "127.0.0.1:0", log
	opts.Ready = func(a net.Addr) { ready <- a }
	go func() { done <- Run(ctx, opts) }()
	select {
	case a := <-ready:
		addr = a.String()
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	var once sync.Once
	var runErr error
	return addr, func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
}

// TestAdminUnansweredChangeIsUnknown: a server that reads a token request
// and stops before answering (killed mid-request) leaves the change's
// outcome unknown, and the error says so; a listing, which changes
// nothing, is a plain failure. So for a snapshot, whose error points at its
// path rather than at the tokens.
func TestAdminUnansweredChangeIsUnknown(t *testing.T) {
	_, db := openStore(t, boltstore.Options{})
	socket := filepath.Join(t.TempDir(), "a.sock")
	ln := listenUnixAt(t, socket)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // read the request, then stop without a word
				bufio.NewReader(c).ReadString('\n')
				c.Close()
			}()
		}
	}()
	m, err := OpenTokens(db, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.ViaServer() {
		t.Fatal("the socket was not used")
	}
	if _, _, err := m.Issue(Issue{Agent: "ci", Issuer: "op"}); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("issue unanswered: %v; want it said unknown", err)
	}
	if _, err := m.Revoke(Revoke{Agent: "ci", Issuer: "op"}); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("revoke unanswered: %v; want it said unknown", err)
	}
	if _, err := m.List(); err == nil || strings.Contains(err.Error(), "unknown") {
		t.Errorf("list unanswered: %v; want a plain failure", err)
	}
	// A snapshot's error points at the snapshot, not at the tokens.
	out := filepath.Join(t.TempDir(), "snap.db")
	if _, ok, err := SnapshotThroughServer(db, socket, out); !ok || err == nil || !strings.Contains(err.Error(), "unknown") || !strings.Contains(err.Error(), "snapshot's path") || strings.Contains(err.Error(), "token") {
		t.Errorf("snapshot unanswered: ok %v, %v; want its outcome said unknown, and the snapshot's path to look at", ok, err)
	}
}

// TestSnapshotThroughServerNoRoom: a snapshot through a running server
// whose copy finds no room (here a file size limit) is ErrDiskFull, as
// one without a server is (so logbook snapshot says "--out OUT: the disk
// is full ... nothing was written"), not the server's text naming the
// copy's temporary file ("logbook server: the disk is full: snapshot:
// init copy: file resize error: truncate DIR/..copy.db.tmp-…").
func TestSnapshotThroughServerNoRoom(t *testing.T) {
	held, db := openStore(t, boltstore.Options{Hold: true})
	socket := filepath.Join(t.TempDir(), "admin.sock")
	_, stop := startRun(t, held, Options{AdminSocket: socket})
	defer stop()
	out := filepath.Join(t.TempDir(), "copy.db")
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &was); err != nil {
		t.Fatal(err)
	}
	limit := was
	limit.Cur = 16 << 10 // a new bbolt file's four pages, no more
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Skipf("cannot limit file sizes: %v", err)
	}
	_, ok, err := SnapshotThroughServer(db, socket, out)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &was); err != nil {
		t.Fatal(err)
	}
	if !ok || !errors.Is(err, boltstore.ErrDiskFull) {
		t.Errorf("a snapshot through the server with no room: %v %v, want ErrDiskFull", ok, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

// listenUnixAt listens on a Unix socket at path, however long the test's
// temporary directory makes it: a path past the 108 bytes of sun_path
// (TMPDIR a long directory) is named through its folder's descriptor, as
// the server's own sockets are (sockName). Unlinking on Close is off: the
// name it was bound as may be the descriptor's.
func listenUnixAt(t *testing.T, path string) *net.UnixListener {
	t.Helper()
	name, done, err := sockName(path)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	ln, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	return ul
}

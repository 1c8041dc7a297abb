package server

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// TestTools: a skills folder that is not there is an error naming skills;
// a folder of skills gives the tools.
func TestTools(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{})
	opts := commands.Options{Logger: slog.New(slog.DiscardHandler)}
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, []byte("x"), 0o600)
	if _, err := Tools(l, notDir, "1.2.3", opts); err == nil {
		t.Error("Tools with a file for a skills folder")
	}
	if tools, err := Tools(l, t.TempDir(), "1.2.3", opts); err != nil || tools == nil {
		t.Errorf("Tools: %v", err)
	}
}

// TestRebuild: the projections are refolded to the head, to the same
// state, and the report counts the events.
func TestRebuild(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{})
	for _, agent := range []string{"a", "b", "c"} {
		if _, _, err := IssueToken(l, Issue{Agent: agent, Issuer: "op"}); err != nil {
			t.Fatal(err)
		}
	}
	fingerprint := func() (fp uint64) {
		l.View(func(tx *boltstore.Tx) (err error) { fp, err = projections.Fingerprint(tx); return err })
		return fp
	}
	before := fingerprint()
	var reported uint64
	res, err := Rebuild(l, projections.RebuildOptions{Progress: func(done, total uint64) { reported = total }})
	if err != nil || res.Events != 3 || res.Version == 0 || res.MS < 0 || res.FreeMS < 0 {
		t.Fatalf("Rebuild: %+v, %v", res, err)
	}
	if reported != 3 {
		t.Errorf("progress reported a total of %d events, want 3", reported)
	}
	if after := fingerprint(); after != before {
		t.Errorf("the rebuilt projections differ: fingerprint %x, was %x", after, before)
	}
}

// TestTokensDefaultIssuer: a token issued or revoked through Tokens with
// no issuer is recorded as the OS user's doing (or "unknown"), never
// refused for want of one.
func TestTokensDefaultIssuer(t *testing.T) {
	l, db := openStore(t, boltstore.Options{})
	l.Close()
	m, err := OpenTokens(db, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, rec, err := m.Issue(Issue{Agent: "a"})
	if err != nil || rec.Issuer == "" || rec.Issuer != issuer("") {
		t.Fatalf("Issue with no issuer: %+v, %v", rec, err)
	}
	if _, err := m.Revoke(Revoke{Agent: "a"}); err != nil {
		t.Errorf("Revoke with no issuer: %v", err)
	}
}

// TestServe: a server that cannot listen creates no ledger file; one that
// can creates it, answers /healthz, and drains when ctx ends.
func TestServe(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	db := filepath.Join(t.TempDir(), "l.db")
	led := Ledger{DB: db, Skills: t.TempDir(), Version: "1.2.3"}
	if err := Serve(context.Background(), led, Options{Listen: taken.Addr().String(), Logger: log}); err == nil {
		t.Fatal("Serve on a taken address")
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a server that did not start left a ledger file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, led, Options{Listen: "127.0.0.1:0", Logger: log, Ready: func(a net.Addr) { ready <- a }})
	}()
	addr := <-ready
	resp, err := http.Get("http://" + addr.String() + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after ctx ended: %v", err)
	}
	l, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the ledger after Serve: %v", err)
	}
	l.Close()
}

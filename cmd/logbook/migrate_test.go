package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/ledger/jetstream"
	"github.com/nats-io/nats-server/v2/server"
)

// natsServer starts a standalone JetStream server in this process on a
// loopback port, syncing every write, with an APP and a system account.
func natsServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	err := os.WriteFile(conf, fmt.Appendf(nil, `listen: 127.0.0.1:-1
jetstream { store_dir: %q, sync_interval: always }
accounts {
  SYS: { users: [{ user: sys, password: sys }] }
  APP: { jetstream: enabled, users: [{ user: app, password: app },
    { user: noappend, password: noappend, permissions: { publish: { deny: "logbook.*.events" } } }] }
}
system_account: SYS
`, filepath.Join(dir, "js")), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	// A bound for a wedged server, not a measure: under the whole suite's
	// -race load on two cores a NATS server took over 10 s to listen.
	if !s.ReadyForConnections(time.Minute) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

// TestMigrateCopiesIntoAStream: migrate copies a file ledger into a new
// stream (more events than one append carries), reports the file's head
// and root as the stream's, copies nothing more run again, and refuses a
// stream holding another file's events or not replicated.
func TestMigrateCopiesIntoAStream(t *testing.T) {
	url := natsServer(t)
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	t.Setenv("LOGBOOK_NATS_SYS_PASSWORD", "sys")
	db := filepath.Join(t.TempDir(), "ledger.db")
	w := newLedger(t, db, "migrator")
	for i := range 200 {
		w.call("task_create", map[string]any{"title": "task " + strconv.Itoa(i), "project": "core"})
	}
	w.l.Close()
	var size uint64
	var root string
	l, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	l.View(func(tx *boltstore.Tx) error {
		size = tx.Head().Seq
		h, err := tx.Root(size)
		root = h.String()
		return err
	})
	l.Close()
	if size <= 256 {
		t.Fatalf("the ledger holds %d events; the test needs more than one append's 256", size)
	}
	args := []string{"migrate", "--from", db, "--to", url, "--stream", "migrated", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app"}
	r := run(t, append(args, "--nats-sys-user", "sys", "--json")...)
	wantExit(t, r, 0, "migrate")
	var out jetstream.Migrated
	decodeJSON(t, r, &out)
	if out.Size != size || out.Root.String() != root {
		t.Errorf("migrate reports %d events, root %v; the file holds %d, root %s", out.Size, out.Root, size, root)
	}
	r = run(t, args...)
	wantExit(t, r, 0, "migrate again into the stream holding the file")
	if !strings.Contains(r.stdout, fmt.Sprintf("migrated %d events into stream migrated (%d of them there before", size, size)) {
		t.Errorf("migrate again does not say the stream held the file: %s", r)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	w = newLedger(t, other, "migrator")
	for i := range 300 {
		w.call("task_create", map[string]any{"title": "other " + strconv.Itoa(i), "project": "core"})
	}
	w.l.Close()
	r = run(t, append([]string{"migrate", "--from", other}, args[3:]...)...)
	wantExit(t, r, 2, "migrate into a stream holding another file's events")
	if !strings.Contains(r.stderr, "already holds") {
		t.Errorf("refusal does not say why: %s", r)
	}
	r = run(t, "migrate", "--from", db, "--to", url, "--stream", "one", "--replicas", "1", "--nats-user", "app")
	wantExit(t, r, 2, "migrate into an unreplicated stream")
}

// TestMigrateRefusesDamagedFile: a file whose event 5 was edited (its
// link from event 6 broken) is refused (exit 1, naming the event) before
// anything is copied: the stream, which denies deletes, stays empty, and
// the same file made whole again then migrates into it. (Migrate copied
// every event, found the broken link only reading the stream back, and
// left the damage in a stream no one could take it out of.)
func TestMigrateRefusesDamagedFile(t *testing.T) {
	url := natsServer(t)
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	db := filepath.Join(t.TempDir(), "ledger.db")
	w := newLedger(t, db, "migrator")
	for i := range 10 {
		w.call("task_create", map[string]any{"title": "task " + strconv.Itoa(i), "project": "core"})
	}
	w.l.Close()
	good, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	flipEventByte(t, db, 5)
	args := []string{"migrate", "--from", db, "--to", url, "--stream", "migrated", "--replicas", "1", "--allow-unreplicated", "--nats-user", "app"}
	r := run(t, args...)
	wantExit(t, r, 1, "migrate a damaged file")
	if !strings.Contains(r.stderr, "seq 5") {
		t.Errorf("refusal does not name event 5: %s", r)
	}
	if err := os.WriteFile(db, good, 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, args...)
	wantExit(t, r, 0, "migrate the file made whole into the stream the damaged one was refused for")
}

// TestNATSURLCredentialsRefused: a --store or --to URL carrying a password
// or token is refused (exit 2) without the secret in the error: it went to
// the NATS client as given, and its failure to connect printed the URL,
// password and all (a server that did connect logged it too).
func TestNATSURLCredentialsRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	for _, args := range [][]string{
		{"server", "--db", db, "--store", "nats://app:s3cret@127.0.0.1:1", "--stream", "s", "--listen", "127.0.0.1:0"},
		{"migrate", "--from", db, "--to", "nats://127.0.0.1:1,tls://s3cret@127.0.0.1:2", "--stream", "s"},
	} {
		r := run(t, args...)
		wantExit(t, r, 2, args[0]+" with credentials in a URL")
		if strings.Contains(r.stderr+r.stdout, "s3cret") || !strings.Contains(r.stderr, "--nats-user") {
			t.Errorf("%s: the refusal repeats the secret or does not say what to give: %s", args[0], r)
		}
	}
}

// TestMigrateUsage: a --to that is not NATS servers is named as the fault
// (exit 2), not answered that --from and --to are required when both were
// given.
func TestMigrateUsage(t *testing.T) {
	db := healthyLedger(t, 0)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--from", db, "--to", "http://host:4222", "--stream", "s"}, "--to: NATS server URL 1: want nats://"},
		{[]string{"migrate", "--to", "nats://host:4222", "--stream", "s"}, "--from FILE and --to nats://HOST:PORT are required"},
		{[]string{"migrate", "--from", db, "--stream", "s"}, "--from FILE and --to nats://HOST:PORT are required"},
	} {
		r := run(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("logbook %q: %s, want exit 2 saying %q", c.args, r, c.want)
		}
	}
}

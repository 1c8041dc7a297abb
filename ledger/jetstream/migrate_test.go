package jetstream

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestMigrate: a file ledger of more events than one append carries is
// copied into a new stream reached through Connect, read back with the
// file's head and root. A file written while it is copied is reported
// (ErrFileWritten), and migrating it again copies the rest, as it does
// after an interrupted migrate, for a stream holding the file's first
// events; a stream holding another file's events is refused (ErrNotEmpty).
// (A stream that was not empty was refused whatever it held, so a migrate
// interrupted midway could never be finished; a file written during the
// copy was reported migrated, "identical to the file's", with its last
// events in the file only.)
func TestMigrate(t *testing.T) {
	c := sharedCluster(t)
	src := migrateSource(t, migrateBatch+44)
	d := Dial{URLs: c.url(0), Name: "migrate test", User: "app", Password: "app", SysUser: "sys", SysPassword: "sys"}
	var rep *Replica
	var closeRep func()
	eventually(t, 30*time.Second, func() (err error) {
		rep, closeRep, err = Connect(context.Background(), d, Options{Stream: "migrated", Logf: t.Logf})
		return err
	})
	defer closeRep()
	check := func(res Migrated, err error, held uint64) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		head, root := headRoot(t, src)
		if res != (Migrated{Stream: "migrated", Size: head.Seq, Head: head.Hash, Root: root, Held: held}) {
			t.Errorf("migrated %+v, want %d events (%d held before), head %v, root %v", res, head.Seq, held, head.Hash, root)
		}
	}
	var progress uint64
	res, err := Migrate(context.Background(), src, rep, func(done, total uint64) { progress = done })
	check(res, err, 0)
	if progress != migrateBatch+44 {
		t.Errorf("progress %d, want %d", progress, migrateBatch+44)
	}
	res, err = Migrate(context.Background(), src, rep, nil)
	check(res, err, migrateBatch+44) // nothing left to copy

	// An empty file: its root is the empty tree's, as verify and root
	// say (migrate said 32 zero bytes).
	erep, closeE, err := Connect(context.Background(), d, Options{Stream: "migrated-empty", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer closeE()
	if res, err := Migrate(context.Background(), migrateSource(t, 0), erep, nil); err != nil || res.Size != 0 || res.Root != ledger.EmptyRoot {
		t.Errorf("migrate an empty file: %+v, %v; want size 0, root %v", res, err, ledger.EmptyRoot)
	}

	// Written while it is copied (after the first batch).
	appendTo(t, src, 2*migrateBatch)
	written := false
	_, err = Migrate(context.Background(), src, rep, func(done, total uint64) {
		if !written {
			written = true
			appendTo(t, src, 3)
		}
	})
	if !errors.Is(err, ErrFileWritten) {
		t.Fatalf("migrate of a file written meanwhile: %v, want ErrFileWritten", err)
	}
	res, err = Migrate(context.Background(), src, rep, nil)
	check(res, err, 3*migrateBatch+44)

	if _, err := Migrate(context.Background(), migrateSource(t, 3*migrateBatch+50), rep, nil); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("migrate into a stream holding another file's events: %v, want ErrNotEmpty", err)
	}
	if _, err := Migrate(context.Background(), migrateSource(t, 5), rep, nil); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("migrate into a stream holding more events than the file: %v, want ErrNotEmpty", err)
	}

	// A stream holding what is no ledger's events (a message published to
	// its subject by anyone) is refused as holding something else too, not
	// as damage to the stream (an integrity failure, exit 1).
	frep, closeF, err := Connect(context.Background(), d, Options{Stream: "foreign", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer closeF()
	nc := c.connect(t, 0, "app")
	if err := nc.Publish(Subject("foreign"), []byte("hello foreign")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		info, err := frep.Info(context.Background())
		if err == nil && info.State.LastSeq != 1 {
			err = fmt.Errorf("the stream holds %d messages", info.State.LastSeq)
		}
		return err
	})
	if _, err := Migrate(context.Background(), migrateSource(t, 5), frep, nil); !errors.Is(err, ErrNotEmpty) || errors.As(err, new(*ledger.IntegrityError)) {
		t.Errorf("migrate into a stream holding a foreign message: %v, want ErrNotEmpty", err)
	}
}

// migrateSource is a new file ledger of n events.
func migrateSource(t *testing.T, n int) *boltstore.Store {
	t.Helper()
	src, err := boltstore.Open(filepath.Join(t.TempDir(), "file.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	appendTo(t, src, n)
	return src
}

// appendTo appends n events to a file ledger.
func appendTo(t *testing.T, src *boltstore.Store, n int) {
	t.Helper()
	err := src.Update(func(tx *boltstore.Tx) error {
		for range n {
			if _, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "a", Payload: []byte{0x80}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// headRoot is a file ledger's head and root.
func headRoot(t *testing.T, src *boltstore.Store) (head ledger.Head, root ledger.Hash) {
	t.Helper()
	err := src.View(func(tx *boltstore.Tx) (err error) {
		head = tx.Head()
		root, err = tx.Root(head.Seq)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return head, root
}

package jetstream

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// TestMigrate: a file ledger of more events than one append carries is
// copied into a new stream reached through Connect, read back with the
// file's head and root, and a stream that is not empty is refused.
func TestMigrate(t *testing.T) {
	c := sharedCluster(t)
	src, err := boltstore.Open(filepath.Join(t.TempDir(), "file.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	const n = migrateBatch + 44
	err = src.Update(func(tx *boltstore.Tx) error {
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
	var head ledger.Head
	var root ledger.Hash
	src.View(func(tx *boltstore.Tx) error {
		head = tx.Head()
		root, err = tx.Root(head.Seq)
		return err
	})
	d := Dial{URLs: c.url(0), Name: "migrate test", User: "app", Password: "app", SysUser: "sys", SysPassword: "sys"}
	var rep *Replica
	var closeRep func()
	eventually(t, 30*time.Second, func() (err error) {
		rep, closeRep, err = Connect(context.Background(), d, Options{Stream: "migrated", Logf: t.Logf})
		return err
	})
	defer closeRep()
	var progress uint64
	res, err := Migrate(context.Background(), src, rep, func(done, total uint64) { progress = done })
	if err != nil {
		t.Fatal(err)
	}
	if res != (Migrated{Stream: "migrated", Size: n, Head: head.Hash, Root: root}) || progress != n {
		t.Errorf("migrated %+v (progress %d), want %d events, head %v, root %v", res, progress, n, head.Hash, root)
	}
	if _, err := Migrate(context.Background(), src, rep, nil); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("migrate into a stream that is not empty: %v, want ErrNotEmpty", err)
	}
}

package jetstream

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go/jetstream"
)

// TestSettingsEditedWhileRunning: stream settings edited under a running
// node to ones that can lose or rewrite events are caught by the next
// stream info it fetches (Follow's, every second on a server): its calls
// then fail with boltstore.ErrLogUnsafe, naming the setting, and commit
// nothing, until the settings are restored. Before, only the next node to
// open the stream saw them; running nodes went on appending. (The servers
// refuse to turn deny_delete or deny_purge off, and rollups on. A stream
// sealed, or its message size capped, was not seen as unsafe at all: every
// call, or every large one, was refused by the servers and answered "the
// ledger could not commit".)
func TestSettingsEditedWhileRunning(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	js, err := jetstream.New(c.connect(t, 1, "app"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, tc := range []struct {
		name       string
		edit, undo func(*jetstream.StreamConfig)
	}{
		{"max_msgs", func(c *jetstream.StreamConfig) { c.MaxMsgs = 1000 }, func(c *jetstream.StreamConfig) { c.MaxMsgs = -1 }},
		{"max_age", func(c *jetstream.StreamConfig) { c.MaxAge = 1 << 40 }, func(c *jetstream.StreamConfig) { c.MaxAge = 0 }},
		{"max_bytes", func(c *jetstream.StreamConfig) { c.MaxBytes = 1 << 30 }, func(c *jetstream.StreamConfig) { c.MaxBytes = -1 }},
		{"subjects", func(c *jetstream.StreamConfig) { c.Subjects = append(c.Subjects, "other.>") }, func(c *jetstream.StreamConfig) { c.Subjects = c.Subjects[:1] }},
		// Interest retention removes at once the messages no consumer
		// wants: the edit itself loses the events, which no node can
		// undo (restored, its next catch-up reports them missing).
		{"retention", func(c *jetstream.StreamConfig) { c.Retention = jetstream.InterestPolicy }, nil},
		// An event larger than max_msg_size is refused, one call in some.
		{"max_msg_size", func(c *jetstream.StreamConfig) { c.MaxMsgSize = 1 << 10 }, func(c *jetstream.StreamConfig) { c.MaxMsgSize = -1 }},
		// A sealed stream takes no more appends, and is never unsealed.
		{"sealed", func(c *jetstream.StreamConfig) { c.Sealed = true }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := fmt.Sprintf("edited%d", i)
			nc := c.connect(t, 0, "app")
			var logged []string
			opts := Options{Stream: stream, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
			n := openNode(t, filepath.Join(dir, stream+".db"), nc, openReplica(t, nc, opts, hooks{}))
			logged = nil // what Open warned of
			update := func(edit func(*jetstream.StreamConfig)) {
				t.Helper()
				s, err := js.Stream(ctx, stream)
				if err != nil {
					t.Fatal(err)
				}
				cfg := s.CachedInfo().Config
				edit(&cfg)
				if _, err := js.UpdateStream(ctx, cfg); err != nil {
					t.Fatal(err)
				}
				// As Follow does, every second on a server.
				if _, err := n.rep.Info(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.appendEvents("n", "before"); err != nil {
				t.Fatalf("append before the edit: %v", err)
			}
			update(tc.edit)
			if err := n.appendEvents("n", "edited"); !errors.Is(err, boltstore.ErrLogUnsafe) || !errors.Is(err, ErrStreamConfig) || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("a call on the edited stream: %v, want ErrLogUnsafe naming %q", err, tc.name)
			}
			n.store.View(func(tx *boltstore.Tx) error {
				if tx.Head().Seq != 1 {
					t.Errorf("the node holds %d events, want the 1 from before the edit", tx.Head().Seq)
				}
				return nil
			})
			if len(logged) != 1 || !strings.Contains(logged[0], tc.name) {
				t.Errorf("logged %q, want the change once", logged)
			}
			if tc.undo == nil {
				return
			}
			update(tc.undo)
			if err := n.appendEvents("n", "after"); err != nil {
				t.Errorf("a call once the settings were restored: %v", err)
			}
			if len(logged) != 2 {
				t.Errorf("logged %q, want the change and the restoration", logged)
			}
		})
	}
}

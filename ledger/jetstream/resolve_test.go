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

// TestSyncCheck: with a system-account connection, Open refuses servers
// that do not sync every write, and accepts ones that do; a connection
// that is not the system account's is refused as such.
func TestSyncCheck(t *testing.T) {
	lazy := startCluster(t, 1, "2m")
	nc, sys := lazy.connect(t, 0, "app"), lazy.connect(t, 0, "sys")
	opts := Options{Stream: "lazy", Replicas: 1, AllowUnreplicated: true, SystemConn: sys, Timeout: time.Second, Logf: t.Logf}
	if _, err := Open(context.Background(), nc, opts); !errors.Is(err, ErrServerSync) {
		t.Errorf("open on a server syncing every 2m: %v, want ErrServerSync", err)
	}
	// Without a system connection it cannot tell: it opens, and warns.
	var warned string
	opts.SystemConn, opts.Logf = nil, func(f string, a ...any) { warned = fmt.Sprintf(f, a...) }
	if _, err := Open(context.Background(), nc, opts); err != nil || warned == "" {
		t.Errorf("open without a system connection: %v, warned %q", err, warned)
	}
	c := sharedCluster(t)
	openReplica(t, c.connect(t, 1, "app"), Options{Stream: "synced", SystemConn: c.connect(t, 2, "sys")}, hooks{})
	// A user of another account as the system user: no server answers it.
	// (It was refused as "server does not sync always", of servers that
	// do.)
	opts = Options{Stream: "synced", SystemConn: c.connect(t, 2, "app"), Logf: t.Logf}
	if _, err := Open(context.Background(), c.connect(t, 1, "app"), opts); !errors.Is(err, ErrNotSystemUser) || errors.Is(err, ErrServerSync) {
		t.Errorf("open with an app user as the system user: %v, want ErrNotSystemUser", err)
	}
}

// TestAmbiguousAppendResolved: an append whose batch was sent but whose
// answer was lost, or that was not sent at all, is resolved by reading the
// stream back (and resending under the same expected sequence): it lands
// exactly once and Update succeeds; another node's append in between is
// a head move, never a second copy.
func TestAmbiguousAppendResolved(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	var other *node
	interfered := false
	for i, tc := range []struct {
		name string
		lose func(attempt int) (unsent, unanswered bool)
		want string
	}{
		{"answer lost", func(attempt int) (bool, bool) { return false, attempt == 0 }, "[o1 a b c]"},
		{"not sent twice", func(attempt int) (bool, bool) { return attempt < 2, false }, "[o1 a b c]"},
		{"answers lost thrice", func(attempt int) (bool, bool) { return false, attempt < 3 }, "[o1 a b c]"},
		{"another appended meanwhile", func(attempt int) (bool, bool) {
			if interfered {
				return false, false
			}
			interfered = true
			if err := other.appendEvents("other", "o2"); err != nil {
				t.Error(err)
			}
			return true, false
		}, "[o1 o2 a b c]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := fmt.Sprintf("ambiguous%d", i)
			nc := c.connect(t, 0, "app")
			rep := openReplica(t, nc, Options{Stream: stream}, hooks{lose: tc.lose})
			n := openNode(t, filepath.Join(dir, stream+".db"), nc, rep)
			other = openNode(t, filepath.Join(dir, stream+"-other.db"), c.connect(t, 1, "app"),
				openReplica(t, c.connect(t, 1, "app"), Options{Stream: stream}, hooks{}))
			if err := other.appendEvents("other", "o1"); err != nil {
				t.Fatal(err)
			}
			if err := n.appendEvents("n", "a", "b"); err != nil {
				t.Fatalf("append with a lost outcome: %v", err)
			}
			if err := n.appendEvents("n", "c"); err != nil {
				t.Fatal(err)
			}
			events := streamEvents(t, rep)
			var got []string
			for _, e := range events {
				got = append(got, e.Subjects[0])
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("the stream holds %v, want %s", got, tc.want)
			}
		})
	}
	// An append read back under its own id but with other bytes is an
	// integrity error, never taken as landed nor sent again.
	tnc := c.connect(t, 1, "app")
	trep := openReplica(t, tnc, Options{Stream: "readback", ResolveWithin: 2 * time.Second}, hooks{
		lose:   func(attempt int) (bool, bool) { return false, attempt == 0 },
		tamper: func(seq uint64, data []byte) []byte { return rewrite(t, data) },
	})
	tn := openNode(t, filepath.Join(dir, "readback.db"), tnc, trep)
	var ie *ledger.IntegrityError
	if err := tn.appendEvents("n", "t"); !errors.As(err, &ie) || ie.Seq != 1 || errors.Is(err, boltstore.ErrAppendUnknown) {
		t.Errorf("append read back with other bytes: %v, want an integrity error at seq 1", err)
	}
	// An outcome that stays unknown fails the call, and says so.
	nc := c.connect(t, 2, "app")
	rep := openReplica(t, nc, Options{Stream: "unknown", ResolveWithin: 300 * time.Millisecond},
		hooks{lose: func(int) (bool, bool) { return true, false }})
	n := openNode(t, filepath.Join(dir, "unknown.db"), nc, rep)
	if err := n.appendEvents("n", "x"); !errors.Is(err, boltstore.ErrAppendUnknown) {
		t.Errorf("append never sent: %v, want boltstore.ErrAppendUnknown", err)
	}
	if events := streamEvents(t, rep); len(events) != 0 {
		t.Errorf("the stream holds %d events", len(events))
	}
}

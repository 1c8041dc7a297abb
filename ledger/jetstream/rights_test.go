package jetstream

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// TestOpenRefusesDeniedUser: a NATS user denied a subject a ledger needs
// (appending to the stream, reading it directly or from its leader, its
// stream info, the answers to its requests) is refused at Open with
// ErrDenied naming the subject, and the probe of the stream's subject
// stores nothing. (A user denied the stream's subject opened it, and every
// append waited out ResolveWithin before failing with ErrAppendUnknown,
// though nothing could land; one denied the stream info asked again for
// OpenWait and failed "context deadline exceeded"; one denied the reads
// opened, then failed every catch-up after ResolveWithin.)
func TestOpenRefusesDeniedUser(t *testing.T) {
	c := sharedCluster(t)
	opts := Options{Stream: "rights", OpenWait: 5 * time.Second}
	anc := c.connect(t, 0, "app")
	allowed := openReplica(t, anc, opts, hooks{})
	for _, tc := range []struct{ user, subject string }{
		{"noappend", Subject("rights")},
		{"nodirect", "$JS.API.DIRECT.GET.rights"},
		{"noleaderget", "$JS.API.STREAM.MSG.GET.rights"},
		{"noinfo", "$JS.API.STREAM.INFO.rights"},
		{"noanswers", "_INBOX."},
	} {
		nc := c.connect(t, 1, tc.user)
		r, err := open(context.Background(), nc, Options{Stream: "rights", OpenWait: 5 * time.Second, Logf: func(string, ...any) {}}, hooks{})
		if err == nil {
			r.Close()
		}
		if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tc.subject) || !strings.Contains(err.Error(), "allow its user") {
			t.Errorf("user %s: open: %v; want ErrDenied naming %s and what to allow", tc.user, err, tc.subject)
		}
	}
	info, err := allowed.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 || info.State.LastSeq != 0 {
		t.Fatalf("the stream holds %d messages (last seq %d) after the opens' probes; want none", info.State.Msgs, info.State.LastSeq)
	}
	n := openNode(t, filepath.Join(t.TempDir(), "allowed.db"), anc, allowed)
	if seq, err := n.appendSeq("alice", "after the probes"); err != nil || seq != 1 {
		t.Fatalf("append by the allowed user: seq %d, %v; want 1", seq, err)
	}
}

// A user refused for want of a right makes no stream: a migrate (or a
// node's first start) refused left a new, empty stream behind, which the
// next migrate into that name then had to find empty.
func TestOpenDeniedMakesNoStream(t *testing.T) {
	c := sharedCluster(t)
	anc := c.connect(t, 0, "app")
	openReplica(t, anc, Options{Stream: "fresh_allowed", OpenWait: 5 * time.Second}, hooks{}) // JetStream ready
	js, err := jetstream.New(anc)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"noappend", "nodirect", "noleaderget", "noinfo", "noanswers"} {
		stream := "fresh_" + user
		nc := c.connect(t, 1, user)
		r, err := open(context.Background(), nc, Options{Stream: stream, OpenWait: 5 * time.Second, Logf: func(string, ...any) {}}, hooks{})
		if err == nil {
			r.Close()
			t.Fatalf("user %s: opened", user)
		}
		if !errors.Is(err, ErrDenied) {
			t.Errorf("user %s: %v, want ErrDenied", user, err)
		}
		if _, err := js.Stream(context.Background(), stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("user %s: stream %s after the refusal: %v, want none", user, stream, err)
		}
	}
}

// TestRightsRevokedWhileRunning: a user whose right to append, or to read
// the stream, is taken away while its node runs (the servers' configuration
// reloaded) gets ErrDenied at its next call, naming the subject, saying that
// nothing was appended — not, after ResolveWithin, that the append's
// outcome is unknown (the servers dropped it: nothing could land), nor that
// the servers did not answer. Given back, the rights serve the next call.
func TestRightsRevokedWhileRunning(t *testing.T) {
	for _, tc := range []struct {
		name, subject string
		deny          server.SubjectPermission
	}{
		{"append", Subject("revoked"), server.SubjectPermission{Deny: []string{"logbook.*.events"}}},
		{"read", "$JS.API.DIRECT.GET.revoked", server.SubjectPermission{Deny: []string{"$JS.API.DIRECT.GET.>"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, 1, "always")
			nc := c.connect(t, 0, "app")
			// A short Timeout and ResolveWithin: what is checked is the
			// error, not how long it took (the old one came after both).
			opts := Options{Stream: "revoked", Replicas: 1, AllowUnreplicated: true, Timeout: 2 * time.Second, ResolveWithin: 4 * time.Second}
			rep := openReplica(t, nc, opts, hooks{})
			n := openNode(t, filepath.Join(t.TempDir(), "node.db"), nc, rep)
			if seq, err := n.appendSeq("alice", "before"); err != nil || seq != 1 {
				t.Fatalf("append before the revocation: seq %d, %v", seq, err)
			}
			c.setPermissions(t, "app", &server.Permissions{Publish: &tc.deny})
			// A writer that appended last reads the stream again before
			// its next append once headCheckEvery has passed.
			time.Sleep(2 * headCheckEvery)
			_, err := n.appendSeq("alice", "revoked")
			if !errors.Is(err, ErrDenied) || errors.Is(err, boltstore.ErrAppendUnknown) || errors.Is(err, boltstore.ErrLogUnreachable) ||
				!strings.Contains(err.Error(), tc.subject) {
				t.Fatalf("append with the %s right revoked: %v; want ErrDenied naming %s, and no other verdict", tc.name, err, tc.subject)
			}
			c.setPermissions(t, "app", nil)
			if seq, err := n.appendSeq("alice", "after"); err != nil || seq != 2 {
				t.Fatalf("append with the right given back: seq %d, %v; want 2 (nothing of the refused one landed)", seq, err)
			}
		})
	}
}

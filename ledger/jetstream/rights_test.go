package jetstream

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
